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

Only the person who made a stored response may read, delete or continue it
(``previous_response_id``) through the proxy (``stored_owner``): a passed
create records its id as the caller's, and an id that is not the caller's is
answered as the upstream answers an id it does not know, nothing sent. A
``conversation`` (the Conversations API's id a create may name) is not
checked: the proxy does not serve that API, and such ids are not recorded.

Not served (404 ``not_proxied``): ``/v1/responses/<id>/cancel``,
``/input_items``, ``/input_tokens``, ``/compact``.
"""

from __future__ import annotations

from curfew_client import responses_shapes
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.protocols import openai
from curfew_core.proxy import calls, stored_owner, upstream
from curfew_core.proxy.forward import forward, own_credential

RESPONSES = calls.ModelEndpoint(
    name="responses",
    what="a Responses API JSON object",
    path=openai.RESPONSES,
    shapes=responses_shapes,
)


async def create_response(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/responses``: a model call. One that goes upstream with the
    operator's key continues only the caller's own response (its
    ``previous_response_id``: one read, for the calls that name one), and its
    answer's id is recorded as the caller's (after the upstream answered)."""
    call = calls.read_call(request, RESPONSES.what, RESPONSES.purpose_of)
    if not isinstance(call, calls.Call):
        return call
    if calls.short_circuits(call.verdict):
        # Answered here (``store: false``): nothing is read upstream or stored.
        return await calls.act(call, RESPONSES, request)
    checked = own_credential(request) is None
    previous = stored_owner.previous_of(call.body)
    if (
        checked
        and previous is not None
        and not await stored_owner.owns(call.judged.user_id, previous)
    ):
        return stored_owner.unknown_previous(call.verdict, previous)
    response = await calls.act(call, RESPONSES, request)
    if checked and stored_owner.stored(call.body):
        return stored_owner.recorded(response, call.judged.user_id)
    return response


async def stored_response(request: EdgeRequest) -> HttpResponseBase:
    """``GET`` / ``DELETE /v1/responses/<id>``, forwarded (not a model call)
    when the id is the caller's (``stored_owner``); a deletion the upstream
    answered 200 forgets its owner."""
    judged = calls.judged_caller(request)
    response_id = request.params["response_id"]
    try:
        path = upstream.response_path(response_id)
    except upstream.UnsafePath as exc:
        return calls.refused(
            request.door.dialect,
            judged.verdict,
            400,
            exc,
            code="invalid_response_id",
            param="response_id",
        )
    checked = own_credential(request) is None
    if checked and not await stored_owner.owns(judged.user_id, response_id):
        return stored_owner.unknown(judged.verdict, response_id)
    forwarded = await forward(request, judged.token_id, request.method, path)
    if checked and request.method == "DELETE" and forwarded.status_code == 200:
        await stored_owner.forget(response_id)
    return calls.passed(forwarded, judged.verdict)
