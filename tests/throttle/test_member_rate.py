"""A team key's member has a rate of their own through the key: the count of
(key, member) is kept apart from the key's own and from every other member's,
exactly the rate, on Redis (one ``INCR`` a request, its own key
``…:token-rate:<amount>:<period>:<key>:<member>:<window>``) and in memory
(``limits``' sliding window) alike."""

from __future__ import annotations

import asyncio

import pytest
import redis
from django.test import override_settings

from curfew_core import throttle
from curfew_core.store import async_cache
from tests.throttle.test_token_rate_redis import START, at, on_redis

__all__ = ["on_redis"]  # a fixture, shared

KEY = 7
ALICE = 42
CAROL = 43


def _passes(count: int, member: int | None) -> list[bool]:
    return [throttle.hit_token_rate(KEY, member) is None for _ in range(count)]


def _one_member_spends_their_rate_alone() -> None:
    assert _passes(4, ALICE) == [True] * 4
    refusal = throttle.hit_token_rate(KEY, ALICE)
    assert refusal is not None
    assert refusal.rule == throttle.TOKEN_RATE
    assert refusal.message.startswith("this member is over their rate of 4 requests per 60 s")
    # Another member through the same key, and the key itself: their own counts.
    assert _passes(4, CAROL) == [True] * 4
    assert _passes(4, None) == [True] * 4
    assert throttle.hit_token_rate(KEY, CAROL) is not None
    refused = throttle.hit_token_rate(KEY)
    assert refused is not None
    assert refused.message.startswith("this token is over its rate of 4")
    # The same user id under another key is another count.
    assert throttle.hit_token_rate(KEY + 1, ALICE) is None


@override_settings(CURFEW_TOKEN_RATE="4/minute")
def test_in_memory_each_member_is_counted_apart() -> None:
    throttle.reset()
    try:
        _one_member_spends_their_rate_alone()
    finally:
        throttle.reset()


@pytest.mark.redis
def test_on_redis_each_member_is_counted_apart(on_redis: str, redis_url: str) -> None:
    with at(START):
        _one_member_spends_their_rate_alone()
    client = redis.Redis.from_url(redis_url)
    found = {
        key.decode().removeprefix(f"{on_redis}:throttle:token-rate:4:60:").rsplit(":", 1)[0]: int(
            client.get(key) or 0
        )
        for key in client.scan_iter(match=f"{on_redis}:throttle:token-rate:*")
    }
    # Exactly the rate each, the refusals taken back.
    assert found == {f"{KEY}:{ALICE}": 4, f"{KEY}:{CAROL}": 4, f"{KEY}": 4, f"{KEY + 1}:{ALICE}": 1}


@pytest.mark.redis
def test_on_redis_the_event_loop_counts_a_member_on_the_same_keys(on_redis: str) -> None:
    async def hits() -> list[bool]:
        try:
            counted = [await throttle.ahit_token_rate(KEY, ALICE) is None for _ in range(3)]
            together = await asyncio.gather(
                *(throttle.ahit_token_rate(KEY, member) for member in (ALICE, CAROL, ALICE))
            )
            return counted + [refusal is None for refusal in together]
        finally:
            await async_cache.aclose()

    with at(START):
        assert throttle.hit_token_rate(KEY, ALICE) is None
        # Alice: 1 here and 3 on the loop is her 4; then one of hers refused,
        # carol's passes, in the same round trip.
        assert asyncio.run(hits()) == [True, True, True, False, True, False]
