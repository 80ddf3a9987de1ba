"""Throttles: failed sign-ins, failed token checks, and each token's request rate.

Five rules, each a ``limits`` rate read from settings (``""`` turns one off;
``CURFEW_THROTTLE=0`` turns all off):

- ``signin-account-address``: failed sign-ins per account name *and* client
  address (moving window). Not per account alone: anyone who knows a name
  could then keep its owner locked out from anywhere (issue 23); per pair,
  a guesser locks only themselves out, and the owner elsewhere signs in;
- ``signin-address``: failed sign-ins per client address, whatever the names
  (one address trying many accounts);
- ``signup-address``: sign-up attempts per client address, taken names and
  new accounts alike: a name-based sign-up must say when a name is taken, so
  what keeps it from listing the accounts (or filling the table) is how few
  names one address may try;
- ``token-failures``: unknown, revoked or wrong-kind tokens per client address;
  past it they are answered 429 instead of 401. A live token from the same
  address keeps working: tokens carry 256 random bits, so refusing it would stop
  no guessing, while it would let one stale client, or anyone sharing the
  address (a NAT, a cloud egress), switch off a whole gateway fleet;
- ``token-rate``: requests per live token (sliding window counter, O(1) per
  token), generous by default so a gateway fleet never meets it in normal use.
  A team key's call that names its member counts on (key, member), each
  member's rate their own: one member's burst is that member's 429, never
  the whole team's (``edge.team_caller``).

A refusal while over a limit is not counted again, so a limit lifts by itself
one window after the last counted failure. A successful sign-in counts nothing.

Counts live in Redis when ``REDIS_URL`` is set (shared by every process), in
this process's memory otherwise. A Redis failure raises ``RedisError`` like the
token cache beside it would, so the doors' outage answers cover it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import ipaddress
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpRequest
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, RedisStorage, Storage
from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

from curfew_core.hot_settings import setting as hot_setting
from curfew_core.selectors.tokens import TokenIdentity, identify
from curfew_core.store import async_cache, local_layer, redis_health
from curfew_core.store.memos import LRU

SIGNIN_ACCOUNT = "signin-account-address"
SIGNIN_ADDRESS = "signin-address"
SIGNUP_ADDRESS = "signup-address"
RESET_ADDRESS = "reset-address"
RESET_EMAIL = "reset-email"
TOKEN_FAILURES = "token-failures"  # noqa: S105 - a rule name
TOKEN_RATE = "token-rate"  # noqa: S105 - a rule name
log = logging.getLogger("curfew.throttle")
#: Settings that change which limits apply or where counts live.
_SETTINGS = {
    "CURFEW_THROTTLE",
    "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS",
    "CURFEW_SIGNIN_FAILURES_PER_ADDRESS",
    "CURFEW_SIGNUPS_PER_ADDRESS",
    "CURFEW_RESETS_PER_ADDRESS",
    "CURFEW_RESETS_PER_EMAIL",
    "CURFEW_TOKEN_FAILURES_PER_ADDRESS",
    "CURFEW_TOKEN_RATE",
    "REDIS_URL",
    "REDIS_PREFIX",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused and when to come back (whole seconds, at least 1)."""

    rule: str
    retry_after: int
    message: str


class Throttled(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


# -- storage ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Limiters:
    storage: Storage
    moving: MovingWindowRateLimiter
    sliding: SlidingWindowCounterRateLimiter


_lock = threading.Lock()
_current: _Limiters | None = None


def _build() -> _Limiters:
    storage: Storage
    if settings.REDIS_URL:
        import redis

        # Its own small pool with short timeouts: a stalled Redis makes a
        # request fail fast (503 at the doors), never hang it.
        deadline = getattr(settings, "REDIS_TIMEOUT", 2.0)
        pool = redis.BlockingConnectionPool.from_url(
            settings.REDIS_URL,
            max_connections=settings.CURFEW_THROTTLE_REDIS_CONNECTIONS,
            timeout=deadline,
            socket_timeout=deadline,
            socket_connect_timeout=deadline,
            **redis_health.sync_options(),
        )
        storage = RedisStorage(
            settings.REDIS_URL,
            connection_pool=pool,
            key_prefix=f"{settings.REDIS_PREFIX}:throttle",
        )
    else:
        storage = LocalStorage()
    return _Limiters(
        storage, MovingWindowRateLimiter(storage), SlidingWindowCounterRateLimiter(storage)
    )


class LocalStorage(MemoryStorage):
    """limits' in-process storage without a thread per burst.

    ``MemoryStorage`` sweeps expired counts on a 10 ms ``threading.Timer`` that
    it starts again at the next count once the last has run: under steady
    load, a new thread for nearly every request (seen in a profile of the
    proxy, 1.2% of its samples in ``Thread.start``). Reads already drop an
    expired count themselves, so the sweep only bounds memory: here it runs
    inline, at most once a second, in the thread that counts.
    """

    #: Seconds between sweeps.
    SWEEP_EVERY = 1.0
    _swept = 0.0

    def _MemoryStorage__schedule_expiry(self) -> None:  # limits' own (mangled) name
        now = time.time()  # limits' own clock (and the tests' fake one)
        if abs(now - self._swept) >= self.SWEEP_EVERY:
            self._swept = now
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]


def _limiters() -> _Limiters:
    global _current
    current = _current
    if current is None:
        with _lock:
            current = _current
            if current is None:
                current = _current = _build()
    return current


