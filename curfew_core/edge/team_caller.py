"""A team key's caller: the member it asks for (issue 26).

A team key is one token for a whole team; each request names its member:
``X-Curfew-User`` (any door), else the ``user`` query parameter (``GET
/api/v1/state``), else the body where the door's dialect says
(``member_fields``, from its wire protocol in ``protocols``): the verdict
API's and OpenAI's ``user``, Anthropic's ``metadata.user_id``; Gemini's body
has no such field. The edge then serves the request as that
member's, through the same handlers, with the member's rows (warm: one
cache read, as a personal token's). A name that is not a member of the key's
team is refused in the door's own shape, a 404 that says nothing of who
else exists; a request naming nobody is a 400 saying how to name one, and so
is a ``metadata.user_id`` that is no username at all (Claude Code's own id);
one whose body is itself the reason (no JSON object, a member field holding
no text) is a 400 saying what is wrong with the body, in the words a personal
token's same body gets.

A route says how it takes a team key (``Route.team_key`` in the door
table): the change stream needs no member (without one it streams every
member's changes, ``realtime.changes``), the team API and the decisions read
the key as itself.

The rate (``CURFEW_TOKEN_RATE``) is counted here for a team key, once per
request, not when the token is checked (``edge.caller``): a call for a member
on (key, member), so each member has the rate their own token would have,
and one member's burst is their own 429, never the team's; a call that names
nobody, or a name refused (not a username, not in the team), on the key
itself, never on a member. The proxy's upstream slots follow the same rule
(``edge.caller.share``).
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import parse_qs

from django.http.response import HttpResponseBase

from curfew_core import throttle
from curfew_core.edge.caller import Caller, share
from curfew_core.edge.dialects import Dialect
from curfew_core.edge.request import EdgeRequest
from curfew_core.edge.threads import run_sync
from curfew_core.protocols.base import at
from curfew_core.schema import bodies
from curfew_core.schema.errors import not_a_member, not_a_username
from curfew_core.selectors import bundles
from curfew_core.selectors import teams as team_reads
from curfew_core.selectors.bundles import UserBundle, bundle_for, cached_bundle, rows_fresh
from curfew_core.selectors.tokens import TokenIdentity, TokenKind
from curfew_core.selectors.users import is_username
from curfew_core.store import async_cache, cache_policy, local_layer
from curfew_core.store.cache_policy import bundle_key, team_key
from curfew_core.store.memos import LRU

MEMBER_HEADER = b"x-curfew-user"
#: A body larger than this is not searched for a member (name one in the header).
MAX_SEARCHED_BODY = 1024 * 1024
_MAX_NAME = 150


def is_team(caller: Caller) -> bool:
    return caller.identity.kind == TokenKind.TEAM


#: Where a request named its member: the header, the query, or the body
#: (the place's name its protocol gives: ``user``, Anthropic's ``metadata``).
Source = str


def member_name(request: EdgeRequest) -> str | None:
    """The member a team key's request names, or ``None``."""
    return named_member(request)[0]


def named_member(request: EdgeRequest) -> tuple[str | None, Source | None]:
    """The member a team key's request names, and where (``None, None``: nobody)."""
    header = request.headers.raw(MEMBER_HEADER)
    if header is not None:
        text = header.decode("utf-8", "replace").strip()
        return (text, "header") if text else (None, None)
    if request.query_string:
        values = parse_qs(request.query_string.decode("latin-1")).get("user")
        if values and values[0]:
            return values[0], "query"
    fields = request.door.dialect.member_fields
    body = request.body
    if not fields or not body or len(body) > MAX_SEARCHED_BODY or body.lstrip()[:1] != b"{":
        return None, None
    if len(body) <= _NAMED_BYTES:
        known = _named.get((fields, body))
        if known is not None:
            return known
    found = _name_in(body, fields)
    if len(body) <= _NAMED_BYTES:
        _named[(fields, body)] = found
    return found


