"""Bearer-token lookup, cached so the hot path skips the database."""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, close_old_connections, connection

from curfew_core.models import ApiToken
from curfew_core.selectors import bundles
from curfew_core.selectors.bundles import UserBundle
from curfew_core.store import cache_policy, local_layer
from curfew_core.store.cache_policy import bundle_key, lifetime, team_key, token_key
from curfew_core.store.memos import LRU
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.tokens")
#: Said once per outage, not per warm request (``store.outage_log``).
_unreadable = Notice(log)

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
#: ``last_used_at`` is bookkeeping: each process notes its tokens' uses in
#: memory and writes them together at most this often (see ``note_used``).
USED_FLUSH_SECONDS = 10.0
#: The most tokens a process holds uses of while the database refuses them.
_USED_KEPT = 100_000
#: Tokens written by one ``UPDATE ... WHERE id IN``.
_USED_PER_UPDATE = 2000


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
#: Each kind's raw prefix (``services.tokens`` mints with it): a raw token
#: says what kind it was made as, with no lookup.
PREFIXES: dict[str, str] = {
    ApiToken.Kind.API: "cfw_",
    ApiToken.Kind.EMBED: "cfe_",
    ApiToken.Kind.TEAM: "cft_",
}


def takes(kind: str, token_kind: str) -> bool:
    """Whether a route asking for ``kind`` (a token kind, or ``GATEWAY``)
    takes a token of ``token_kind``."""
    return token_kind == kind or (kind == GATEWAY and token_kind in _GATEWAY_KINDS)


def minted_kind(raw: str) -> str | None:
    """The kind ``raw`` was made as, by its prefix alone (``None``: no prefix
    of ours). Says nothing of whether such a token exists."""
    for kind, prefix in PREFIXES.items():
        if raw.startswith(prefix):
            return kind
    return None


#: Digests of the raw tokens seen lately: a gateway sends the same token call
#: after call, and its SHA-256 was a fiftieth of a warm verdict. Bounded,
#: least recently used. It holds raw tokens in this process's memory, as each
#: request does while it runs (``docs/security.md``); never written anywhere.
#: As many as the process's layer holds entries: 10,000 tokens in turn
#: through 4,096 missed every time (issue 40).
_DIGESTS_KEPT = local_layer.LOCAL_LAYER_SIZE
_digests: LRU[str, str] = LRU(maxsize=_DIGESTS_KEPT)
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
    for raw, token_digest in digests.items():
        identity = cached_identity(token_digest, checks[token_digest], kind=kind)
        if identity is not None:
            note_used(identity.token_id)
        out[raw] = identity
    return out


def _token_rows(token_digest: Any) -> Any:
    """The live token behind a digest, joined to its user's rows and their team's."""
    return (
        ApiToken.objects.filter(digest=token_digest, revoked_at__isnull=True, user__is_active=True)
        .order_by()
        .values_list("id", "user_id", "kind", "team_id", *bundles.joined_fields("user__"))[:1]
    )


#: A token door's cache reads before it took the cold path (``edge.caller``):
#: the token's check, and the rows of the user (and team) it was last seen
#: with, so the cold path neither reads them again nor overwrites a fresh one.
Seen = tuple[object, int | None, Any, Any]