def reset() -> None:
    """Forget every count (tests; an operator lifting a lock-out by hand)."""
    global _current
    with _lock:
        current, _current = _current, None
    # Counts outlive a dropped storage object in Redis: clear them either way.
    (current or _build()).storage.reset()
    _forget_windows()


def _on_setting_changed(*, setting: str, **_: Any) -> None:
    global _current
    if setting in _SETTINGS:
        with _lock:
            _current = None
        _forget_windows()
        _rule.cache_clear()


setting_changed.connect(_on_setting_changed)


@lru_cache(maxsize=8)
def _rule(setting: str) -> RateLimitItem | None:
    """The parsed limit a setting names, or ``None`` when it (or throttling) is off.

    Read on every token door's request (the token's rate): the settings at a
    dict lookup each (``hot_settings``) and each text parsed once (``_parsed``),
    where two reads through Django's settings object and a parse were a
    twentieth of a warm verdict."""
    if not hot_setting("CURFEW_THROTTLE"):
        return None
    try:
        text: str = hot_setting(setting)
    except AttributeError:
        return None
    return _parsed(text) if text else None


@lru_cache(maxsize=64)
def _parsed(text: str) -> RateLimitItem:
    """``limits.parse``, once per text (an item is a value: never changed)."""
    return parse(text)


# -- the client's address ---------------------------------------------------------
def _host(text: str) -> tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """An address as a peer or a proxy writes it, without its brackets or port
    (``"[2001:db8::1]:443"``, ``"203.0.113.9:51234"``), and the address it
    names (an IPv4-mapped IPv6 one as its IPv4 address); ``None`` if none."""
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return text, None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return text, address.ipv4_mapped
    return text, address


@lru_cache(maxsize=4096)
def _normalised(text: str) -> str:
    """One key per client: an IPv4 address, or the /64 of an IPv6 one (a single
    host is routinely given a whole /64, so counting /128s would let it rotate).
    Remembered per text: a process sees the same few addresses again and again
    (parsing one was a twentieth of a warm verdict)."""
    host, address = _host(text)
    if address is None:
        return host[:64] or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


@lru_cache(maxsize=8)
def _networks(
    listed: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in listed)


@lru_cache(maxsize=4096)
def _trusted(text: str, listed: tuple[str, ...]) -> bool:
    """Whether ``text`` (a peer or an ``X-Forwarded-For`` entry) is one of the
    balancers the operator named. Remembered per text, as ``_normalised`` is."""
    address = _host(text)[1]
    if address is None:
        return False
    return any(address in network for network in _networks(listed))


def _address(remote: str, forwarded: str) -> str:
    # X-Forwarded-For is believed only behind a balancer (CURFEW_BEHIND_PROXY)
    # and only on a connection from one the operator named: from anyone else it
    # is the client's own words, and believing them lets one client be many
    # (issue 23: from loopback it escaped the failure limit). Each balancer
    # appends the address that connected to it, so reading from the right and
    # passing over the named balancers gives the first address no one we trust
    # vouches for beyond: entries further left are whatever the client wrote.
    if hot_setting("CURFEW_BEHIND_PROXY") and forwarded.strip():
        listed = tuple(hot_setting("CURFEW_TRUSTED_PROXIES"))
        if listed and _trusted(remote, listed):
            entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
            for entry in reversed(entries):
                if not _trusted(entry, listed):
                    return _normalised(entry)
            if entries:  # every hop a balancer of ours: the first one
                return _normalised(entries[0])
    return _normalised(remote)


def client_address(request: HttpRequest) -> str:
    """Where an HTTP request comes from, as the throttles count it."""
    meta = request.META
    return _address(str(meta.get("REMOTE_ADDR") or ""), str(meta.get("HTTP_X_FORWARDED_FOR") or ""))


def address_of(client: Any, forwarded: bytes | None) -> str:
    """Where an ASGI request comes from, as the throttles count it: its scope's
    ``client`` and its ``X-Forwarded-For`` values, joined with commas."""
    remote = str(client[0] or "") if client else ""
    return _address(remote, "" if forwarded is None else forwarded.decode("latin-1"))


def scope_address(scope: Mapping[str, Any]) -> str:
    """Where an ASGI connection (a WebSocket) comes from, as the throttles count it."""
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers") or ()
    forwarded = [
        bytes(value) for name, value in headers if bytes(name).lower() == b"x-forwarded-for"
    ]
    return address_of(scope.get("client"), b",".join(forwarded) if forwarded else None)


# -- sign-in ------------------------------------------------------------------------
def _account(username: str) -> str:
    # Case-folded: "Ada" and "ada " count against one account; hashed, so the
    # key is short and names never sit in Redis.
    return hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]


def _pair(username: str, address: str) -> str:
    return f"{_account(username)}:{address}"


def _seconds_until(moment: float) -> int:
    # Whole seconds, rounded up; the millisecond of slack absorbs the rounding
    # of timestamps stored in Redis (Lua prints them to 14 digits).
    return max(1, math.ceil(moment - time.time() - 0.001))


def _minutes(seconds: int) -> int:
    return max(1, math.ceil(seconds / 60))


