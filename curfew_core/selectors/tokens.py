"""Bearer-token lookup, cached so the hot path skips the database."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from cachetools import LRUCache
from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone

from curfew_core.models import ApiToken
from curfew_core.store import cache_policy
from curfew_core.store.cache_policy import lifetime, token_key, token_used_key
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.tokens")
#: Said once per outage, not per warm request (``store.outage_log``).
_unreadable = Notice(log)
_unstamped = Notice(log)

#: The kinds of token (``api``, ``embed``), for the doors, which do not import
#: the models.
TokenKind = ApiToken.Kind

#: No token is longer (ours are 43 characters); longer is never looked up.
MAX_TOKEN_LENGTH = 200
#: Unknown tokens are remembered briefly too, so garbage cannot hammer the database.
_MISSING = "missing"
_MISSING_SECONDS = 30
#: A found token's check is kept this long for a database outage; it is
#: re-checked once older than ``CURFEW_CACHE_FRESH_SECONDS`` (see
#: ``curfew_core.store.cache_policy``).
_FOUND_SECONDS = 3600
#: ``last_used_at`` is bookkeeping: stamped at most once a minute per token.
_USED_STAMP_SECONDS = 60


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    token_id: int
    user_id: int
    kind: str
    #: A team key's team (issue 26); ``user_id`` is then who issued it, until
    #: the edge puts the member asked for in its place (``edge.team_caller``).
    team_id: int | None = None


#: The kind a gateway's door asks for: an API token, or a team key (which
#: then names the member it asks for). Django's API views ask for ``api``
#: alone: a team key changes nobody's schedule.
GATEWAY = "gateway"
_GATEWAY_KINDS = frozenset({ApiToken.Kind.API, ApiToken.Kind.TEAM})


#: Digests of the raw tokens seen lately: a gateway sends the same token call
#: after call, and its SHA-256 was a fiftieth of a warm verdict. Bounded,
#: least recently used. It holds raw tokens in this process's memory, as each
#: request does while it runs (``docs/security.md``); never written anywhere.
_DIGESTS_KEPT = 4096
_digests: LRUCache[str, str] = LRUCache(maxsize=_DIGESTS_KEPT)
#: The memos here are read from the event loop and from pool threads alike.
_memo_lock = threading.Lock()


def digest(raw: str) -> str:
    with _memo_lock:
        found = _digests.get(raw)
    if found is None:
        found = hashlib.sha256(raw.encode()).hexdigest()
        if len(raw) <= MAX_TOKEN_LENGTH:
            with _memo_lock:
                _digests[raw] = found
    return found


def _stale(cached: object) -> bool:
    """A found token's check older than the bound (or in an older format)."""
    if cached == _MISSING:
        return False
    return not (isinstance(cached, tuple) and len(cached) == 5 and cache_policy.fresh(cached[3]))


def identify(raw: str, *, kind: str) -> TokenIdentity | None:
    """The live token of ``kind`` behind ``raw``, or ``None``."""
    return identify_many((raw,), kind=kind)[raw]


def identify_many(raws: Iterable[str], *, kind: str) -> dict[str, TokenIdentity | None]:
    """``identify`` of each of ``raws`` at once: one cache read, and one query
    for the checks that are cold or older than the bound (a team's capsules,
    pushed together, hold thousands of embed tokens).

    Raises ``DatabaseError`` only if the database cannot be read and one of
    them was never checked; the others' last checks are then still the truth.
    """
    out: dict[str, TokenIdentity | None] = {}
    digests: dict[str, str] = {}
    for raw in raws:
        if not raw or len(raw) > MAX_TOKEN_LENGTH:
            out[raw] = None
        else:
            digests[raw] = digest(raw)
    keys = {token_digest: token_key(token_digest) for token_digest in digests.values()}
    found = cache.get_many(list(keys.values())) if keys else {}
    checks: dict[str, object] = {token_digest: found.get(key) for token_digest, key in keys.items()}
    # Cold, or a "live and active" older than the bound: re-check, so a token
    # revoked or a user deactivated by any path (a bulk ``update()`` sends no
    # signal) is refused within seconds.
    due = [
        token_digest for token_digest, cached in checks.items() if cached is None or _stale(cached)
    ]
    if due:
        try:
            rows = {
                row[4]: row[:4]
                for row in ApiToken.objects.filter(
                    digest__in=due, revoked_at__isnull=True, user__is_active=True
                ).values_list("id", "user_id", "kind", "team_id", "digest")
            }
        except DatabaseError:
            if any(checks[token_digest] is None for token_digest in due):
                raise
            # Nothing can have been committed to a database we cannot read.
            _unreadable.failed("database unreachable; trusting the last checks of tokens")
        else:
            _unreadable.over("database readable")
            now = cache_policy.clock()
            live: dict[str, object] = {}
            gone: dict[str, object] = {}
            for token_digest in due:
                row = rows.get(token_digest)
                if row is None:
                    checks[token_digest] = gone[keys[token_digest]] = _MISSING
                else:
                    checks[token_digest] = live[keys[token_digest]] = (*row[:3], now, row[3])
            if live:
                cache.set_many(live, timeout=lifetime(_FOUND_SECONDS))
            if gone:
                cache.set_many(gone, timeout=_MISSING_SECONDS)
    stamp = []
    for raw, token_digest in digests.items():
        identity = cached_identity(token_digest, checks[token_digest], kind=kind)
        if identity is not None and stamp_due(identity.token_id):
            stamp.append(identity.token_id)
        out[raw] = identity
    if len(stamp) == 1:
        stamp_used(stamp[0])
    elif stamp:
        stamp_used_many(stamp)
    return out