#: The member each small body names, and where, as ``api.hot`` keeps parsed
#: verdict requests: a gateway sends the same few bodies again and again.
#: Bounded, least recently used (issue 40), as many as ``api.hot._asked``
#: (the same bodies: a team key's name each member), not ``LOCAL_LAYER_SIZE``:
#: a key is a body of up to a kilobyte. Read and written on the event loop;
#: ``forget`` replaces it whole (one assignment, safe from any thread).
_NAMED_BYTES = 1024
_NAMED_KEPT = 16_384
_named: LRU[tuple[Any, bytes], tuple[str | None, Source | None]] = LRU(maxsize=_NAMED_KEPT)


def _name_in(
    body: bytes, fields: tuple[tuple[tuple[str, ...], str], ...]
) -> tuple[str | None, Source | None]:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    for path, source in fields:
        value = at(data, path)
        if isinstance(value, str) and value:
            return value, source
    return None, None


#: Why ``metadata.user_id`` named nobody (Claude Code sends its own id there).
NOT_A_NAME = (
    "metadata.user_id is not a member's username (Claude Code sends its own id there): "
    "with a team key, name the member in the X-Curfew-User header (Claude Code: "
    'ANTHROPIC_CUSTOM_HEADERS="X-Curfew-User: <username>")'
)


#: (team, username) to user id, as last read in this process: a user id never
#: changes hands, and whether the member is still in the team is read from
#: the member's own rows every time, so only the name's lookup is kept.
#: Bounded, least recently used (issue 40), as large as the process's layer.
#: Behind ``_ids_lock``: the layer's drops (``forget_names``) come from other
#: threads, and an ``LRU`` reorders itself on every read.
_KEPT = local_layer.LOCAL_LAYER_SIZE
_ids: LRU[tuple[int, str], tuple[int, float]] = LRU(maxsize=_KEPT)
_ids_lock = threading.Lock()


def _known_id(team_id: int, name: str) -> tuple[int | None, bool]:
    """The member's user id as last read here, and whether it is still fresh."""
    with _ids_lock:
        known = _ids.get((team_id, name))
    if known is None:
        return None, False
    return known[0], cache_policy.fresh(known[1])


def _remember(team_id: int, name: str, user_id: int) -> None:
    with _ids_lock:
        _ids[(team_id, name)] = (user_id, cache_policy.clock())


def _lookup(team_id: int, name: str) -> int | None:
    return team_reads.member_user_id(team_id=team_id, username=name)


#: The member's caller last made for each (key, member), with the cached rows
#: it was made from: while the cache hands back those very rows, it is the
#: same caller (as ``edge.caller`` keeps a personal token's). Bounded, least
#: recently used (issue 40), as large as the process's layer; read and
#: written on the event loop, replaced whole by ``forget``.
_members: LRU[tuple[int, int], tuple[Any, Any, Caller]] = LRU(maxsize=_KEPT)


async def _member(
    caller: Caller, user_id: int | None, team_id: int, name: str, fresh_id: bool
) -> Caller | None:
    """The member's caller (``None``: no such member). Warm: the rows read
    from the cache (the process's layer first). Cold (the rows absent or
    stale, or the name's id not looked up lately): one hop to a thread, which
    looks the name up (cached) and reads the member's rows and their team's
    in one query, handed what was read here."""
    rows: Any = bundles.UNREAD
    team: Any = bundles.UNREAD
    if user_id is None or not fresh_id:
        # The name's id as the cache holds it (the process's layer first, then
        # one read of Redis, kept in the layer): no thread, no database, when
        # some process looked the name up lately. A name the cache does not
        # hold, or holds as no member, is looked up on the thread as before.
        named = await _cached_id(team_id, name)
        if named is not None:
            user_id, fresh_id = named, True
    if user_id is not None:
        memo = (caller.identity.token_id, user_id)
        keys = [bundle_key(user_id), team_key(team_id)]
        # The process-local cache is read here and now, as ``edge.caller`` reads a
        # personal token's rows: no coroutine to await on the warm path.
        found = async_cache.read_now(keys)
        if found is None and async_cache.supported():
            found = await async_cache.get_many(keys)
        if found is not None:
            rows, team = found
            if fresh_id:
                known = _members.get(memo)
                if (
                    known is not None
                    and known[0] is rows
                    and known[1] is team
                    and rows_fresh(rows)
                    and rows_fresh(team)
                ):
                    return known[2]
                bundle = cached_bundle(user_id, rows, team)
                if bundle is not None:
                    member = _as_member(caller, user_id, bundle)
                    _members[memo] = (rows, team, member)
                    return member
    found_id, bundle = await run_sync(_cold_member, team_id, name, user_id, rows, team)
    if found_id is None or bundle is None:
        return None
    _remember(team_id, name, found_id)
    return _as_member(caller, found_id, bundle)