def signin_refusal(username: str, address: str) -> Refusal | None:
    """Whether a sign-in must be refused before the password is even checked.

    During a lock-out the right password is refused too: that is the point.
    """
    from django.utils.translation import ngettext

    limiters = _limiters()
    checks = (
        (SIGNIN_ACCOUNT, "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS", _pair(username, address)),
        (SIGNIN_ADDRESS, "CURFEW_SIGNIN_FAILURES_PER_ADDRESS", address),
    )
    for rule, setting, key in checks:
        item = _rule(setting)
        if item is None or limiters.moving.test(item, rule, key):
            continue
        stats = limiters.moving.get_window_stats(item, rule, key)
        seconds = _seconds_until(stats.reset_time)
        minutes = _minutes(seconds)
        if rule == SIGNIN_ACCOUNT:
            message = ngettext(
                "Too many failed sign-ins for this account from your network address; "
                "try again in %(n)d minute.",
                "Too many failed sign-ins for this account from your network address; "
                "try again in %(n)d minutes.",
                minutes,
            )
        else:
            message = ngettext(
                "Too many failed sign-ins from your network address; try again in %(n)d minute.",
                "Too many failed sign-ins from your network address; try again in %(n)d minutes.",
                minutes,
            )
        return Refusal(rule, seconds, message % {"n": minutes})
    return None


def note_signin_failure(username: str, address: str) -> None:
    """Count one wrong password (or unknown name) against the account from this
    address, and against the address."""
    limiters = _limiters()
    pair = _rule("CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS")
    if pair is not None:
        limiters.moving.hit(pair, SIGNIN_ACCOUNT, _pair(username, address))
    by_address = _rule("CURFEW_SIGNIN_FAILURES_PER_ADDRESS")
    if by_address is not None:
        limiters.moving.hit(by_address, SIGNIN_ADDRESS, address)


# -- sign-up and password reset ----------------------------------------------------
def _over(item: RateLimitItem, rule: str, key: str, say: Callable[[int], str]) -> Refusal:
    """The refusal of a window that is full: when it has room again, and
    ``say``'s words for that many minutes."""
    stats = _limiters().moving.get_window_stats(item, rule, key)
    seconds = _seconds_until(stats.reset_time)
    minutes = _minutes(seconds)
    return Refusal(rule, seconds, say(minutes) % {"n": minutes})


def note_signup_attempt(address: str) -> Refusal | None:
    """Count one sign-up attempt from ``address``, asked before the form is
    checked (so a refused attempt learns nothing, not even whether the name is
    taken); a refusal once the address is over its limit. A refused attempt is
    not counted, so the limit lifts on time."""
    from django.utils.translation import ngettext

    item = _rule("CURFEW_SIGNUPS_PER_ADDRESS")
    if item is None or _limiters().moving.hit(item, SIGNUP_ADDRESS, address):
        return None
    return _over(
        item,
        SIGNUP_ADDRESS,
        address,
        lambda minutes: ngettext(
            "Too many sign-up attempts from your network address; try again in %(n)d minute.",
            "Too many sign-up attempts from your network address; try again in %(n)d minutes.",
            minutes,
        ),
    )


def note_reset_request(address: str, email: str) -> Refusal | None:
    """Count one password reset request from ``address`` for ``email``, asked
    before the form is checked and whether or not an account has that address
    (so the answer tells nothing); a refusal once either is over its limit
    (issue 41: 130 mails reached one inbox in ten seconds from one address).
    Both counts are taken only when both have room, so a refused request is
    not counted and the limits lift on time."""
    from django.utils.translation import ngettext

    limiters = _limiters()
    windows = [
        (item, rule, key)
        for setting, rule, key in (
            ("CURFEW_RESETS_PER_ADDRESS", RESET_ADDRESS, address),
            ("CURFEW_RESETS_PER_EMAIL", RESET_EMAIL, email.strip().lower()),
        )
        if (item := _rule(setting)) is not None
    ]
    for item, rule, key in windows:
        if not limiters.moving.test(item, rule, key):
            return _over(
                item,
                rule,
                key,
                lambda minutes: ngettext(
                    "Too many password reset requests; try again in %(n)d minute.",
                    "Too many password reset requests; try again in %(n)d minutes.",
                    minutes,
                ),
            )
    for item, rule, key in windows:
        limiters.moving.hit(item, rule, key)
    return None


# -- tokens -------------------------------------------------------------------------
def _token_failure_refusal(item: RateLimitItem, address: str) -> Refusal:
    stats = _limiters().moving.get_window_stats(item, TOKEN_FAILURES, address)
    seconds = _seconds_until(stats.reset_time)
    return Refusal(
        TOKEN_FAILURES,
        seconds,
        f"too many failed token checks from this address; retry in {seconds} s",
    )


def note_token_failure(address: str) -> Refusal | None:
    """Count one unknown, revoked or wrong-kind token from ``address``; a refusal
    (answer 429, not 401) once the address is over its limit, else ``None``.
    A refused failure is not counted, so the limit lifts on time."""
    item = _rule("CURFEW_TOKEN_FAILURES_PER_ADDRESS")
    if item is None or _limiters().moving.hit(item, TOKEN_FAILURES, address):
        return None
    return _token_failure_refusal(item, address)


