"""Embeddings and the legacy completions door.

``POST /v1/embeddings`` has no budget, persona or canned answer: a vector made
up by the curfew would be silently wrong data in someone's index. So it is
forwarded untouched (the very bytes) whenever the verdict lets anything through
(on duty, exempt, dry run, winding), and refused off duty and at lights-out
with nothing sent upstream (see :func:`off_duty_refusal` for the shape).

``POST /v1/completions`` (the legacy text API) acts like the chat door: the
canned reply as a ``text_completion`` (streamed or not) off duty, ``max_tokens``
clamped while winding, the very bytes on duty.
"""

from __future__ import annotations

from datetime import datetime

from curfew_client import completions_shapes, openai_shapes
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

from curfew_core.edge.dialects import labelled, openai_error
from curfew_core.edge.request import EdgeRequest
from curfew_core.engine import Action, Verdict
from curfew_core.protocols import openai
from curfew_core.proxy import calls
from curfew_core.proxy.forward import forward


def retry_after_seconds(verdict: Verdict, now: datetime) -> int:
    """Whole seconds from the real ``now`` until the verdict may change, at least 1.

    ``valid_until`` is a real instant even under the time machine (the engine
    measures it against the real clock), so it is never counted from ``at``."""
    return openai_shapes.retry_after_seconds(verdict.valid_until, now)


def off_duty_refusal(verdict: Verdict, now: datetime) -> HttpResponse:
    """The embeddings answer off duty: HTTP 503 in OpenAI's error shape, with
    ``Retry-After`` and ``X-Should-Retry: false``. The body and headers come
    from ``openai_shapes.embeddings_refusal`` (why 503, why those headers), so
    the LiteLLM hook answers the very same."""
    body, headers = openai_shapes.embeddings_refusal(
        verdict.state.value, retry_after_seconds(verdict, now)
    )
    error = body["error"]
    response = openai_error(
        openai_shapes.EMBEDDINGS_REFUSAL_STATUS,
        error["message"],
        code=error["code"],
        type=error["type"],
    )
    for name, value in headers.items():
        response[name] = value
    return response


async def embeddings(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/embeddings``: forwarded as sent, or refused off duty."""
    call = calls.read_call(request, "an embeddings JSON object")
    if not isinstance(call, calls.Call):
        return call
    verdict = call.verdict
    if verdict.action is Action.SHORT_CIRCUIT:
        calls.recording(call, "embeddings")(0, 0)
        return labelled(off_duty_refusal(verdict, timezone.now()), verdict)
    # Winding too: an embedding has no reply budget, so there is nothing to clamp.
    entry = calls.recording(call, "embeddings", action=Action.PASS.value)
    forwarded = await forward(request, call.judged.token_id, "POST", openai.EMBEDDINGS, call.raw)
    return calls.passed(entry.after(forwarded), verdict)


COMPLETIONS = calls.ModelEndpoint(
    name="completions",
    what="a completions JSON object",
    path=openai.COMPLETIONS,
    shapes=completions_shapes,
)


async def completions(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/completions`` (legacy)."""
    return await calls.model_call(request, COMPLETIONS)