def identify_with_bundle(
    raw: str | None, *, kind: str, seen: Seen | None = None
) -> tuple[TokenIdentity | None, UserBundle | None]:
    """``identify`` and its user's ``bundle_for`` together: the cold path of a
    verdict (issue 40). Reads what ``seen`` does not say from the cache (one
    read); a token check that is absent or older than the freshness bound is
    read with the user's rows and their team's in **one query** (the token
    joined to its user's schedule, overrides, membership, language and team),
    and all three are cached in one round trip. ``(None, None)``: not a live
    token of ``kind``."""
    if not raw or len(raw) > MAX_TOKEN_LENGTH:
        return None, None
    token_digest = digest(raw)
    key = token_key(token_digest)
    if seen is None:
        guess = likely_user(token_digest)
        team_guess = None if guess is None else bundles.likely_team(guess)
        keys = [key]
        if guess is not None:
            keys.append(bundle_key(guess))
            if team_guess is not None:
                keys.append(team_key(team_guess))
        found = cache.get_many(keys)
        seen = (
            found.get(key),
            guess,
            found.get(bundle_key(guess)) if guess is not None else bundles.UNREAD,
            found.get(team_key(team_guess)) if team_guess is not None else bundles.UNREAD,
        )
    checked, guess, rows_before, team_before = seen
    if guess is None:
        rows_before = team_before = bundles.UNREAD
    if checked is not None and not _stale(checked):
        identity = cached_identity(token_digest, checked, kind=kind)
        if identity is None:
            return None, None
        note_used(identity.token_id)
        if guess != identity.user_id or rows_before is bundles.UNREAD:
            return identity, bundles.bundle_for(identity.user_id)
        return identity, bundles.bundle_from(identity.user_id, rows_before, team_before)
    try:
        found_rows = bundles.compiled_rows("token-rows", _token_rows, token_digest)
    except DatabaseError:
        if checked is None:
            raise
        # Nothing can have been committed to a database we cannot read.
        _unreadable.failed("database unreachable; trusting the last checks of tokens")
        identity = cached_identity(token_digest, checked, kind=kind)
        return (
            (None, None) if identity is None else (identity, bundles.bundle_for(identity.user_id))
        )
    _unreadable.over("database readable")
    if not found_rows:
        cache.set(key, _MISSING, timeout=_MISSING_SECONDS)
        return None, None
    token_id, user_id, token_kind, team_id, *values = found_rows[0]
    now = cache_policy.clock()
    check = (token_id, user_id, token_kind, now, team_id)
    rows, team_rows = bundles.rows_from(values, now)
    if guess != user_id:
        rows_before = team_before = bundles.UNREAD
    elif rows_before is not bundles.UNREAD and bundles.rows_fresh(rows_before):
        # The user's cached rows are fresh (a writer's refresh, or another
        # reader's): they stand, as on the warm path; only the check is new.
        cache.set(key, check, timeout=lifetime(_FOUND_SECONDS))
        identity = cached_identity(token_digest, check, kind=kind)
        if identity is None:
            return None, None
        note_used(identity.token_id)
        return identity, bundles.bundle_from(user_id, rows_before, team_before)
    bundles.keep_rows(
        user_id,
        rows,
        None if rows_before is bundles.UNREAD else rows_before,
        team_rows,
        team_before,
        also={key: check},
        also_seconds=lifetime(_FOUND_SECONDS),
    )
    identity = cached_identity(token_digest, check, kind=kind)
    if identity is None:
        return None, None
    note_used(identity.token_id)
    return identity, bundles.built(user_id, rows, team_rows)


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
    if not takes(kind, token_kind):
        return None
    with _memo_lock:
        _users[token_digest] = user_id
    return TokenIdentity(token_id, user_id, token_kind, team_id)


#: Whose each recently seen token is (digest to user id; a token never changes
#: hands), so a warm verdict can fetch the token's check and its user's rows in
#: one cache read (``edge.caller``). Only a guess: the check read with it
#: decides. Bounded, least recently used.
#: As many as the process's layer holds entries (``local_layer``): 10,000 users
#: in turn through an LRU of 10,000 missed every time, and each cold path then
#: knew nothing of the rows it was about to replace.
_USERS_KEPT = local_layer.LOCAL_LAYER_SIZE
_users: LRU[str, int] = LRU(maxsize=_USERS_KEPT)


def likely_user(token_digest: str) -> int | None:
    """The user a token belonged to when last seen in this process, if it was."""
    with _memo_lock:
        return _users.get(token_digest)


# -- ``last_used_at``, written in batches ---------------------------------------------
#
# A use is noted in this process's memory (a dict write under a lock, no I/O:
# the warm verdict's own thread) and written by a daemon thread every
# ``USED_FLUSH_SECONDS``, the noted tokens in one ``UPDATE`` per second of use:
# one statement per process every few seconds, where it was
# one ``UPDATE`` per token per minute per process (1,550 a second at 100,000
# users). Each token gets its latest use, to the second (``_by_second``). At
# exit (and when a stop signal arrives: uvicorn's workers die of the
# re-raised SIGTERM, where no exit hook runs) what is noted is written at
# once. A refused write is kept for the next tick (at most ``_USED_KEPT``
# tokens). With
# ``CURFEW_LEDGER_FLUSH_SECONDS`` at 0 (the test settings: no background
# writer threads) nothing is written until ``flush_used()`` is called.

_used: dict[int, float] = {}
_used_lock = threading.Lock()
#: Held through a write of the noted uses: one write at a time.
_used_flush_lock = threading.Lock()
_used_wake = threading.Event()
_writer: threading.Thread | None = None
_writer_pid = 0
_draining = False
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_signals_watched = False
#: Whether this process writes in the background (not with the test settings).
_threaded = False


