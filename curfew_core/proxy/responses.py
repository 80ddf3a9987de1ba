"""The OpenAI Responses API doors.

- ``POST /v1/responses``: a model call, with the chat door's guarantees. Off
  duty the curfew answers itself (a completed ``response``, or its event
  stream, zero usage) and nothing goes upstream; winding clamps
  ``max_output_tokens`` and appends the persona to ``instructions``; on duty the
  very bytes go upstream.
- ``GET`` and ``DELETE /v1/responses/<id>``: forwarded, whatever the hour:
  reading or deleting a stored response is not a model call (like listing
  models). The id is one checked opaque segment (``upstream.response_path``),
  so it cannot move the request elsewhere on the upstream; the query string is
  not forwarded (the upstream path is fixed). The curfew's own canned answers
  are never stored (``store: false``), so their ids are the upstream's 404.

Not served (404 ``not_proxied``): ``/v1/responses/<id>/cancel``,
``/input_items``, ``/input_tokens``, ``/compact``.
"""

from __future__ import annotations

from curfew_client import responses_shapes
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from curfew_core.proxy import upstream, views
from curfew_core.proxy.calls import (
    OPENAI,
    Call,
    ModelDoor,
    act,
    passed,
    read_call,
    read_caller,
    refused,
)

DOOR = ModelDoor(
    name="responses",
    what="a Responses API JSON object",
    path=upstream.RESPONSES,
    short_circuit=responses_shapes.short_circuit_body,
    apply=responses_shapes.apply_verdict,
)


@csrf_exempt
@views.labelled_always
async def create_response(request: HttpRequest) -> HttpResponseBase:
    """``POST /v1/responses``."""
    if request.method != "POST":
        return views._not_allowed("POST")
    call = await read_call(request, DOOR.what)
    if not isinstance(call, Call):
        return call
    return await act(call, DOOR)


@csrf_exempt
@views.labelled_always
async def stored_response(request: HttpRequest, response_id: str) -> HttpResponseBase:
    """``GET`` / ``DELETE /v1/responses/<id>``, forwarded (not a model call)."""
    if request.method not in ("GET", "DELETE"):
        return views._not_allowed("GET, DELETE")
    judged = await read_caller(request)
    if not isinstance(judged, views.Judged):
        return judged
    try:
        path = upstream.response_path(response_id)
    except upstream.UnsafePath as exc:
        return refused(
            OPENAI, judged.verdict, 400, exc, code="invalid_response_id", param="response_id"
        )
    return passed(await views._forward(judged.token_id, request.method, path), judged.verdict)
