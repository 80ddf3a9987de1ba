"""The OpenAI chat doors: ``POST /v1/chat/completions`` and ``GET /v1/models``.

- short-circuit: the canned reply (streamed or not, as asked), zero usage, and
  nothing sent upstream; shaped for the request (``openai_shapes.answer``): a
  refusal for structured output, ``n`` choices, and a text answer even when a
  tool was forced;
- clamp: forwarded with the clamped budget (under the name(s) the operator's
  ``CURFEW_UPSTREAM_BUDGET_KEY`` says its upstream reads) and the persona;
- pass (on duty, exempt, dry run): forwarded byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_client.openai_shapes import apply_verdict, short_circuit_body
from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from curfew_core.engine import Verdict
from curfew_core.proxy import calls, upstream, views


def _clamped(body: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    # Read per request: the operator's setting (or a test's override) as it is now.
    return apply_verdict(body, verdict, budget_key=settings.CURFEW_UPSTREAM_BUDGET_KEY)


DOOR = calls.ModelDoor(
    name="chat",
    what="a chat completions JSON object",
    path=upstream.CHAT_COMPLETIONS,
    short_circuit=short_circuit_body,
    apply=_clamped,
)


@csrf_exempt
@views.labelled_always
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return views._not_allowed("POST")
    call = await calls.read_call(request, DOOR.what)
    if not isinstance(call, calls.Call):
        return call
    return await calls.act(call, DOOR)


@csrf_exempt
@views.labelled_always
async def models(request: HttpRequest, model: str | None = None) -> HttpResponseBase:
    """``GET /v1/models[/<id>]``, forwarded: listing models is not a model call."""
    if request.method != "GET":
        return views._not_allowed("GET")
    judged = await calls.read_caller(request)
    if not isinstance(judged, views.Judged):
        return judged
    try:
        # The id is one opaque segment: nothing in it may move the request
        # elsewhere on the upstream (where the operator's key would go with it).
        path = upstream.MODELS if model is None else upstream.model_path(model)
    except upstream.UnsafePath as exc:
        return calls.refused(
            calls.OPENAI, judged.verdict, 400, exc, code="invalid_model", param="model"
        )
    return calls.passed(await views._forward(judged.token_id, "GET", path), judged.verdict)
