"""Read Django's cache from the event loop, without a thread hop.

The edge (``curfew_core.edge.caller``) answers a warm token door on the
event loop: its reads are the token check's and the user's cached rows. With
Redis (``curfew_core.store.redis_cache.SharedRedisCache``) they are one ``MGET`` on a
``redis.asyncio`` client, with the very keys and serializer Django's backend
uses, so what the sync readers and writers see is what this reads. With the
process-local cache (``LocMemCache``, no Redis) a read is a dict lookup under
a lock: done inline. Any other backend: ``SUPPORTED`` is false and callers go
to a thread (the sync path) as before.

Only reads: every write (a cold read's ``add``, a writer's refresh) stays on
the sync path, so the add-versus-set rules of ``cache_policy`` are unchanged.

With Redis, the process's own layer comes first (``local_layer``: bounded,
least recently used, kept true by the invalidations every write through the
cache publishes): a warm token and user are read there, with no network read
at all (``read_now``), and only what is missing there is fetched with one
``MGET`` and kept. The same entry read again is the same decoded object until
a writer replaces it. Freshness is still each reader's check of the value's
``loaded_at``. The values handed out are shared between requests: readers
never change them. A value fetched (from Redis, or the process-local cache)
is decoded once and kept by its pickled bytes (``_decoded``, least recently
used), so the same bytes read again are the same object too.

``redis.asyncio`` connections belong to the event loop that opened them: a
client per running loop (a server process has one; a test client opens and
closes loops, and closes the clients with ``aclose``).
"""

from __future__ import annotations

import asyncio
import pickle
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends import locmem
from django.core.cache.backends.locmem import LocMemCache
from django.core.signals import setting_changed

from curfew_core.store import local_layer, redis_health
from curfew_core.store.memos import LRU
from curfew_core.store.redis_cache import SharedRedisCache

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


_READABLE = (SharedRedisCache, LocMemCache)


def supported() -> bool:
    """Whether the default cache can be read here (else: read it in a thread)."""
    return isinstance(_backend(), _READABLE)


_backends: list[Any] = []


def _backend() -> Any:
    # Django makes a backend object per async context (per request under
    # ASGI); both kinds read here share their storage between objects, so
    # one per process will do (a settings change drops it).
    if not _backends:
        _backends.append(caches[DEFAULT_CACHE_ALIAS])
    return _backends[0]


def client() -> Any:
    """This loop's Redis client (its pool is shared by the async throttle)."""
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        import redis.asyncio

        deadline = getattr(settings, "REDIS_TIMEOUT", 2.0)
        alias: dict[str, Any] = settings.CACHES[DEFAULT_CACHE_ALIAS]
        options: dict[str, Any] = alias.get("OPTIONS") or {}
        # Blocking, as the sync pool, and with its wait: a burst waits for a
        # free connection rather than fail (a full pool is load, not an
        # outage: the 200-client load test got 503s with a 2 s wait on a busy
        # machine); a stalled Redis still fails fast on the socket deadline.
        # The server the sync cache reads (its LOCATION) when the cache is on
        # Redis; else the throttle's, which counts on REDIS_URL.
        location = alias.get("LOCATION") if isinstance(_backend(), SharedRedisCache) else None
        if isinstance(location, list | tuple):
            location = location[0]
        url = location or settings.REDIS_URL
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=options.get("max_connections", 50),
            timeout=options.get("timeout", 10),
            socket_timeout=deadline,
            socket_connect_timeout=deadline,
            **redis_health.async_options(),
        )
        found = _clients[loop] = redis.asyncio.Redis(connection_pool=pool)
    return found


def read_now(keys: Sequence[str]) -> list[Any] | None:
    """``get_many`` when it needs no waiting (the process-local cache, or every
    key in the layer in front of Redis), without a coroutine around it;
    ``None`` otherwise."""
    backend = _backend()
    if isinstance(backend, LocMemCache):
        return _local_many(backend, keys)
    if not isinstance(backend, SharedRedisCache) or not _layer_on(backend):
        return None
    found = local_layer.read(keys)
    return None if local_layer.MISSING in found else found


