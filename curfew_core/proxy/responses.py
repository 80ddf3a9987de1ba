"""The OpenAI Responses API doors.

- ``POST /v1/responses``: a model call, with the chat door's guarantees. Off
  duty the curfew answers itself (a completed ``response``, or its event
  stream, zero usage) and nothing goes upstream; winding clamps
  ``max_output_tokens`` and appends the persona to ``instructions``; on duty the
  very bytes go upstream.
- ``GET`` and ``DELETE /v1/responses/<id>``: forwarded, whatever the hour:
  reading or deleting a stored response is not a model call (like listing
  models). The id is one checked opaque segment (``upstream.response_path``),
  so it cannot move the request elsewhere on the upstream; the query string
  goes along, as a query only (``passing.query``). The curfew's own canned answers
  are never stored (``store: false``), so their ids are the upstream's 404.

Not served (404 ``not_proxied``): ``/v1/responses/<id>/cancel``,
``/input_items``, ``/input_tokens``, ``/compact``.
"""

from __future__ import annotations

from curfew_client import responses_shapes
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.protocols import openai
from curfew_core.proxy import calls, upstream
from curfew_core.proxy.forward import forward

RESPONSES = calls.ModelEndpoint(
    name="responses",
    what="a Responses API JSON object",
    path=openai.RESPONSES,
    short_circuit=responses_shapes.short_circuit_body,
    apply=responses_shapes.apply_verdict,
)


async def create_response(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/responses``."""
    return await calls.model_call(request, RESPONSES)


async def stored_response(request: EdgeRequest) -> HttpResponseBase:
    """``GET`` / ``DELETE /v1/responses/<id>``, forwarded (not a model call)."""
    judged = calls.judged_caller(request)
    try:
        path = upstream.response_path(request.params["response_id"])
    except upstream.UnsafePath as exc:
        return calls.refused(
            request.door.dialect,
            judged.verdict,
            400,
            exc,
            code="invalid_response_id",
            param="response_id",
        )
    forwarded = await forward(request, judged.token_id, request.method, path)
    return calls.passed(forwarded, judged.verdict)
