"""The API's hot routes, served by the edge (``edge.doors``): a gateway asks
``POST /api/v1/verdict`` before every model call it has not cached, and a
status display polls ``GET /api/v1/state``.

The edge has checked the method and the token and read the body; the caller's
rows are in hand (warm from the cache, or read once in a thread), so a
verdict here is the body's check, the engine and the answer's bytes, on the
event loop. An ``ApiError`` (400, 422) is answered in the API's shape.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from django.http import HttpResponse
from django.utils import timezone

from curfew_core.api.errors import ApiError, json_object_from
from curfew_core.api.views import checked_verdict_request, verdict_body
from curfew_core.edge import own_name
from curfew_core.edge.request import EdgeRequest
from curfew_core.edge.send import Answer
from curfew_core.edge.threads import run_sync
from curfew_core.schema.verdict_request import MAX_USERNAME, VerdictRequest
from curfew_core.selectors.verdicts import bundle_state_json
from curfew_core.store.memos import LRU

JSON = "application/json"


#: Verdict requests by their body, parsed: a gateway asks with the same few
#: bodies again and again (parsing and checking one was a tenth of a warm
#: verdict). Only small bodies (a verdict request is a few dozen bytes), at
#: most ``_ASKED_KEPT``, bounded, least recently used (issue 40); a refused
#: body is parsed, and refused, every time. A ``VerdictRequest`` is frozen,
#: its parse depends on the bytes alone. Read and written on the event loop
#: only. Not ``LOCAL_LAYER_SIZE``: a key is a body of up to a kilobyte, so
#: 50,000 of them could hold 50 MB; a team key's bodies name each member, and
#: a team of thousands fits in this many.
_ASKED_BYTES = 1024
_ASKED_KEPT = 16_384
_asked: LRU[bytes, VerdictRequest] = LRU(maxsize=_ASKED_KEPT)


def _asked_of(body: bytes) -> VerdictRequest:
    asked = _asked.get(body)
    if asked is None:
        asked = checked_verdict_request(json_object_from(body, allow_empty=True))
        if len(body) <= _ASKED_BYTES:
            _asked[body] = asked
    return asked


async def verdict(request: EdgeRequest) -> HttpResponse | Answer:
    caller = request.caller
    assert caller is not None, "a token route"
    try:
        asked = _asked_of(request.body)
    except ApiError as exc:
        return exc.response()
    if asked.user is not None and caller.identity.team_id is None:
        # Well-formed; only its own person, by a rule the schema cannot state.
        refusal = await _personal_user(asked.user, caller.user_id)
        if refusal is not None:
            return refusal
    body = verdict_body(caller.bundle, asked, now=timezone.now())
    return Answer(body, JSON)


async def state(request: EdgeRequest) -> HttpResponse | Answer:
    caller = request.the_caller()
    if caller.identity.team_id is None and request.query_string:
        refusal = await _personal_user_query(request.query_string, caller.user_id)
        if refusal is not None:
            return refusal
    return Answer(bundle_state_json(caller.bundle, now=timezone.now()), JSON)


async def _personal_user_query(query: bytes, user_id: int) -> HttpResponse | None:
    """A personal token's ``?user=``: a malformed one is a 400, then as
    ``_personal_user``; none: ``None``."""
    values = parse_qs(query.decode("latin-1"), keep_blank_values=True).get("user")
    if not values:
        return None
    name = values[0]
    if not 1 <= len(name) <= MAX_USERNAME:
        return ApiError(
            400,
            "invalid_request",
            f"user: must be a username of 1 to {MAX_USERNAME} characters",
            {"user": f"must be a username of 1 to {MAX_USERNAME} characters"},
        ).response()
    return await _personal_user(name, user_id)


async def _personal_user(name: str, user_id: int) -> HttpResponse | None:
    """A personal token's ``user`` (the verdict's field, the state's query),
    as its ``X-Curfew-User`` header is taken (``edge.own_name``): its own
    username is served as without it; any other name a 422 (only a team key
    asks for another person; the document allows any text here, so a name no
    account could have is that 422 too, not the header's 400)."""
    if await run_sync(own_name.check, name, user_id) is None:
        return None
    return _personal_names_a_user().response()


def _personal_names_a_user() -> ApiError:
    """A personal token's ``user`` (the verdict's field, the state's query)."""
    return ApiError(
        422,
        "unprocessable",
        "user: only a team key asks on behalf of a member; a personal token "
        "always asks for its own person (leave user out)",
        {"user": "only a team key may send it"},
    )
