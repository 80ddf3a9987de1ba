"""The OpenAI chat routes: ``POST /v1/chat/completions`` and ``GET /v1/models``.

- short-circuit: the canned reply (streamed or not, as asked), zero usage, and
  nothing sent upstream; shaped for the request (``openai_shapes.answer``): a
  refusal for structured output or a forced tool, and ``n`` choices;
- clamp: forwarded with the clamped budget (under the name(s) the operator's
  ``CURFEW_UPSTREAM_BUDGET_KEY`` says its upstream reads) and the persona;
- pass (on duty, exempt, dry run): forwarded byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_client.openai_shapes import apply_verdict, short_circuit_body
from django.conf import settings
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.engine import Verdict
from curfew_core.protocols import openai
from curfew_core.proxy import calls, upstream
from curfew_core.proxy.forward import forward


class _ChatShapes:
    """``openai_shapes``, with the budget sent under the names the operator's
    upstream reads."""

    short_circuit_body = staticmethod(short_circuit_body)

    @staticmethod
    def apply_verdict(body: Mapping[str, Any], verdict: Verdict, /) -> dict[str, Any]:
        # Read per request: the operator's setting (or a test's override) as it is now.
        return apply_verdict(body, verdict, budget_key=settings.CURFEW_UPSTREAM_BUDGET_KEY)


CHAT = calls.ModelEndpoint(
    name="chat",
    what="a chat completions JSON object",
    path=openai.CHAT_COMPLETIONS,
    shapes=_ChatShapes(),
)


async def chat_completions(request: EdgeRequest) -> HttpResponseBase:
    return await calls.model_call(request, CHAT)


async def models(request: EdgeRequest) -> HttpResponseBase:
    """``GET /v1/models[/<id>]``, forwarded: listing models is not a model call."""
    judged = calls.judged_caller(request)
    model = request.params.get("model")
    try:
        # The id is one opaque segment: nothing in it may move the request
        # elsewhere on the upstream (where the operator's key would go with it).
        path = openai.MODELS if model is None else upstream.model_path(model)
    except upstream.UnsafePath as exc:
        return calls.refused(
            request.door.dialect, judged.verdict, 400, exc, code="invalid_model", param="model"
        )
    return calls.passed(await forward(request, judged.token_id, "GET", path), judged.verdict)