async def _cached_id(team_id: int, name: str) -> int | None:
    """The member's user id as the cache holds it (``selectors.teams.member_key``,
    which every process's change of a membership or a username drops
    everywhere); ``None`` if the cache holds no member by that name. Read from
    Redis, it is held in the layer and remembered here (``_remember``) unless
    a drop arrived meanwhile; "no such member" is neither (a member who joins
    is found at once, as ``selectors.teams`` keeps that answer only briefly).
    Read from the layer, it is not remembered: the layer's entry stands no
    longer than its own bound, and is read there again next time."""
    key = team_reads.member_key(team_id, name)
    found = async_cache.read_now([key])
    since = None
    if found is None:
        if not async_cache.supported():
            return None
        since = local_layer.epoch()
        found = await async_cache.get_many([key], keep=False)
    value = found[0]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None  # absent, or no such member: asked on the thread, as before
    if since is not None and local_layer.keep({key: value}, since):
        _remember(team_id, name, value)
        if local_layer.epoch() != since:
            # A drop came while it was remembered (its ``forget_names`` may
            # have run before): not kept, as the layer did not keep it.
            with _ids_lock:
                _ids.pop((team_id, name), None)
    return value


def _cold_member(
    team_id: int, name: str, guess: int | None, rows: Any, team: Any
) -> tuple[int | None, UserBundle | None]:
    user_id = _lookup(team_id, name)
    if user_id is None:
        return None, None
    if user_id != guess or rows is bundles.UNREAD:
        return user_id, bundle_for(user_id)
    return user_id, bundles.bundle_from(user_id, rows, team)


def _as_member(caller: Caller, user_id: int, bundle: UserBundle) -> Caller:
    identity = caller.identity
    return Caller(
        TokenIdentity(identity.token_id, user_id, identity.kind, identity.team_id),
        bundle,
        for_member=True,
    )


def forget_names(keys: list[str] | None) -> None:
    """Forget the names whose ``team-member:{team}:{name}`` entries were
    dropped (a member left, joined or was renamed), or every name and member
    when the drop names no keys (the layer's channel was lost). Only those
    names: a cold lookup's own write drops its key in every process, and
    forgetting every name then sent each one back to be read again."""
    if keys is None:
        forget()
        return
    for key in keys:
        _, team, name = key.split(":", 2)
        if not team.isdigit():
            forget()  # not a key this module wrote: forget all, never too little
            return
        with _ids_lock:
            _ids.pop((int(team), name), None)


def forget() -> None:
    """Forget the names and members seen (the layer's channel was lost; tests).
    The event loop's memos are replaced, not cleared: this may run on another
    thread, and an assignment is one step where a ``clear`` racing a write
    could leave an ``LRU`` inconsistent."""
    global _members, _named
    with _ids_lock:
        _ids.clear()
    _members = LRU(maxsize=_KEPT)
    _named = LRU(maxsize=_NAMED_KEPT)


