"""A token's rate on Redis (issue 40): one count a request (requests waiting
together on one key share an ``INCRBY``), the sliding window's estimate exact
across workers, a refusal taken back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import redis
from django.test import override_settings

from curfew_core import throttle
from curfew_core.store import async_cache

pytestmark = pytest.mark.redis

#: 60 s windows; 00:00:30 into one of them.
START = 1_800_000_000.0 - (1_800_000_000.0 % 60) + 30


@pytest.fixture
def on_redis(redis_url: str) -> Iterator[str]:
    prefix = f"rate-test-{uuid.uuid4().hex[:12]}"
    with override_settings(REDIS_URL=redis_url, REDIS_PREFIX=prefix, CURFEW_TOKEN_RATE="4/minute"):
        throttle.reset()
        yield prefix
        throttle.reset()


def counts(url: str, prefix: str) -> dict[str, int]:
    client = redis.Redis.from_url(url)
    return {
        key.decode().rsplit(":", 1)[-1]: int(client.get(key) or 0)
        for key in client.scan_iter(match=f"{prefix}:throttle:token-rate:*")
    }


def at(moment: float) -> Any:
    return mock.patch("curfew_core.throttle.time.time", return_value=moment)


def test_the_limit_holds_and_a_refusal_is_not_counted(on_redis: str, redis_url: str) -> None:
    with at(START):
        assert [throttle.hit_token_rate(7) is None for _ in range(4)] == [True] * 4
        refusal = throttle.hit_token_rate(7)
        assert refusal is not None
        assert refusal.rule == throttle.TOKEN_RATE
        assert 1 <= refusal.retry_after <= 60
        assert throttle.hit_token_rate(7) is not None
    # Four counted, the two refusals taken back.
    assert list(counts(redis_url, on_redis).values()) == [4]
    # Another token is not refused.
    with at(START):
        assert throttle.hit_token_rate(8) is None


def test_the_previous_window_weighs_in_as_it_slides_away(on_redis: str) -> None:
    with at(START):
        for _ in range(4):
            assert throttle.hit_token_rate(7) is None
        refusal = throttle.hit_token_rate(7)
        assert refusal is not None
        # 30 s to this window's end, then 15 s until its 4 weigh 3.
        assert refusal.retry_after == 45
    # 15 s into the next window, 3/4 of the last one still counts: 3 of 4 used.
    with at(START + 45):
        assert throttle.hit_token_rate(7) is None
        refusal = throttle.hit_token_rate(7)
        assert refusal is not None
        assert refusal.retry_after == 15  # 30 s in, the last window's 4 weigh 2
    # 50 s into it, a sixth: 0.67 plus the one counted, so two more fit.
    with at(START + 80):
        assert [throttle.hit_token_rate(7) is None for _ in range(2)] == [True] * 2
        assert throttle.hit_token_rate(7) is not None


def test_a_burst_at_a_window_end_gets_none_more_at_the_next_start(on_redis: str) -> None:
    """The previous window's weight is not rounded down: at the boundary a
    full window's burst still counts whole (``limits`` floors it: one more)."""
    end = START + 29.9  # 0.1 s before the window ends
    with at(end):
        for _ in range(4):
            assert throttle.hit_token_rate(7) is None
    with at(end + 0.2):
        refusal = throttle.hit_token_rate(7)
    assert refusal is not None
    assert refusal.retry_after <= 60 + 15


def test_the_event_loop_counts_on_the_same_keys_as_a_thread(on_redis: str) -> None:
    async def hits(n: int) -> list[bool]:
        try:
            return [await throttle.ahit_token_rate(7) is None for _ in range(n)]
        finally:
            await async_cache.aclose()

    with at(START):
        assert throttle.hit_token_rate(7) is None
        assert throttle.hit_token_rate(7) is None
        assert asyncio.run(hits(3)) == [True, True, False]


def test_a_window_key_gone_meanwhile_gets_its_expiry_again(on_redis: str, redis_url: str) -> None:
    with at(START):
        assert throttle.hit_token_rate(7) is None
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
    client.delete(*keys)  # Redis restarted, or an operator lifted the counts
    with at(START + 1):
        assert throttle.hit_token_rate(7) is None
    assert 0 < client.ttl(keys[0]) <= 180


