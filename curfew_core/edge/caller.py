"""Who is calling a token door: the live token and its user's rows.

Every token door (every API route, the change stream, every proxy
door) asks the same before its handler runs: whose live token is this, is it
within its rate, and what are the user's schedule and overrides. When the
answers are in the cache and fresh, :func:`resolve` reads them with one cache
read (``async_cache.get_many``: one ``MGET`` on Redis, a dict lookup with the
local cache) and counts the rate with ``throttle.ahit_token_rate``: no thread,
no database. When they are not, it takes one hop to a pooled thread
(``edge.threads``) for the cold path: ``tokens.identify_with_bundle`` reads the
token, the user's rows and their team's in one query (issue 40), handed what
the warm read already found so nothing is read twice; a token that is not live
counts against the address (``throttle.note_token_failure``). Either way the
rate is counted exactly once per request: a personal token's here, a team
key's once the edge knows which member the call is for (``edge.team_caller``:
each member's rate their own, the key's for a call that names nobody), so one
member's burst is never the whole team's 429.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from curfew_core import throttle
from curfew_core.edge.threads import run_sync
from curfew_core.selectors import bundles, tokens
from curfew_core.selectors.bundles import UserBundle, cached_bundle, likely_team, rows_fresh
from curfew_core.selectors.tokens import Seen, TokenIdentity, TokenKind
from curfew_core.store import async_cache, cache_policy
from curfew_core.store.cache_policy import bundle_key, team_key, token_key
from curfew_core.store.memos import LRU


@dataclass(frozen=True, slots=True)
class Caller:
    """A live token's identity and its user's rows."""

    identity: TokenIdentity
    bundle: UserBundle
    #: A team key's call for the member it names (``edge.team_caller``): its
    #: rate and upstream slots are that member's own (``share``).
    for_member: bool = False

    @property
    def token_id(self) -> int:
        return self.identity.token_id

    @property
    def user_id(self) -> int:
        return self.identity.user_id


#: A team key's kind: its rate is counted when the member is known, not here.
_TEAM = str(TokenKind.TEAM)


def share(caller: Caller) -> tuple[int, int | None]:
    """Whose share of the rate and the upstream slots a call uses: the token's
    (``token, None``), or, through a team key naming a member, that member's
    own (``key, member's user id``), as if they used a token of their own."""
    identity = caller.identity
    return identity.token_id, identity.user_id if caller.for_member else None


#: Where a request comes from, as the throttles count it, or how to work it
#: out (only the sync path needs it).
Address = str | Callable[[], str]


async def resolve(raw: str | None, address: Address, *, kind: str = "api") -> Caller | None:
    """The caller of a live ``kind`` token sent from ``address``, or ``None``
    (missing, unknown or revoked: counted against the address). Raises
    ``throttle.Throttled`` over a rate, ``DatabaseError``/``RedisError`` when
    storage is down."""
    caller = await _warm(raw, kind)
    if isinstance(caller, Caller):
        return caller
    return await run_sync(_cold, raw, address, kind, caller)


#: The caller last made from the cache for each token, with the cached values
#: it was made from (the token's check, the user's rows) and the kind asked:
#: while the cache hands back those very values (``async_cache`` keeps one
#: decoded object per cached entry until it is replaced), the caller is the
#: same, and only the freshness checks, the stamp and the rate are left to do.
#: Bounded, least recently used (read and written on the event loop only).
_CALLERS_KEPT = 50_000
_callers: LRU[str, tuple[Any, Any, str, Caller, Any]] = LRU(maxsize=_CALLERS_KEPT)


async def _warm(raw: str | None, kind: str) -> Caller | Seen | None:
    """From the cache alone (a user's stale rows aside, which take the
    thread); otherwise nothing was counted: take the cold path, with what was
    read here (``Seen``), or ``None`` if nothing was."""
    if raw is None or len(raw) > tokens.MAX_TOKEN_LENGTH:
        return None
    token_digest = tokens.digest(raw)
    user_id = tokens.likely_user(token_digest)
    keys = [token_key(token_digest)]
    if user_id is not None:
        keys.append(bundle_key(user_id))
        # A team member's rows come with their team's (issue 26), in the same read.
        team_id = likely_team(user_id)
        if team_id is not None:
            keys.append(team_key(team_id))
    # The process-local cache is read here and now (no coroutine to await);
    # Redis is awaited; any other backend is read on the sync path.
    found = async_cache.read_now(keys)
    if found is None:
        if not async_cache.supported():
            return None
        found = await async_cache.get_many(keys)
    checked = found[0]
    rows = found[1] if user_id is not None else None
    team_rows = found[2] if len(found) > 2 else None
    known = _callers.get(token_digest)
    if (
        known is not None
        and known[0] is checked
        and known[1] is rows
        and known[2] == kind
        and known[4] is team_rows
        # The very check and rows the caller was made from (so a live token's
        # check): only their age is left to look at, on one reading of the clock.
        and cache_policy.both_fresh(checked[3], rows)
        and (team_rows is None or rows_fresh(team_rows))
    ):
        caller = known[3]
        await _count(caller.identity)
        return caller
    if not tokens.usable(checked):
        return (
            checked,
            user_id,
            rows,
            team_rows if len(found) > 2 else bundles.UNREAD,
        )
    identity = tokens.cached_identity(token_digest, checked, kind=kind)
    if identity is None:
        return None  # unknown, revoked or another kind: counted on the sync path
    await _count(identity)
    bundle = None
    if user_id == identity.user_id:
        bundle = cached_bundle(identity.user_id, rows, team_rows)
        if bundle is None:
            # The rows this read found, absent or stale: one query for them
            # (and the team's), not another cache read first.
            team_found = team_rows if len(found) > 2 else bundles.UNREAD
            bundle = await run_sync(bundles.bundle_from, identity.user_id, rows, team_found)
            return Caller(identity, bundle)
    if bundle is None:
        return Caller(identity, await run_sync(bundles.bundle_for, identity.user_id))
    caller = Caller(identity, bundle)
    _callers[token_digest] = (checked, rows, kind, caller, team_rows)
    return caller


async def _count(identity: TokenIdentity) -> None:
    """The token's use: noted for its batched ``last_used_at``, and its rate
    (a team key's is counted once its member is named: ``edge.team_caller``)."""
    tokens.note_used(identity.token_id)
    if identity.kind == _TEAM:
        return
    refusal = await throttle.ahit_token_rate(identity.token_id)
    if refusal is not None:
        raise throttle.Throttled(refusal)


def _cold(raw: str | None, address: Address, kind: str, seen: Seen | None) -> Caller | None:
    """The cold path (on a thread): the token, its user's rows and their
    team's in one query, then one counter, as ``throttle.identify_throttled``
    counts (the token's rate when live, the address's failures when not; a
    missing token counts nothing; a team key's rate once its member is named,
    ``edge.team_caller``)."""
    if not raw:
        return None
    identity, bundle = tokens.identify_with_bundle(raw, kind=kind, seen=seen)
    if identity is None or bundle is None:
        where = address if isinstance(address, str) else address()
        refusal = throttle.note_token_failure(where)
        if refusal is not None:
            raise throttle.Throttled(refusal)
        return None
    if identity.kind == _TEAM:
        return Caller(identity, bundle)
    refusal = throttle.hit_token_rate(identity.token_id)
    if refusal is not None:
        raise throttle.Throttled(refusal)
    return Caller(identity, bundle)