def _layer_on(backend: SharedRedisCache) -> bool:
    """Whether the layer in front of Redis is listening (it starts on first use)."""
    if local_layer.active():
        return True
    return local_layer.start(_location(backend), backend.invalidation_channel)


def _location(backend: SharedRedisCache) -> str:
    location: Any = settings.CACHES[DEFAULT_CACHE_ALIAS].get("LOCATION")
    if isinstance(location, list | tuple):
        location = location[0]
    return str(location or settings.REDIS_URL)


def _local_many(backend: LocMemCache, keys: Sequence[str]) -> list[Any]:
    made = []
    for key in keys:
        found = _made.get(key)
        made.append(_made_key(backend, key) if found is None else found)
    out: list[Any] = []
    for value in _held(backend, made):
        if value is not None:
            decoded = _decoded.get(value)
            value = _decode(value, pickle.loads) if decoded is None else decoded
        out.append(value)
    return out


async def get_many(keys: Sequence[str], *, keep: bool = True) -> list[Any]:
    """The cached values of ``keys`` (``None`` where absent), in order; those
    fetched from Redis are held in the layer unless ``keep`` is false (the
    caller then decides, ``local_layer.keep``).

    Raises ``RedisError`` like the sync backend would (the doors' outage answer).
    """
    backend = _backend()
    if isinstance(backend, LocMemCache):
        return _local_many(backend, keys)
    layered = isinstance(backend, SharedRedisCache) and _layer_on(backend)
    found = local_layer.read(keys) if layered else [local_layer.MISSING] * len(keys)
    wanted = [key for key, value in zip(keys, found, strict=True) if value is local_layer.MISSING]
    if not wanted:
        return found
    since = local_layer.epoch()
    raw = await client().mget([_made_key(backend, key) for key in wanted])
    loads = backend._cache._serializer.loads
    fetched = {
        key: None if value is None else _decode(value, loads)
        for key, value in zip(wanted, raw, strict=True)
    }
    if layered and keep:
        local_layer.keep(fetched, since)
    return [
        fetched[key] if value is local_layer.MISSING else value
        for key, value in zip(keys, found, strict=True)
    ]


def _held(backend: LocMemCache, made: list[str]) -> list[bytes | None]:
    """The pickled values ``LocMemCache.get`` would unpickle, read as it reads
    them (an expired entry dropped, a found one marked recently used); its
    ``_has_expired`` inlined, with one read of its own clock (its module's
    ``time``) for all the keys."""
    out: list[bytes | None] = []
    expiries: dict[str, float | None] = backend._expire_info  # type: ignore[attr-defined]
    held: Any = backend._cache  # type: ignore[attr-defined]
    now = locmem.time.time()  # type: ignore[attr-defined]
    with backend._lock:  # type: ignore[attr-defined]
        for key in made:
            expires = expiries.get(key, -1)
            if expires is not None and expires <= now:
                backend._delete(key)  # type: ignore[attr-defined]
                out.append(None)
            else:
                out.append(held[key])
                held.move_to_end(key, last=False)
    return out


#: The process-local cache's decoded values by their pickled bytes (see the
#: module docstring), and the backend's keys by the caller's, validated once;
#: each bounded, least recently used (read on the event loop only).
_MEMO_SIZE = 4096
_decoded: LRU[bytes, Any] = LRU(maxsize=_MEMO_SIZE)
_made: LRU[str, str] = LRU(maxsize=_MEMO_SIZE)


def _decode(value: bytes, loads: Callable[[bytes], Any]) -> Any:
    found = _decoded.get(value)
    if found is None:
        found = _decoded[value] = loads(value)
    return found


def _made_key(backend: Any, key: str) -> str:
    made = _made.get(key)
    if made is None:
        made = _made[key] = backend.make_and_validate_key(key)
    return made


async def aclose() -> None:
    """Close this loop's Redis client (a loop about to end: tests, shutdown)."""
    found = _clients.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.aclose(close_connection_pool=True)


def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting in {"REDIS_URL", "CACHES"}:
        _clients.clear()
        _backends.clear()
        _made.clear()
        _decoded.clear()
        local_layer.stop()


setting_changed.connect(_on_setting_changed)