def _spy_commands(client: Any) -> list[tuple[Any, ...]]:
    """Every command ``client`` sends on its own (not in a pipeline), as sent."""
    sent: list[tuple[Any, ...]] = []
    execute = client.execute_command

    async def spied(*args: Any, **kwargs: Any) -> Any:
        sent.append(args)
        return await execute(*args, **kwargs)

    client.execute_command = spied
    return sent


def test_requests_counted_together_each_get_their_own_count(on_redis: str, redis_url: str) -> None:
    """The event loop sends its waiting counts in one round trip, one
    ``INCRBY`` a key: each request still gets a count of its own, so exactly
    the limit passes however many wait."""

    trips: list[tuple[Any, ...]] = []

    async def together(n: int) -> list[bool]:
        try:
            await throttle.ahit_token_rate(7)  # the window opened (its own round trip)
            trips.extend(sent := _spy_commands(async_cache.client()))
            passed = await asyncio.gather(*(throttle.ahit_token_rate(7) for _ in range(n)))
            trips.extend(sent)
            return [refusal is None for refusal in passed]
        finally:
            await async_cache.aclose()

    with at(START):
        passed = asyncio.run(together(10))
    # The fourth of the minute was the opening one; the first three to ask pass.
    assert passed == [True] * 3 + [False] * 7
    # One round trip, one command: the ten requests on one key share an INCRBY 10
    # (then the seven refused are taken back, one DECR each).
    assert [trip[0] for trip in trips if trip[0] != "DECRBY"][:1] == ["INCRBY"]
    assert [trip[2] for trip in trips if trip[0] == "INCRBY"] == [10]
    assert list(counts(redis_url, on_redis).values()) == [4]


def test_requests_on_other_keys_in_one_trip_each_get_their_keys_count(
    on_redis: str, redis_url: str
) -> None:
    """Two tokens' requests waiting together: one command for both keys (a
    script, each key ``INCRBY`` its requests), and each token's limit is its own."""

    trips: list[tuple[Any, ...]] = []

    async def together() -> list[bool]:
        try:
            await throttle.ahit_token_rate(7)
            await throttle.ahit_token_rate(8)
            sent = _spy_commands(async_cache.client())
            passed = await asyncio.gather(
                *(throttle.ahit_token_rate(token) for token in (7, 8, 7, 8, 7, 8, 7, 8))
            )
            trips.extend(sent)
            return [refusal is None for refusal in passed]
        finally:
            await async_cache.aclose()

    with at(START):
        passed = asyncio.run(together())
    # Each token: 1 opening + 3 more pass (a limit of 4 a minute), the fourth refused.
    assert passed == [True] * 6 + [False] * 2
    client = redis.Redis.from_url(redis_url)
    keys = sorted(client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
    assert [key.decode().split(":")[-2] for key in keys] == ["7", "8"]
    assert [int(client.get(key) or 0) for key in keys] == [4, 4]
    # One script for both keys, four counts each, neither window opened here
    # (sent again once loaded, the first time this Redis sees it); no INCRBY a key.
    counted = [trip for trip in trips if trip[0] in {"EVALSHA", "INCRBY"}]
    assert {trip[0] for trip in counted} == {"EVALSHA"}
    assert [(trip[2], sorted(trip[3:5]), list(trip[5:])) for trip in counted[-1:]] == [
        (2, sorted(key.decode() for key in keys), [2, 4, 4, 0, 0])
    ]


def test_a_script_redis_forgot_is_loaded_again(on_redis: str, redis_url: str) -> None:
    """Redis restarted (or ``SCRIPT FLUSH``): the many-token count still counts,
    once each, and is not an outage."""

    async def twice() -> list[bool]:
        try:
            await throttle.ahit_token_rate(7)
            await throttle.ahit_token_rate(8)
            first = await asyncio.gather(*(throttle.ahit_token_rate(token) for token in (7, 8)))
            redis.Redis.from_url(redis_url).script_flush()
            again = await asyncio.gather(*(throttle.ahit_token_rate(token) for token in (7, 8)))
            return [refusal is None for refusal in first + again]
        finally:
            await async_cache.aclose()

    with at(START):
        passed = asyncio.run(twice())
    assert passed == [True] * 4
    client = redis.Redis.from_url(redis_url)
    keys = sorted(client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
    assert [int(client.get(key) or 0) for key in keys] == [3, 3]
