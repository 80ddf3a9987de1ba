"""Django's Redis cache with one connection pool and one client per process.

Django keeps cache backends per async context, and under ASGI every request
runs in a fresh one: the stock ``RedisCache`` then builds a new connection pool
for each request (a new TCP connection to Redis per request), and a new
``redis.Redis`` client for each call (which costs more than the command). Here
every backend instance of a process shares one client and its pool.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property

from curfew_core.store import redis_health

_lock = threading.Lock()
_shared: dict[tuple[str, ...], SharedClient] = {}


class SharedClient(RedisCacheClient):
    """One ``redis.Redis`` per pool (it is thread-safe), not one per call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Connections that live through a Redis restart (``redis_health``).
        super().__init__(*args, **{**redis_health.sync_options(), **kwargs})
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django: Any = self  # Django's private helpers, untyped in the stubs
        index: int = django._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            with _lock:
                client = self._clients.get(index)
                if client is None:
                    pool = django._get_connection_pool(write)
                    client = self._clients[index] = django._client(connection_pool=pool)
        return client


class SharedRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClient

    @cached_property
    def _cache(self) -> SharedClient:
        django: Any = self
        key = (*django._servers, repr(sorted(django._options.items())))
        with _lock:
            client = _shared.get(key)
            if client is None:
                client = _shared[key] = SharedClient(django._servers, **django._options)
        return client
