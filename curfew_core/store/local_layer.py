"""The process's own layer in front of Redis: a warm verdict with no network read.

With Redis as the cache (``redis_cache.SharedRedisCache``), the edge's warm
read (``async_cache.get_many``: a token's check, a user's rows, a team's rows)
is first looked up here, in this process's memory, and only what is missing
is fetched from Redis (one ``MGET``) and kept here.

- **Bounded, least recently used.** A ``memos.TLRU`` (``lru-dict``'s map in
  C, each entry with its expiry) of ``LOCAL_LAYER_SIZE`` entries: when full,
  the entry used least lately goes, one at a time, never the whole layer.
- **Kept true by the change stream.** Every write through the Redis cache
  (a writer's refresh after a commit, a revoked token's ``delete``, a stale
  entry re-read) drops the key here and publishes its name on one Redis
  channel (``channel()``); every process listens on it (one thread,
  ``_listen``) and drops the key from its own layer. So a save, an override or
  a team change anywhere reaches every process's layer as soon as Redis
  relays the message: before the capsules' push, which is sent after the
  refresh (``services.after_commit``).
- **A lost message is bounded by freshness.** An entry stands here no longer
  than its rows may be trusted: ``CURFEW_CACHE_FRESH_SECONDS`` after they
  were read from the database (their ``loaded_at``), and never longer than
  that bound after it was fetched from Redis. With Redis that bound is long
  (five gateway lifetimes, 300 s by default: settings_base), since every
  committed write is pushed (the services' ``after_commit`` and the model
  signals, ``services.cache_receivers``); a lost push is the exception. A listener that loses its
  connection turns the layer off (reads go to Redis) until it is subscribed
  again, and drops what it held, since it may have missed messages meanwhile.
- **What a process keeps beside it** hears the same messages (``on_drop``):
  a team key's member names (``edge.team_caller``) are forgotten when a
  member leaves or is renamed anywhere, and when the channel is lost.
- **No stale fetch put back.** A fetch that began before an invalidation
  arrived is not kept (``epoch``): its answer may predate the write. A value
  the sync path read from Redis (``redis_cache``'s ``get``/``get_many``) is
  kept too, under the writer's check below (``fetched``), so a thread's read
  spares the next verdict its ``MGET``.
- **The writer keeps what it loaded.** A process that writes rows it read
  from the database (a cold load, a writer's refresh) holds them here
  (``written``) instead of dropping them, so its next verdict for that user
  reads no network: but only if no invalidation of that key arrived since
  the request first looked the key up (``ask``: a ticket taken before its
  database read began; each key's last drop is numbered, ``_gen``). Its own
  message on the channel is tagged with this process's ``sender()`` id and
  ignored by its own listener; every other process drops the key as before.

Values handed out are shared between requests (readers never change them),
and the same entry read again is the same object, which the edge's caller
memo (``edge.caller``) relies on.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cachetools import LRUCache

from curfew_core.hot_settings import setting
from curfew_core.store import cache_policy
from curfew_core.store.memos import TLRU

log = logging.getLogger("curfew.cache")

#: Entries kept in each process (a token's check, a user's rows, a team's rows).
LOCAL_LAYER_SIZE = 50_000
#: Seconds between attempts to subscribe again after the listener lost Redis.
RESUBSCRIBE_SECONDS = 1.0
#: Seconds of silence before the listener checks its connection.
PING_SECONDS = 5.0

#: The keys the layer may hold (``cache_policy``'s token, user and team keys,
#: and a team key's member names, ``selectors.teams.member_key``), whose writes
#: through the cache are told to every process.
HELD = ("token:", "bundle:", "team:", "team-member:")

#: Not in the layer (``None`` is a value Redis may hold for an absent key).
MISSING: Any = object()

_lock = threading.RLock()


def _clock() -> float:
    return time.time()


def _until(_key: str, value: Any, now: float) -> float:
    """When an entry stops standing in for Redis (see the module docstring)."""
    bound: float = setting("CURFEW_CACHE_FRESH_SECONDS")
    until = now + bound
    loaded_at = _loaded_at(value)
    if loaded_at is not None:
        until = min(until, loaded_at + bound)
    return until


def _loaded_at(value: Any) -> float | None:
    if isinstance(value, dict):
        found = value.get("loaded_at")
        return float(found) if isinstance(found, int | float) else None
    if isinstance(value, tuple) and len(value) == 5 and isinstance(value[3], int | float):
        return float(value[3])  # a token's check (``selectors.tokens``)
    return None


_layer: TLRU[str, Any] = TLRU(maxsize=LOCAL_LAYER_SIZE, ttu=_until, timer=_clock)
#: Bumped by every invalidation: a fetch begun before one is not kept.
_epoch = 0


class _Generations(LRUCache[str, int]):
    """Each key's last drop (the ``_epoch`` it took), bounded: a key whose
    number was forgotten is taken to have been dropped at ``_floor``, the
    newest number forgotten (as if dropped late: never kept wrongly)."""

    def popitem(self) -> tuple[str, int]:
        global _floor
        key, value = super().popitem()
        _floor = max(_floor, value)
        return key, value


_gen = _Generations(maxsize=2 * LOCAL_LAYER_SIZE)
#: The generation of a key not in ``_gen``.
_floor = 0
#: The ``_epoch`` when the current request (its context) first looked a key
#: up: before any database read it made (``ask``, ``written``).
_ticket: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "curfew_local_layer_ticket", default=None
)
_sender: tuple[int, str] | None = None


def sender() -> str:
    """This process's id on the channel (its own messages are ignored)."""
    global _sender
    found = _sender
    if found is None or found[0] != os.getpid():  # a forked child is another sender
        found = _sender = (os.getpid(), uuid.uuid4().hex)
    return found[1]