def hit_token_rate(token_id: int, member: int | None = None) -> Refusal | None:
    """Count one request of a live token: one Redis command, or a refusal.
    ``member``: the user a team key's call is for (their own rate through the
    key, ``edge.team_caller``); ``None``: the token's own."""
    item = _rule("CURFEW_TOKEN_RATE")
    if item is None:
        return None
    limiters = _limiters()
    if isinstance(limiters.storage, RedisStorage):
        window = _TokenWindow.now(item, token_id, member)
        client: Any = limiters.storage.storage
        if window.known_previous is None:
            with client.pipeline(transaction=False) as pipe:
                window.opening(pipe)
                replies = pipe.execute()
            count = window.opened(replies)
        else:
            count = int(client.incr(window.current))
            if count == 1:  # the window's key was gone (a reset, Redis restarted)
                client.expire(window.current, 3 * window.period)
        refusal = window.judge(item, count)
        if refusal is not None:
            client.decr(window.current)  # a refusal is not counted
        return refusal
    key = rate_key(token_id, member)
    if limiters.sliding.hit(item, TOKEN_RATE, key):
        return None
    stats = limiters.sliding.get_window_stats(item, TOKEN_RATE, key)
    return _rate_refusal_in(item, _seconds_until(stats.reset_time), member=member is not None)


def rate_key(token_id: int, member: int | None = None) -> str:
    """Whose count a request is, in the key the rate keeps it under: the
    token's id, or a team key's id and the member's user id (``7:42``)."""
    return str(token_id) if member is None else f"{token_id}:{member}"


def _rate_refusal_in(item: RateLimitItem, seconds: int, *, member: bool = False) -> Refusal:
    rate = f"rate of {item.amount} requests per {item.get_expiry()} s"
    if member:
        said = f"this member is over their {rate} through the team key"
    else:
        said = f"this token is over its {rate}"
    return Refusal(TOKEN_RATE, seconds, f"{said}; retry in {seconds} s")


# -- a token's rate on Redis: one command a request -----------------------------------
#: Each token's window (or a team key's member's) as this process last opened
#: it: its number and the previous window's final count (read once a window
#: per token per process).
#: As many as the local layer holds: an LRU cycled through more tokens than it
#: keeps never hits, and every verdict then opened its own window (10,000 did,
#: with 10,012 tokens in bench.cold_path).
_WINDOWS_KEPT = local_layer.LOCAL_LAYER_SIZE
_windows: LRU[str, tuple[int, int]] = LRU(maxsize=_WINDOWS_KEPT)
_windows_lock = threading.Lock()