def note_used(token_id: int) -> None:
    """Note a use of the token now (written with the next batch)."""
    at = time.time()
    with _used_lock:
        if len(_used) < _USED_KEPT or token_id in _used:
            _used[token_id] = at
    if _writer is None or _writer_pid != os.getpid():
        _start_writer()
    elif (
        _threaded and not _signals_watched and threading.current_thread() is threading.main_thread()
    ):
        _watch_stop_signals()


def flush_used() -> int:
    """Write every noted use now, on the caller's thread and connection
    (tests; the exit hook); how many tokens were written. Never raises
    (bookkeeping): a refused batch is kept for the next try. A write under
    way on another thread (the writer, woken by the stop signal) is waited
    for first: the stop's write must not find nothing noted and let the
    process end while that write still waits for the database."""
    with _used_flush_lock:
        with _used_lock:
            taken = dict(_used)
            _used.clear()
        if not taken:
            return 0
        try:
            for at, ids in _by_second(taken):
                when = datetime.fromtimestamp(at, UTC)
                for first in range(0, len(ids), _USED_PER_UPDATE):
                    # One statement, outside a transaction: each stands alone.
                    ApiToken.objects.filter(id__in=ids[first : first + _USED_PER_UPDATE]).update(
                        last_used_at=when
                    )
        except DatabaseError:
            log.warning(
                "could not write the last use of %s tokens; kept for the next try", len(taken)
            )
            with _used_lock:
                for token_id, at in taken.items():
                    if len(_used) < _USED_KEPT and _used.get(token_id, 0.0) < at:
                        _used[token_id] = at
            return 0
        return len(taken)


def _by_second(taken: dict[int, float]) -> list[tuple[float, list[int]]]:
    """The noted tokens grouped by the second of their last use, each group
    with the latest use in it: one plain ``UPDATE ... WHERE id IN`` a group.
    A ``CASE`` of one ``WHEN`` a token was compiled by the ORM token by
    token, a tenth of a verdict's time at 10,000 users (issue 40). A use is
    written as the latest of its second (``last_used_at`` is bookkeeping:
    less than a second off), and all uses of one instant exactly."""
    groups: dict[int, tuple[float, list[int]]] = {}
    for token_id, at in taken.items():
        second = int(at)
        group = groups.get(second)
        if group is None:
            groups[second] = (at, [token_id])
        else:
            group[1].append(token_id)
            if at > group[0]:
                groups[second] = (at, group[1])
    return sorted(groups.values())


def pending_uses() -> int:
    with _used_lock:
        return len(_used)


def _start_writer() -> None:
    global _writer, _writer_pid, _threaded
    with _used_lock:
        if _writer is not None and _writer_pid == os.getpid():
            return
        if float(getattr(settings, "CURFEW_LEDGER_FLUSH_SECONDS", 1.0)) <= 0:
            # Mark it started: tests write with ``flush_used``.
            _writer, _writer_pid = threading.current_thread(), os.getpid()
            return
        _writer = threading.Thread(target=_write_loop, name="curfew-token-use", daemon=True)
        _writer_pid = os.getpid()
        _threaded = True
        _writer.start()
    atexit.register(flush_used_quietly)
    if threading.current_thread() is threading.main_thread():
        _watch_stop_signals()


def _write_loop() -> None:
    while True:
        _used_wake.wait(0.05 if _draining else USED_FLUSH_SECONDS)
        _used_wake.clear()
        flush_used_quietly()


def flush_used_quietly() -> None:
    """``flush_used``, a failure logged: the writer's tick, the exit hook
    and the stop's write (``edge.lifespan``)."""
    try:
        close_old_connections()
        flush_used()
    except Exception:
        log.warning("could not write the tokens' last use", exc_info=True)
    finally:
        if threading.current_thread() is not threading.main_thread():
            connection.close()


def _watch_stop_signals() -> None:
    """Chain the stop signals' handlers (main thread only): a stop writes the
    noted uses at once, while the server drains its requests."""
    global _signals_watched
    _signals_watched = True
    for signum in _STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous == signal.SIG_IGN or getattr(previous, "curfew_token_use", False):
            continue
        signal.signal(signum, _chained(previous))


def _chained(previous: Any) -> Callable[[int, FrameType | None], None]:
    def on_stop(signum: int, frame: FrameType | None) -> None:
        global _draining
        _draining = True
        _used_wake.set()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            worker = threading.Thread(target=flush_used_quietly, name="curfew-token-use-stop")
            worker.start()
            worker.join(timeout=10)
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    on_stop.curfew_token_use = True  # type: ignore[attr-defined]
    return on_stop


def forget_seen() -> None:
    """Forget which tokens this process saw and stamped (tests)."""
    _users.clear()
    _digests.clear()
    with _used_lock:
        _used.clear()


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