def usable(cached: object) -> bool:
    """Whether a cached check (``cache_policy.token_key``'s value) may be read
    as it is: present, and not older than the freshness bound."""
    return cached is not None and not _stale(cached)


def cached_identity(token_digest: str, cached: object, *, kind: str) -> TokenIdentity | None:
    """What a usable cached check says of the token (``None``: not a live one of ``kind``)."""
    if cached == _MISSING:
        return None
    token_id: int
    user_id: int
    token_kind: str
    team_id: int | None
    token_id, user_id, token_kind, _, team_id = cached  # type: ignore[misc]
    if token_kind != kind and not (kind == GATEWAY and token_kind in _GATEWAY_KINDS):
        return None
    with _memo_lock:
        _users[token_digest] = user_id
    return TokenIdentity(token_id, user_id, token_kind, team_id)


#: Whose each recently seen token is (digest to user id; a token never changes
#: hands), so a warm verdict can fetch the token's check and its user's rows in
#: one cache read (``edge.caller``). Only a guess: the check read with it
#: decides. Bounded, least recently used.
_USERS_KEPT = 10_000
_users: LRUCache[str, int] = LRUCache(maxsize=_USERS_KEPT)


def likely_user(token_digest: str) -> int | None:
    """The user a token belonged to when last seen in this process, if it was."""
    with _memo_lock:
        return _users.get(token_digest)


#: Tokens this process stamped, and when (``time.monotonic``): the shared
#: once-a-minute ``add`` is asked at most once a minute per token per process.
_stamped: dict[int, float] = {}


def stamp_due(token_id: int) -> bool:
    """Whether this process should stamp the token's ``last_used_at`` now."""
    at = _stamped.get(token_id)
    return at is None or time.monotonic() - at >= _USED_STAMP_SECONDS


def stamp_used(token_id: int) -> None:
    """Stamp ``last_used_at``, at most once a minute per token across processes
    (bookkeeping: never fails a request)."""
    if len(_stamped) >= _USERS_KEPT:
        _stamped.clear()
    _stamped[token_id] = time.monotonic()
    if cache.add(token_used_key(token_id), 1, timeout=_USED_STAMP_SECONDS):
        try:
            ApiToken.objects.filter(id=token_id).update(last_used_at=timezone.now())
        except DatabaseError:
            # Bookkeeping only: a warm verdict must not fail with the database.
            _unstamped.failed("could not stamp last use of tokens (token %s first)", token_id)


def stamp_used_many(token_ids: list[int]) -> None:
    """``stamp_used`` of many tokens in one query (bookkeeping: never fails a
    request). Once a minute per token per process: the cross-process ``add``
    would be a cache round trip per token."""
    now = time.monotonic()
    if len(_stamped) + len(token_ids) >= _USERS_KEPT:
        _stamped.clear()
    for token_id in token_ids:
        _stamped[token_id] = now
    try:
        ApiToken.objects.filter(id__in=token_ids).update(last_used_at=timezone.now())
    except DatabaseError:
        _unstamped.failed("could not stamp last use of tokens (%s at once first)", len(token_ids))


def forget_seen() -> None:
    """Forget which tokens this process saw and stamped (tests)."""
    _users.clear()
    _stamped.clear()
    _digests.clear()


def live_embed_tokens(*, user_id: int) -> list[ApiToken]:
    """The user's unrevoked embed tokens, newest first (the capsule panel)."""
    return list(
        ApiToken.objects.filter(
            user_id=user_id, kind=ApiToken.Kind.EMBED, revoked_at__isnull=True
        ).order_by("-created_at")
    )


def has_live_embed_token(*, user_id: int, token_id: int) -> bool:
    """Whether ``token_id`` is one of the user's unrevoked embed tokens."""
    return ApiToken.objects.filter(
        id=token_id, user_id=user_id, kind=ApiToken.Kind.EMBED, revoked_at__isnull=True
    ).exists()


def live_token_matches(*, user_id: int, name: str, raw: str) -> bool:
    """Whether ``raw`` is an unrevoked token of the user called ``name`` (the
    demo token kept by ``make run``)."""
    if not raw or len(raw) > MAX_TOKEN_LENGTH:
        return False
    return ApiToken.objects.filter(
        user_id=user_id, name=name, digest=digest(raw), revoked_at__isnull=True
    ).exists()


def live_token_prefixes(*, user_id: int, name: str) -> list[str]:
    """The shown prefixes of the user's unrevoked tokens called ``name``, oldest first."""
    return list(
        ApiToken.objects.filter(user_id=user_id, name=name, revoked_at__isnull=True)
        .order_by("id")
        .values_list("prefix", flat=True)
    )