@dataclass(slots=True)
class _TokenWindow:
    """A sliding-window counter on Redis, the ``limits`` formula on windows
    aligned to the clock, so a warm request is one atomic ``INCR``.

    A window of the rule's length counts each token's requests under a key of
    its own (``…:token-rate:<amount>:<period>:<token>:<window>``; a team key's
    call for a member, ``…:<token>:<member>:<window>``, the member's user id:
    each member's rate is their own); the estimate is the current
    count plus the previous window's, weighted by how much of it still lies
    within one window of now. The previous window is closed, so its count is
    read once per window (with the ``SET … NX EX`` that gives the current one
    its expiry, in the same round trip: a pipeline on a thread, the event
    loop's batch, ``_COUNT_EACH``, on the loop), then every request is one
    ``INCR`` (on the loop, most are counted ahead by a lease:
    ``ahit_token_rate``): Redis counts for every worker, so no worker lets a
    token past its limit. A request over the limit is taken back (``DECR``):
    refusals are not counted.
    """

    period: int
    number: int
    elapsed: float
    current: str
    previous: str
    #: ``rate_key``'s: the token, or a team key's member (``<token>:<member>``).
    who: str
    known_previous: int | None

    @classmethod
    def now(cls, item: RateLimitItem, token_id: int, member: int | None = None) -> _TokenWindow:
        period = int(item.get_expiry())
        moment = time.time()
        number = int(moment // period)
        who = rate_key(token_id, member)
        base = f"{settings.REDIS_PREFIX}:throttle:{TOKEN_RATE}:{item.amount}:{period}:{who}"
        with _windows_lock:
            known = _windows.get(who)
        return cls(
            period,
            number,
            moment - number * period,
            f"{base}:{number}",
            f"{base}:{number - 1}",
            who,
            known[1] if known is not None and known[0] == number else None,
        )

    def opening(self, pipe: Any) -> None:
        pipe.set(self.current, 0, ex=3 * self.period, nx=True)
        pipe.incr(self.current)
        pipe.get(self.previous)

    def opened(self, replies: list[Any]) -> int:
        self.remember(None if replies[2] is None else int(replies[2]))
        return int(replies[1])

    def remember(self, previous: int | None) -> None:
        """The previous window's final count, read as this one was opened
        (``None``: no key was kept, nothing counted then)."""
        self.known_previous = previous or 0
        with _windows_lock:
            _windows[self.who] = (self.number, self.known_previous)

    def _weighed(self, unread: int = 0) -> float:
        """The previous window's count as it weighs now: by how much of that
        window still lies within one window of now. Not rounded down
        (``limits`` floors it): a burst at a window's end may not be followed
        by one more at the next one's start. ``unread``: the count taken
        while this process has not read it (0: as none kept)."""
        previous = unread if self.known_previous is None else self.known_previous
        return previous * (1.0 - self.elapsed / self.period)

    def lease(self, item: RateLimitItem, total: int) -> int:
        """How many requests to count at once: ``1/LEASE_SHARE`` of the room
        left after ``total`` (this window's count as last seen) and the
        previous window's weight, at most ``LEASE_MOST``, at least 1. Before
        this process has read the previous window's count (the request that
        opens the window here reads it in the same round trip), it is taken
        as the most it can be, the whole rate: the lease is then a share of
        the room the window surely has (none at its very start, half the rate
        half-way through), never more than the share of what it has."""
        room = item.amount - self._weighed(unread=item.amount) - total
        return max(1, min(LEASE_MOST, int(room // LEASE_SHARE)))

    def fitting(self, item: RateLimitItem, first: int, units: int) -> int:
        """How many of ``units`` requests counted as ``first``, ``first + 1``…
        fit under the limit, each judged as ``judge`` judges one."""
        weighed = self._weighed()
        # The run of those that fit, from the first: worked out, then checked
        # on the very sums the loop below makes (a lease is up to
        # ``LEASE_MOST``: a step each, on the event loop, for every lease).
        fit = min(units, max(0, math.floor(item.amount - weighed - first) + 1))
        while fit > 0 and weighed + first + (fit - 1) > item.amount:
            fit -= 1
        while fit < units and weighed + first + fit <= item.amount:
            fit += 1
        return fit

    def judge(self, item: RateLimitItem, count: int) -> Refusal | None:
        if self._weighed() + count <= item.amount:
            return None
        previous = self.known_previous or 0
        seconds = self._seconds_to_room(item.amount, previous, count - 1)
        return _rate_refusal_in(item, seconds, member=":" in self.who)

    def _seconds_to_room(self, limit: int, previous: int, current: int) -> int:
        """Seconds until one more request fits (``current``: counted so far):
        until ``previous * weight + current + 1 <= limit``."""
        room = limit - 1 - current
        if room >= 0 and previous > 0:
            # Within this window, as the previous one's weight falls.
            at = self.period * (1.0 - room / previous)
            return max(1, math.ceil(at - self.elapsed))
        # In the next window, as this one's (then the previous) weight falls:
        # a full window's burst waits up to a window and a fraction.
        left = self.period - self.elapsed
        at = self.period * (1.0 - (limit - 1) / current) if current > 0 else 0.0
        return max(1, math.ceil(left + max(at, 0.0)))


def _forget_windows() -> None:
    with _windows_lock:
        _windows.clear()
    for batch in list(_batches.values()):
        batch.buckets.clear()


#: A lease is at most this share of the room a token's window has left (so
#: the requests a process has counted ahead and not yet served stay a small
#: part of what other processes may be refused early for)…
LEASE_SHARE = 64
#: …and at most this many requests: one Redis command a lease.
LEASE_MOST = 256
#: A bucket not drawn on for this long (one look of ``_IncrBatch.sweep`` to
#: the next, so up to twice this) gives its unserved lease back: its token's
#: requests went to another worker (a gateway's connection moved), and what
#: this one holds would otherwise weigh on the token until the window ends,
#: refusing it early elsewhere (a window of an hour or a day, for such rates).
LEASE_IDLE_SECONDS = 5.0


@dataclass(slots=True)
class _Bucket:
    """One token's (or team member's) requests this process has counted on
    Redis ahead of serving them, in one window: served from here with no
    round trip until ``left`` runs out (``ahit_token_rate``)."""

    #: The window's number and key.
    number: int
    key: str
    #: Counted on Redis and not yet served.
    left: int
    #: The window's count on Redis as this process last saw it, with its leases.
    total: int
    #: Whether a lease is on its way: others meanwhile count one at a time.
    leasing: bool = False
    #: The next lease is asked, in the background, once ``left`` is down to
    #: this. After a lease asked ahead, its size: the token drew a lease down
    #: while the next was on its way, so one lease is kept in reserve (under
    #: load a turn of the event loop serves every connection's request, and a
    #: round trip to Redis takes a few turns: with half a lease in reserve
    #: the bucket still ran dry before the next one landed, a tenth of the
    #: requests). After a request's own lease (the bucket was dry, or new:
    #: a token back in a new window takes one with its opening), half its
    #: size: how fast the token draws is not known yet, and a token asked a
    #: few times a window (10,000 users, each every few seconds) would
    #: otherwise ask a second lease on its very next request, a round trip
    #: for nothing (issue 40: two of them a token after each idle sweep,
    #: most of the Redis commands at 10,000 users).
    #: 0: none asked ahead (no lease yet, or the last one asked ahead failed).
    refill_at: int = 0
    #: ``(left, total)`` at the idle sweep's last look (``_IncrBatch.sweep``).
    looked: tuple[int, int] | None = None

    def hold(self, more: int, total: int, leased: int) -> None:
        """``more`` requests counted for later, the window's count seen as
        ``total``; the next lease is asked when ``leased`` are left (0: as
        before, ``refill_at``)."""
        self.left += more
        self.total = max(self.total, total)
        if leased:
            self.refill_at = leased


async def ahit_token_rate(token_id: int, member: int | None = None) -> Refusal | None:
    """``hit_token_rate`` from the event loop. In memory, the sync limiter
    itself (a dict, no I/O). With Redis, the same count on the same keys with
    this loop's client (no thread hop), drawn from a local bucket where it can
    be: a request may take a *lease*, ``INCRBY n`` for itself and the next
    ``n - 1`` requests of its token in this window (a token this loop
    counted in an earlier window takes one with the new window's opening, in
    the same round trip), which this process then
    serves with no round trip, asking the next lease in the background while
    one is still in reserve (``_lease_ahead``). Issue 40: awaiting the round
    trip was about a tenth of a served warm verdict's CPU, and with one
    connection half its time. A lease is counted on Redis before any of it
    is served, and only the part that fits under the limit is kept (the rest
    taken back, as a refusal is), so no worker ever lets a token past its
    rate. It is at most ``1/LEASE_SHARE`` of the room the window has left and
    ``LEASE_MOST`` requests, so within ``2 * LEASE_SHARE`` requests of the
    limit every request is one count as it comes, and what another process
    holds counted ahead (what a token spread over workers may be refused
    early for, within the window: two leases at most) stays small; a
    window's unserved lease is taken back when the next one opens here."""
    item = _rule("CURFEW_TOKEN_RATE")
    if item is None:
        return None
    if not hot_setting("REDIS_URL"):
        return hit_token_rate(token_id, member)
    client = async_cache.client()
    batch = _batch_for(client)
    who = rate_key(token_id, member)
    bucket = batch.buckets.get(who)
    if (
        bucket is not None
        and bucket.left > 0
        and bucket.number == int(time.time() // int(item.get_expiry()))
    ):
        left = bucket.left = bucket.left - 1  # counted on Redis already, by a lease
        if left <= bucket.refill_at and bucket.refill_at and not bucket.leasing:
            bucket.leasing = True
            asyncio.get_running_loop().create_task(
                _lease_ahead(batch, who, bucket, item, token_id, member),
                context=contextvars.Context(),
            )
        return None
    return await _count_now(batch, who, bucket, item, token_id, member)


async def _count_now(
    batch: _IncrBatch,
    who: str,
    bucket: _Bucket | None,
    item: RateLimitItem,
    token_id: int,
    member: int | None,
) -> Refusal | None:
    """A request's own count, its bucket dry (or none yet, or another
    window's): a lease where this loop has counted the token before, the
    window opened with it where this process has not yet (a single count
    while a lease is on its way, or where there is little room), what does
    not fit taken back.

    A token back in a new window (its bucket an earlier window's) takes its
    lease with the opening, in one round trip (issue 40: a team key through
    5,000 members, or 10,000 users, each asked a few times a window, paid
    two awaited round trips a token and window, the opening's single count
    and then a lease). Its new bucket is made before the round trip, so the
    token's other requests meanwhile see a lease on its way and count one at
    a time: one lease a window, not one each. A token this loop has not
    counted before is counted once, as before leases: a loop that serves a
    token once (a thread's own, a test client's) would hold a lease no one
    serves or gives back, and a gateway's token takes its lease on its
    second request."""
    window = _TokenWindow.now(item, token_id, member)
    if bucket is not None and bucket.number != window.number:
        # The token is back in a new window: this loop counted it before.
        _give_back(batch, bucket, window.number)
        bucket = batch.buckets[who] = _Bucket(window.number, window.current, 0, 0)
    units = 1
    leasing = None
    if bucket is not None and not bucket.leasing:
        units = window.lease(item, bucket.total)
        if units > 1:
            leasing = bucket
            leasing.leasing = True
    try:
        count, fit = await _fitted(batch, item, window, units)
    finally:
        if leasing is not None:
            leasing.leasing = False
    if fit == 0:
        return window.judge(item, count)
    _keep(batch, who, window, count, fit, leased=max(1, fit // 2) if units > 1 else 0)
    return None


def _give_back(batch: _IncrBatch, bucket: _Bucket, number: int) -> None:
    """A bucket of an earlier window: its unserved lease taken back from the
    window just closed (it would weigh on window ``number`` as the previous
    one's count), once, whoever asks meanwhile; in the background, so the
    window's first request of a token does not wait a round trip more for
    it (10,000 tokens, each asked a few times a minute, turn the minute
    together). Until it lands the token may be refused a little early,
    never late; a failure leaves it counted (``_IncrBatch.give_back``)."""
    unserved, bucket.left = bucket.left, 0
    if unserved > 0 and bucket.number == number - 1:
        asyncio.get_running_loop().create_task(
            batch.give_back([(bucket.key, unserved)]), context=contextvars.Context()
        )


async def _fitted(
    batch: _IncrBatch, item: RateLimitItem, window: _TokenWindow, units: int
) -> tuple[int, int]:
    """``units`` requests counted in ``window`` (``_count_in``): the count of
    the first, and how many fit under the limit; what does not fit is taken
    back at once (a refusal is not counted)."""
    count = await _count_in(batch, window, units)
    fit = window.fitting(item, count, units)
    if fit < units:
        await batch.client.decrby(window.current, units - fit)
    return count, fit


async def _count_in(batch: _IncrBatch, window: _TokenWindow, units: int) -> int:
    """``window``'s count with these ``units`` (the first of them), the
    window opened if this process has not yet."""
    if window.known_previous is None:
        # Opened in the batch's round trip too (``_COUNT_EACH``): a gateway
        # naming thousands of members, or thousands of users each asking a
        # few times a minute, open a window on most of their requests.
        count, previous = await batch.count(
            window.current, (window.previous, 3 * window.period), units=units
        )
        window.remember(previous)
        return count
    count, _ = await batch.count(window.current, units=units)
    if count == 1:  # the window's key was gone (a reset, Redis restarted)
        await batch.client.expire(window.current, 3 * window.period)
    return count


def _keep(
    batch: _IncrBatch, who: str, window: _TokenWindow, count: int, fit: int, *, leased: int
) -> None:
    """The ``fit`` counts from ``count`` on: the first this request's, the
    rest served later from ``who``'s bucket (``leased``: as ``_Bucket.hold``)."""
    held = batch.buckets.get(who)
    if held is None or held.number != window.number:
        held = batch.buckets[who] = _Bucket(window.number, window.current, 0, 0)
    held.hold(fit - 1, count + fit - 1, leased)
    if held.left > 0:
        batch.watch_idle()


async def _lease_ahead(
    batch: _IncrBatch,
    who: str,
    bucket: _Bucket,
    item: RateLimitItem,
    token_id: int,
    member: int | None,
) -> None:
    """The bucket's next lease, asked while a whole lease is still left (in
    the background: no request waits for it). Counted and fitted as a
    request's lease is (``_fitted``); a bucket forgotten meanwhile (the window
    turned, the counts were reset) drops it, counted: at worst early
    refusals, never late ones.
    A failure is left to the next request that finds the bucket dry, which
    meets it as an outage (503) itself."""
    try:
        window = _TokenWindow.now(item, token_id, member)
        if window.number != bucket.number or window.known_previous is None:
            return
        count, fit = await _fitted(batch, item, window, window.lease(item, bucket.total))
        if fit and batch.buckets.get(who) is bucket:
            bucket.hold(fit, count + fit - 1, fit)
            batch.watch_idle()
    except Exception:  # the next dry bucket's request meets it
        log.debug("token rate: a lease ahead failed", exc_info=True)
        bucket.refill_at = 0  # not asked ahead again: the next lease is a request's own
    finally:
        bucket.leasing = False


#: ``INCRBY`` of each key by its amount, in one command: a round trip whose
#: requests count on many tokens (10,000 users, each their own) is one
#: command, not one a token. Each key is still counted atomically, as a lone
#: ``INCRBY`` is; the keys need not share a Redis Cluster slot only because
#: the project speaks to one Redis (``REDIS_URL``), never a cluster. A key
#: whose window this process opens (its ``ARGV[n + 1 + i]``, the window's
#: expiry, is not 0) gets ``_TokenWindow.opening``'s ``SET … NX EX`` first,
#: and its previous window's count (the next of the keys past the first
#: ``n``) is read with it: each answer is ``{count, previous}``.
_COUNT_EACH = """
local n = tonumber(ARGV[1])
local answers = {}
local previous_key = n
for i = 1, n do
  local expiry = tonumber(ARGV[n + 1 + i])
  local previous = false
  if expiry > 0 then
    redis.call('SET', KEYS[i], 0, 'EX', expiry, 'NX')
    previous_key = previous_key + 1
    previous = redis.call('GET', KEYS[previous_key])
  end
  answers[i] = {redis.call('INCRBY', KEYS[i], ARGV[1 + i]), previous}
end
return answers
"""


#: ``DECRBY`` of each key by its amount, only where the key still is: an
#: unserved lease taken back from a window whose key Redis no longer holds
#: (restarted, or the counts reset) would make it anew, negative and with no
#: expiry (kept for good, and read as the next window's previous count: room
#: past the limit). Many keys in one command: an idle sweep gives back every
#: token's lease at once.
_TAKE_BACK = """
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('DECRBY', KEYS[i], ARGV[i])
  end
end
return #KEYS
"""
#: The most leases one ``_TAKE_BACK`` gives back (Redis runs a script alone).
_TAKE_BACK_MOST = 1000


#: A key's count with a request, and its previous window's count when the
#: request opened the window (``None`` otherwise, or when none was kept).
Counted = tuple[int, int | None]


class _IncrBatch:
    """The event loop's ``INCR``s, sent together: one round trip for every
    request that counts while the last one is on its way. Requests on one key
    share one ``INCRBY n`` and are answered the counts ``n`` single ``INCR``s
    in a row would have got (the total less ``n - 1`` … the total), so the
    limit stays exact; a lease of ``k`` requests (``ahit_token_rate``) is
    ``k`` of them in a row. A gateway's token is one key, so under load a round
    trip is one command whatever its requests, and many tokens' requests
    are one script (``_COUNT_EACH``: in redis-py's client, a pipeline costs
    about 10 µs of CPU a command, a script's keys next to nothing), windows
    this process opens included (:meth:`count`). Alone, a request sends its
    own at once. Beside them, this loop's leased buckets (``_Bucket``), one a
    token, as many as the local layer holds entries."""

    def __init__(self, client: Any) -> None:
        self.client = client
        #: Each key's waiting requests: an answer and how many counts it asks.
        self.waiting: dict[str, list[tuple[asyncio.Future[Counted], int]]] = {}
        #: The keys whose window is opened in this round trip: their previous
        #: window's key and the expiry the current one is given.
        self.opening: dict[str, tuple[str, int]] = {}
        self.sending = False
        # redis-py's script: loaded on first use, and again after a restart
        # forgot it (``NOSCRIPT``).
        self.count_each = client.register_script(_COUNT_EACH)
        self.take_back_script = client.register_script(_TAKE_BACK)
        self.buckets: LRU[str, _Bucket] = LRU(maxsize=_WINDOWS_KEPT)
        #: This loop's sweep of idle buckets, while any holds a lease.
        self.sweeper: asyncio.Task[None] | None = None

    async def give_back(self, leases: list[tuple[str, int]]) -> None:
        """Each ``(key, units)`` counted and not served, taken back
        (``_TAKE_BACK``, ``_TAKE_BACK_MOST`` a command), off a request's path:
        a failure leaves them counted (at worst early refusals), said at debug."""
        try:
            for start in range(0, len(leases), _TAKE_BACK_MOST):
                chunk = leases[start : start + _TAKE_BACK_MOST]
                await self.take_back_script(
                    keys=[key for key, _ in chunk], args=[units for _, units in chunk]
                )
        except Exception:
            log.debug("token rate: a lease was not given back", exc_info=True)

    def watch_idle(self) -> None:
        """This loop's idle sweep (``sweep``), started unless it runs."""
        if self.sweeper is None or self.sweeper.done():
            self.sweeper = asyncio.get_running_loop().create_task(
                self.sweep(), context=contextvars.Context()
            )

    async def sweep(self) -> None:
        """Every ``LEASE_IDLE_SECONDS``, each bucket no request has drawn on
        since the last look gives its unserved lease back; it ends once no
        bucket holds any (a request's lease starts it again). No cost on a
        request's path: a bucket is idle when its ``(left, total)`` has not
        moved between two looks."""
        while True:
            await asyncio.sleep(LEASE_IDLE_SECONDS)
            holding = False
            idle: list[tuple[str, int]] = []
            for _, bucket in self.buckets.items():
                if bucket.left <= 0:
                    continue
                mark = (bucket.left, bucket.total)
                if bucket.leasing or bucket.looked != mark:
                    bucket.looked = mark
                    holding = True
                    continue
                idle.append((bucket.key, bucket.left))
                bucket.left = bucket.refill_at = 0
            if idle:
                await self.give_back(idle)
            if not holding:
                return

    async def count(
        self, key: str, opening: tuple[str, int] | None = None, *, units: int = 1
    ) -> Counted:
        """``key``'s count with this request (the first of its ``units``
        counts), and, when ``opening`` (the previous window's key, the
        expiry) opens its window, the previous window's count (``None``: none
        was kept)."""
        future: asyncio.Future[Counted] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(key, []).append((future, units))
        if opening is not None:
            self.opening[key] = opening
        if not self.sending:
            self.sending = True
            # A context of its own: the sender outlives the request that started it.
            asyncio.get_running_loop().create_task(self._send(), context=contextvars.Context())
        return await future

    async def _send(self) -> None:
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, {}
                opening, self.opening = self.opening, {}
                try:
                    replies = await self._counted(batch, opening)
                except Exception as error:
                    for asked in batch.values():
                        _answer(asked, error)
                    continue
                for asked, reply in zip(batch.values(), replies, strict=True):
                    _answer(asked, reply)
        finally:
            self.sending = False

    async def _counted(
        self,
        batch: dict[str, list[tuple[asyncio.Future[Counted], int]]],
        opening: dict[str, tuple[str, int]],
    ) -> list[Counted]:
        """Each key's total after this round trip, and its previous window's
        count where it was opened: one ``INCRBY`` for one key already open,
        else one ``_COUNT_EACH``."""
        if len(batch) == 1 and not opening:
            ((key, asked),) = batch.items()
            return [(int(await self.client.incrby(key, _units(asked))), None)]
        keys = list(batch)
        answers = await self.count_each(
            keys=keys + [opening[key][0] for key in keys if key in opening],
            args=[
                len(keys),
                *(_units(asked) for asked in batch.values()),
                *(opening[key][1] if key in opening else 0 for key in keys),
            ],
        )
        return [
            (int(total), None if previous is None else int(previous)) for total, previous in answers
        ]


def _units(asked: list[tuple[asyncio.Future[Counted], int]]) -> int:
    return sum(units for _, units in asked)


def _answer(asked: list[tuple[asyncio.Future[Counted], int]], reply: Counted | Exception) -> None:
    """Each waiting request's own count of a shared ``INCRBY`` (the first of
    its place in the row) and the previous window's, or the error. A request
    gone meanwhile is skipped: its counts stand, as single ``INCR``s' would."""
    if isinstance(reply, Exception):
        for future, _ in asked:
            if not future.done():
                future.set_exception(reply)
        return
    total, previous = reply
    place = total - _units(asked) + 1
    for future, units in asked:
        if not future.done():
            future.set_result((place, previous))
        place += units


_batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _IncrBatch] = (
    weakref.WeakKeyDictionary()
)


def _batch_for(client: Any) -> _IncrBatch:
    loop = asyncio.get_running_loop()
    found = _batches.get(loop)
    if found is None or found.client is not client:
        found = _batches[loop] = _IncrBatch(client)
    return found


def identify_throttled(raw: str | None, *, kind: str, address: str) -> TokenIdentity | None:
    """``identify()`` behind the token throttles; raises ``Throttled`` when refused.

    One counter per request: the token's rate when it is live (one Redis round
    trip), the address's failures when it is not. A missing token is not a
    guess and counts nothing.
    """
    if not raw:
        return None
    identity = identify(raw, kind=kind)
    if identity is None:
        refusal = note_token_failure(address)
        if refusal is not None:
            raise Throttled(refusal)
        return None
    refusal = hit_token_rate(identity.token_id)
    if refusal is not None:
        raise Throttled(refusal)
    return identity
