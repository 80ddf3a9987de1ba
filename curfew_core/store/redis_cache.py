"""Django's Redis cache with one connection pool and one client per process.

Django keeps cache backends per async context, and under ASGI every request
runs in a fresh one: the stock ``RedisCache`` then builds a new connection pool
for each request (a new TCP connection to Redis per request), and a new
``redis.Redis`` client for each call (which costs more than the command). Here
every backend instance of a process shares one client and its pool.

Its writes also keep the process's layer in front of it true
(``local_layer``): a written key is dropped in every other process by one
``PUBLISH`` (tagged with this process's ``local_layer.sender()``, which its own
listener ignores); here the written value is held if it was loaded from the
database after the request's first look-up and nothing dropped it since
(``local_layer.written``), else dropped. What its reads fetch is held there
too, under the same check (``local_layer.fetched``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property

from curfew_core.store import cache_policy, local_layer, redis_health

log = logging.getLogger("curfew.cache")

_lock = threading.Lock()
_shared: dict[tuple[str, ...], SharedClient] = {}


def _held(key: Any) -> bool:
    """Whether the process's layer may hold ``key`` (``local_layer.HELD``)."""
    return isinstance(key, str) and key.startswith(local_layer.HELD)


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

    # -- the process's layer in front of this cache (``local_layer``) ----------------
    # Every write of a key the layer may hold drops it here and tells every
    # other process to drop it (one ``PUBLISH``; writes are the rare side).
    def _forget_everywhere(self, keys: list[str]) -> None:
        held = [key for key in keys if _held(key)]
        if not held:
            return
        local_layer.drop(held)
        self._publish(held)

    def _written(self, data: dict[Any, Any], failed: Sequence[Any] = ()) -> None:
        """Keys just written with ``data``'s values: held here if they may be
        (``local_layer.written``), dropped in every other process."""
        held = {
            key: (None if key in failed else value) for key, value in data.items() if _held(key)
        }
        if not held:
            return
        local_layer.written(held)
        self._publish(list(held))

    def _publish(self, held: list[str]) -> None:
        try:
            client = self._cache.get_client(write=True)
            message = "\n".join([f"@{local_layer.sender()}", *held])
            client.publish(self.invalidation_channel, message)
        except Exception:
            # The write stands; the keys are dropped and told again once Redis
            # answers (``cache_policy.retry_forgets``), else go stale within the bound.
            log.warning("could not tell other processes to drop %s", held, exc_info=True)
            cache_policy.forget_later(held)

    @property
    def invalidation_channel(self) -> str:
        return local_layer.channel_for(self.key_prefix or "curfew")

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> None:
        super().set(key, value, timeout, version)
        self._written({key: value})

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list[Any]:
        failed: list[Any] = super().set_many(data, timeout, version)
        self._written(dict(data), failed)
        return failed

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> bool:
        # Only where the key was absent in Redis, so no other process holds it
        # (an entry here never outlives its Redis entry's lifetime): dropped here only.
        added: bool = super().add(key, value, timeout, version)
        if added and _held(key):
            local_layer.written({key: value})
        return added

    # A request's first look-up: a database read after it may be kept
    # (``_written``), and so may what Redis answers (``local_layer.fetched``).
    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        local_layer.ask()
        value = super().get(key, default, version)
        if version is None and value is not default and _held(key):
            local_layer.fetched({key: value})
        return value

    def get_many(self, keys: Any, version: Any = None) -> Any:
        local_layer.ask()
        found: dict[Any, Any] = super().get_many(keys, version)
        if version is None:
            held = {key: value for key, value in found.items() if _held(key)}
            if held:
                local_layer.fetched(held)
        return found

    def delete(self, key: Any, version: Any = None) -> bool:
        deleted: bool = super().delete(key, version)
        self._forget_everywhere([key])
        return deleted

    def delete_many(self, keys: Any, version: Any = None) -> None:
        keys = list(keys)
        super().delete_many(keys, version)
        self._forget_everywhere(keys)

    def clear(self) -> None:
        """Empty this deployment's namespace only (``KEY_PREFIX``), never the
        whole Redis database: Django's own ``clear`` is ``FLUSHDB``, which
        would also take every other deployment's keys sharing that Redis (and
        a test worker's, mid-test, in a parallel run)."""
        client = self._cache.get_client(write=True)
        pattern = f"{self.key_prefix}:*" if self.key_prefix else "*"
        batch: list[Any] = []
        for key in client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                client.delete(*batch)
                batch.clear()
        if batch:
            client.delete(*batch)
        local_layer.reset()
