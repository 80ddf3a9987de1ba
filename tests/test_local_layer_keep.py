"""The writer keeps what it loaded (issue 40): a process that writes rows it
read from the database holds them in its own layer (its next verdict reads no
network), unless another process's invalidation of that key arrived between
its look-up and the write; its own message on the channel does not drop them,
another process's does."""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import redis

from curfew_core.store import local_layer
from curfew_core.store.redis_cache import SharedRedisCache

pytestmark = pytest.mark.redis

T = TypeVar("T")


@pytest.fixture
def cache(redis_url: str) -> Iterator[SharedRedisCache]:
    """A Redis cache of its own namespace, with this process's listener on its channel."""
    prefix = f"keep-test-{uuid.uuid4().hex[:12]}"
    found = SharedRedisCache(redis_url, {"KEY_PREFIX": prefix, "OPTIONS": {"socket_timeout": 2}})
    _stop()
    local_layer.start(redis_url, found.invalidation_channel)
    listener = local_layer._listener
    assert listener is not None
    assert listener.subscribed.wait(5)
    yield found
    _stop()
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}:*"))
    if keys:
        client.delete(*keys)


def _stop() -> None:
    """Stop the listener and wait for its thread (which forgets all as it ends)."""
    listener = local_layer._listener
    local_layer.stop()
    if listener is not None:
        listener.thread.join(5)


def request(run: Callable[[], T]) -> T:
    """``run`` as one request: a context of its own, fresh (a server runs each
    request in a task of its own, made from a context that looked nothing up)."""

    def fresh() -> T:
        local_layer._ticket.set(None)
        return run()

    return contextvars.copy_context().run(fresh)


def rows() -> dict[str, Any]:
    return {"loaded_at": time.time(), "reply": "下班了"}


def another_process_says(cache: SharedRedisCache, redis_url: str, *keys: str) -> None:
    """Publish ``keys`` as another process's write would, and wait until this
    process's listener has heard it (messages on a channel arrive in order, so
    everything published before has been heard too)."""
    before = local_layer.epoch()
    message = "\n".join([f"@other-{uuid.uuid4().hex}", *keys])
    redis.Redis.from_url(redis_url).publish(cache.invalidation_channel, message)
    deadline = time.monotonic() + 5
    while local_layer.epoch() == before:
        assert time.monotonic() < deadline, "the listener never heard the message"
        time.sleep(0.01)


def load(cache: SharedRedisCache, key: str) -> None:
    """A request's cold load: looked up, read from the database, written."""
    cache.get(key)
    cache.set(key, rows())


def held(key: str) -> bool:
    return local_layer.read([key])[0] is not local_layer.MISSING


def test_the_writer_keeps_the_rows_it_loaded(cache: SharedRedisCache, redis_url: str) -> None:
    loaded = rows()

    def cold_load() -> None:
        assert cache.get("bundle:1") is None  # absent: the request loads the rows...
        cache.set("bundle:1", loaded)  # ...and writes them (a stale entry replaced)
        cache.add("bundle:2", loaded)  # (an absent one added)

    request(cold_load)
    # Its own message has been heard by now (it was published before this one).
    another_process_says(cache, redis_url, "bundle:unrelated")
    assert local_layer.read(["bundle:1", "bundle:2"]) == [loaded, loaded]


def test_an_invalidation_between_the_read_and_the_write_is_honoured(
    cache: SharedRedisCache, redis_url: str
) -> None:
    def cold_load() -> None:
        assert cache.get("bundle:3") is None  # the request looks up, reads the database...
        another_process_says(cache, redis_url, "bundle:3")  # ...another commits a change...
        cache.set("bundle:3", rows())  # ...the rows read before it are written

    request(cold_load)
    assert not held("bundle:3")
    # Control: a request that began after that invalidation keeps its load.
    request(lambda: load(cache, "bundle:3"))
    assert held("bundle:3")


def test_another_processes_write_still_drops_a_kept_entry(
    cache: SharedRedisCache, redis_url: str
) -> None:
    request(lambda: load(cache, "bundle:4"))
    assert held("bundle:4")
    another_process_says(cache, redis_url, "bundle:4")
    assert not held("bundle:4")
    # A message without a sender (a process of the release before) drops too.
    request(lambda: load(cache, "bundle:4"))
    assert held("bundle:4")
    before = local_layer.epoch()
    redis.Redis.from_url(redis_url).publish(cache.invalidation_channel, "bundle:4")
    deadline = time.monotonic() + 5
    while local_layer.epoch() == before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not held("bundle:4")


def test_a_write_with_no_look_up_before_it_is_not_kept(cache: SharedRedisCache) -> None:
    """No ticket: nothing says when its rows were read, so they are not held."""
    request(lambda: cache.set("bundle:5", rows()))
    assert not held("bundle:5")