def ask() -> None:
    """Note that this request looks keys up now (its first time only): a load
    from the database that follows began after this, and ``written`` keeps
    it only if none of its keys was dropped since."""
    if _ticket.get() is None:
        _ticket.set(_epoch)


def _generation(key: str) -> int:
    found = _gen.get(key)
    return _floor if found is None else found


class _Listener:
    """The thread that hears invalidations for one channel (one per process)."""

    def __init__(self, url: str, channel: str) -> None:
        self.url = url
        self.channel = channel
        self.subscribed = threading.Event()
        self.stopped = threading.Event()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self.run, name="curfew-local-layer", daemon=True)

    def run(self) -> None:
        import redis

        while not self.stopped.is_set():
            client: Any = redis.Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=5)
            pubsub = client.pubsub(ignore_subscribe_messages=False)
            try:
                pubsub.subscribe(self.channel)
                quiet_since = time.monotonic()
                while not self.stopped.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if cache_policy.unforgotten():
                        cache_policy.retry_forgets()  # a refresh refused meanwhile
                    if message is None:
                        if time.monotonic() - quiet_since >= PING_SECONDS:
                            pubsub.ping()  # a connection gone quietly is noticed
                            quiet_since = time.monotonic()
                        continue
                    quiet_since = time.monotonic()
                    if message["type"] == "subscribe":
                        self.subscribed.set()
                        # Redis answers again: what a refused refresh left goes now.
                        cache_policy.retry_forgets()
                    elif message["type"] == "message":
                        data = message["data"]
                        text = data.decode() if isinstance(data, bytes) else str(data)
                        lines = text.split("\n")
                        if lines[0].startswith("@"):  # "@sender" then the keys
                            if lines[0][1:] == sender():
                                continue  # this process's write: done as it wrote
                            lines = lines[1:]
                        drop(lines)
            except Exception:
                if not self.stopped.is_set():
                    log.warning("local cache layer: lost its channel; reading Redis meanwhile")
            finally:
                self.lost()
                try:
                    pubsub.close()
                    client.close()
                except Exception:  # noqa: S110 - closing a connection already gone
                    pass
            self.stopped.wait(RESUBSCRIBE_SECONDS)

    def lost(self) -> None:
        """Messages may have been missed: nothing held may be trusted now."""
        with _lock:
            self.subscribed.clear()
            _forget_all()
        _tell(None)


_listener: _Listener | None = None


def channel_for(prefix: str) -> str:
    """The Redis channel a deployment's invalidations travel on."""
    return f"{prefix}:local-layer:forget"


def start(url: str, channel: str) -> bool:
    """Make sure this process listens on ``channel``; whether the layer may be used now."""
    global _listener
    found = _listener
    if found is None or found.channel != channel or found.url != url or found.pid != os.getpid():
        with _lock:
            found = _listener
            if (
                found is None
                or found.channel != channel
                or found.url != url
                or found.pid != os.getpid()
            ):
                if found is not None:
                    found.stopped.set()
                    found.lost()
                found = _listener = _Listener(url, channel)
                found.thread.start()
    return found.subscribed.is_set()