async def member_caller(
    request: EdgeRequest, *, required: bool = True
) -> Caller | HttpResponseBase | None:
    """The member a team key's request asks for, as a caller; the door's
    refusal; or ``None`` when it names none and none is ``required``. The
    request is counted on that member's rate, or on the key's own when it
    names none or a name is refused (over it: the door's 429)."""
    found = await _named_caller(request, required=required)
    counted = found if isinstance(found, Caller) else request.the_caller()
    return await _rate_refusal(request, counted) or found


async def as_itself(request: EdgeRequest) -> HttpResponseBase | None:
    """A team key taken as itself (the team API, the decisions): counted on
    the key's own rate; the door's 429 over it, else ``None``."""
    return await _rate_refusal(request, request.the_caller())


async def _rate_refusal(request: EdgeRequest, caller: Caller) -> HttpResponseBase | None:
    """Count ``caller``'s request on its share of the rate (``share``: the
    member's own, or the key's), the share its upstream slots are held on
    too; the door's 429 over it, else ``None``."""
    refusal = await throttle.ahit_token_rate(*share(caller))
    return None if refusal is None else request.door.dialect.rate_limited(refusal)


async def _named_caller(
    request: EdgeRequest, *, required: bool
) -> Caller | HttpResponseBase | None:
    caller = request.the_caller()
    team_id = caller.identity.team_id
    dialect = request.door.dialect
    name, source = named_member(request)
    if name is None:
        if not required:
            return None
        problem = _body_problem(request)
        if problem is not None:
            message, param = problem
            return dialect.refusal(400, message, code="invalid_request", param=param)
        return dialect.refusal(400, _names_nobody(dialect), code="invalid_request")
    if not is_username(name):
        # One rule for member names at every door, before any lookup: a name no
        # account could have (NUL, a lone surrogate, a tool's own id) is this
        # call's 400 in the door's shape, never a storage outage (NUL reached
        # PostgreSQL: 503) or a bare 500 (issue 41, finding 4). Claude Code's
        # own id gets a 400 that says how to name the member (a 404 would read
        # as "no such model" and be retried).
        if source == "metadata":
            return dialect.refusal(
                400, NOT_A_NAME, code="invalid_request", param="metadata.user_id"
            )
        return dialect.refusal(400, not_a_username(name), code="invalid_request")
    if team_id is None or len(name) > _MAX_NAME:
        return _not_member(request, name)
    user_id, fresh_id = _known_id(team_id, name)
    member = await _member(caller, user_id, team_id, name, fresh_id)
    if member is None or member.bundle.team_id != team_id:
        return _not_member(request, name)
    return member


def _names_nobody(dialect: Dialect) -> str:
    """How to name a member, at a door whose dialect is ``dialect``: the
    header everywhere, and the body's fields where its protocol has some."""
    fields = " or ".join(".".join(path) for path, _ in dialect.member_fields)
    where = f" (or the body's {fields} field; state: ?user=)" if fields else ""
    return f"a team key asks for one member: name them in the X-Curfew-User header{where}"


def _body_problem(request: EdgeRequest) -> tuple[str, str | None] | None:
    """Why a request with a body named nobody, when the body is the reason:
    it is no JSON object (``schema.bodies``' words, as the door says them to
    a personal token: every door a team key names a member at takes one), or
    a member field holds something other than text; and the field to name
    (``None``: the body). ``None`` for a body that simply names no one."""
    body = request.body
    if not body.strip() or len(body) > MAX_SEARCHED_BODY:
        return None
    try:
        data = bodies.json_object(body)
    except bodies.BadBody as exc:
        return str(exc), None
    for path, _ in request.door.dialect.member_fields:
        value = at(data, path)
        if value is not None and not isinstance(value, str):
            field = ".".join(path)
            return f"{field} must be a member's username (text), not {type(value).__name__}", field
    return None


def _not_member(request: EdgeRequest, name: str) -> HttpResponseBase:
    return request.door.dialect.refusal(404, not_a_member(name), code="not_found")
