"""What the sync path reads from Redis is kept in the process's layer (issue
40), as the event loop's reads are: a cold load's look-up or a team key's
member name read on a thread spares the next verdict its ``MGET``. Under the
writer's check: a value whose key was dropped (another process's write) since
the request first looked keys up is not kept."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_core.store import local_layer
from curfew_core.store.redis_cache import SharedRedisCache
from tests.test_local_layer_keep import another_process_says, cache, held, request, rows

__all__ = ["cache"]

pytestmark = pytest.mark.redis


def written_elsewhere(cache: SharedRedisCache, key: str, value: Any) -> None:
    """Redis holds ``value`` (written with no look-up before it: not held here)."""
    request(lambda: cache.set(key, value))
    assert not held(key)


def test_a_value_read_from_redis_is_held(cache: SharedRedisCache) -> None:
    loaded = rows()
    written_elsewhere(cache, "bundle:11", loaded)
    written_elsewhere(cache, "team-member:1:alice", 7)
    assert request(lambda: cache.get("bundle:11")) == loaded
    assert request(lambda: cache.get("team-member:1:alice")) == 7
    assert local_layer.read(["bundle:11", "team-member:1:alice"]) == [loaded, 7]


def test_values_read_together_are_held(cache: SharedRedisCache) -> None:
    loaded = rows()
    written_elsewhere(cache, "bundle:12", loaded)
    written_elsewhere(cache, "team:3", loaded)
    found = request(lambda: cache.get_many(["bundle:12", "team:3", "bundle:13"]))
    assert found == {"bundle:12": loaded, "team:3": loaded}
    assert local_layer.read(["bundle:12", "team:3"]) == [loaded, loaded]
    assert not held("bundle:13")  # absent: nothing to hold


def test_a_drop_since_the_requests_first_look_up_is_honoured(
    cache: SharedRedisCache, redis_url: str
) -> None:
    written_elsewhere(cache, "bundle:14", rows())
    written_elsewhere(cache, "bundle:15", rows())

    def look_up() -> None:
        cache.get("bundle:unrelated")  # the request's first look-up...
        another_process_says(cache, redis_url, "bundle:14")  # ...a change elsewhere...
        cache.get("bundle:14")  # ...then the key is read (whatever Redis then holds)
        cache.get_many(["bundle:15"])

    request(look_up)
    assert not held("bundle:14")
    assert held("bundle:15")  # another key's drop does not stop it
    # Control: a request that began after that invalidation keeps what it read.
    request(lambda: cache.get("bundle:14"))
    assert held("bundle:14")


def test_keys_the_layer_does_not_hold_are_not_kept(cache: SharedRedisCache) -> None:
    written_elsewhere(cache, "other:1", rows())
    request(lambda: cache.get("other:1"))
    assert not held("other:1")