def active() -> bool:
    found = _listener
    return found is not None and found.subscribed.is_set()


def stop() -> None:
    """Stop listening and forget everything (a settings change; tests)."""
    global _listener
    with _lock:
        found, _listener = _listener, None
    if found is not None:
        found.stopped.set()
        found.lost()


def epoch() -> int:
    """Read before a fetch from Redis; hand to ``keep`` after it."""
    return _epoch


def read(keys: Sequence[str]) -> list[Any]:
    """Each key's value held here, or ``MISSING`` (also when the layer is off)."""
    if not active():
        return [MISSING] * len(keys)
    with _lock:
        found = [_layer.get(key, MISSING) for key in keys]
    if MISSING in found:
        ask()
    return found


def keep(found: dict[str, Any], since: int) -> bool:
    """Hold ``found`` (fetched from Redis, begun at epoch ``since``), unless an
    invalidation arrived meanwhile or the layer is off; whether it was held."""
    if not found or not active():
        return False
    with _lock:
        if _epoch != since:
            return False
        for key, value in found.items():
            if value is not None:
                _layer[key] = value
    return True


def fetched(found: dict[str, Any]) -> None:
    """Values this request just read from Redis on the sync path (a cold
    load's look-up, a team key's member name on the thread): held here, as
    ``keep`` holds the event loop's, if no invalidation of their key arrived
    since the request first looked keys up (``ask``: the ticket ``written``
    checks too). ``None`` (absent) is not held."""
    since = _ticket.get()
    if since is None or not found or not active():
        return
    with _lock:
        for key, value in found.items():
            if value is not None and _generation(key) <= since:
                _layer[key] = value


def written(found: dict[str, Any]) -> None:
    """This process just wrote ``found`` to Redis: hold each value it loaded
    from the database (one with a ``loaded_at``) if no invalidation of its key
    arrived since this request first looked keys up (``ask``), else drop it.
    Either way the key counts as dropped now for every other request of the
    process, and a fetch from Redis under way is not kept (``epoch``)."""
    global _epoch
    since = _ticket.get()
    on = since is not None and active()
    keys = list(found)
    with _lock:
        _epoch += 1
        for key, value in found.items():
            fits = (
                on
                and since is not None
                and _generation(key) <= since
                and value is not None
                and _loaded_at(value) is not None
            )
            _gen[key] = _epoch
            if fits:
                _layer[key] = value
            else:
                _layer.pop(key, None)
    _tell(keys)


def drop(keys: Iterable[str]) -> None:
    """Forget ``keys`` here (a write through the cache, or another process's)."""
    global _epoch
    keys = list(keys)
    with _lock:
        _epoch += 1
        for key in keys:
            _gen[key] = _epoch
            _layer.pop(key, None)
    _tell(keys)


def _forget_all() -> None:
    global _epoch, _floor
    _epoch += 1
    _gen.clear()
    _floor = _epoch
    _layer.clear()


def reset() -> None:
    """Forget every entry (tests: one reset with the cache they empty)."""
    with _lock:
        _forget_all()
    _tell(None)


#: What else a process keeps beside the layer and the same messages must
#: reach: (key prefix, called with the dropped keys of that prefix, or ``None``
#: when everything is to be forgotten: the channel was lost, a reset).
_watchers: list[tuple[str, Callable[[list[str] | None], None]]] = []


def on_drop(prefix: str, forget: Callable[[list[str] | None], None]) -> None:
    """Call ``forget`` whenever keys starting with ``prefix`` are dropped here
    (by this process's writes or another's message), and with ``None`` when
    the layer forgets everything. Once per (prefix, function)."""
    if (prefix, forget) not in _watchers:
        _watchers.append((prefix, forget))


def _tell(keys: list[str] | None) -> None:
    for prefix, forget in list(_watchers):
        hit = None if keys is None else [key for key in keys if key.startswith(prefix)]
        if hit is None or hit:
            try:
                forget(hit)
            except Exception:
                log.exception("local cache layer: could not forget %s", prefix)


def size() -> int:
    with _lock:
        return len(_layer)
