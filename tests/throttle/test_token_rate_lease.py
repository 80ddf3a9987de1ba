"""A token's rate on Redis, counted ahead (issue 40): a warm request takes a
lease, ``INCRBY n`` for itself and the next ``n - 1`` of its token, which its
process then serves with no round trip. Only what fits under the limit is
kept, so no worker lets a token past its rate; near the limit every request
is counted as it comes (``tests/throttle/test_token_rate_redis.py``)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from unittest import mock

import pytest
import redis
from django.test import override_settings
from limits import parse

from curfew_core import throttle
from curfew_core.store import async_cache
from curfew_core.throttle import Refusal
from tests.throttle.test_token_rate_redis import START, _spy_commands, at, on_redis

pytestmark = pytest.mark.redis
__all__ = ["on_redis"]  # the fixture, used by name (each test sets its own rate)


def counts(url: str, prefix: str) -> dict[int, int]:
    """Each window's count on Redis, by the window's number."""
    client = redis.Redis.from_url(url)
    return {
        int(key.decode().rsplit(":", 1)[-1]): int(client.get(key) or 0)
        for key in client.scan_iter(match=f"{prefix}:throttle:token-rate:*")
    }


def test_a_lease_serves_the_next_requests_without_a_round_trip(
    on_redis: str, redis_url: str
) -> None:
    async def hits() -> tuple[list[bool], int, list[tuple[Any, ...]]]:
        try:
            first = [await throttle.ahit_token_rate(7) is None for _ in range(2)]
            sent = _spy_commands(async_cache.client())
            at_once = 0
            for _ in range(63):
                # Served without waiting: the coroutine ends at its first step.
                step = throttle.ahit_token_rate(7)
                try:
                    step.send(None)
                except StopIteration as done:
                    at_once += done.value is None
                else:
                    step.close()
            await asyncio.sleep(0.1)  # the lease asked ahead lands
            return first, at_once, sent
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        first, at_once, sent = asyncio.run(hits())
    assert first == [True, True]
    # The first opened the window (one count); the second took a lease of
    # 100 (a 64th of the room, at most 256): the next 63 were served at once,
    # and the next lease (a 64th of what was left) asked in the background,
    # one lease kept in reserve.
    assert at_once == 63
    assert [(trip[0], trip[2]) for trip in sent] == [("INCRBY", 98)]
    assert list(counts(redis_url, on_redis).values()) == [1 + 100 + 98]


def test_a_token_asked_a_few_times_a_window_takes_one_lease_not_two(
    on_redis: str, redis_url: str
) -> None:
    """A request's own lease asks the next only once half of it is drawn: a
    token asked a few times a window (10,000 users, each every few seconds)
    costs its window's opening and one lease, not a second lease on its very
    next request. The control: a token that draws past half its lease has the
    next asked ahead, in the background."""

    async def hits(draws: int) -> list[tuple[Any, ...]]:
        try:
            assert await throttle.ahit_token_rate(7) is None  # the window opened
            assert await throttle.ahit_token_rate(7) is None  # a lease of 100
            sent = _spy_commands(async_cache.client())
            for _ in range(draws):
                assert await throttle.ahit_token_rate(7) is None
                await asyncio.sleep(0)  # a lease asked ahead would run here
            await asyncio.sleep(0.1)
            return sent
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        few = asyncio.run(hits(48))
    assert few == []  # 51 of the lease's 99 left: nothing asked
    throttle.reset()
    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        more = asyncio.run(hits(49))
    assert [(trip[0], trip[2]) for trip in more] == [("INCRBY", 98)]  # 50 left: asked ahead


@pytest.mark.parametrize("amount", [1, 7, 100, 6401])
def test_what_fits_of_a_lease_is_what_one_at_a_time_would_pass(amount: int) -> None:
    """``_TokenWindow.fitting`` works the run out; the oracle judges each
    count in turn, as ``judge`` does a request's, over previous counts and
    instants that make the weight a fraction."""
    oracle_runs = 0
    for previous in (0, 1, 3, amount - 1, amount, 2 * amount + 3):
        for elapsed in (0.0, 0.1, 17.3, 29.99, 59.9):
            window = throttle._TokenWindow(60, 1, elapsed, "now", "before", "7", max(previous, 0))
            weighed = window._weighed()
            for first in (1, 2, amount // 2 or 1, amount, amount + 1):
                for units in (1, 2, 64, 256):
                    oracle = 0
                    while oracle < units and weighed + first + oracle <= amount:
                        oracle += 1
                    assert window.fitting(parse(f"{amount}/minute"), first, units) == oracle
                    oracle_runs += oracle
    assert oracle_runs > 0  # some of it fits somewhere: not a test of nothing


@pytest.mark.parametrize("amount", [40, 6401, 100_000_000])
def test_an_openings_lease_is_never_more_than_a_share_of_the_room_it_has(amount: int) -> None:
    """Before the previous window's count is read (the opening reads it in
    the same round trip), the lease takes that count as the whole rate: at
    the window's very start it is a single count, and it is never more than
    a 64th of the room the window has, whatever the count turns out to be
    (an oracle over every previous count up to the rate)."""
    item = parse(f"{amount}/minute")
    for elapsed in (0.0, 0.5, 17.3, 30.0, 59.9):
        opening = throttle._TokenWindow(60, 1, elapsed, "now", "before", "7", None)
        units = opening.lease(item, 0)
        assert units >= 1
        if elapsed == 0.0:
            assert units == 1
        for previous in sorted({0, 1, amount // 3, amount - 1, amount}):
            known = throttle._TokenWindow(60, 1, elapsed, "now", "before", "7", previous)
            assert units <= known.lease(item, 0)
    # Half-way through a minute of 6,401, the room surely there is half of it.
    half = throttle._TokenWindow(60, 1, 30.0, "now", "before", "7", None)
    assert half.lease(parse("6401/minute"), 0) == 50


def test_a_token_back_in_a_new_window_opens_it_with_its_lease(
    on_redis: str, redis_url: str
) -> None:
    """A token this loop counted in an earlier window (a team key's member, one
    of 10,000 users, asked a few times a minute) takes its lease with the new
    window's opening: one round trip a window, where the opening's single
    count and then a lease on its next request were two."""

    async def hits() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        try:
            with at(START):
                assert await throttle.ahit_token_rate(7) is None  # counted here once
            sent = _spy_commands(async_cache.client())
            with at(START + 60):
                assert await throttle.ahit_token_rate(7) is None  # back: opened with a lease
                opened = list(sent)
                sent.clear()
                for _ in range(20):
                    assert await throttle.ahit_token_rate(7) is None
            return opened, sent
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"):
        opened, after = asyncio.run(hits())
    assert [trip[0] for trip in opened] == ["EVALSHA"]  # the opening's script, once
    assert after == []  # the next 20 from the lease: no round trip
    number = int(START // 60)
    # A 64th of the room the new window surely has half-way through (the
    # previous window's count taken as the whole rate until read): 50.
    assert counts(redis_url, on_redis) == {number: 1, number + 1: 50}


def test_a_loop_that_counts_a_token_once_holds_no_lease(on_redis: str, redis_url: str) -> None:
    """A token counted by a loop that never serves it again (a thread's own
    loop, a test client's request) is one count, not a lease nobody serves or
    gives back: 150 such requests are 150 counts, well under the default
    rate. (Found by the suite: a lease taken on every loop's first request
    turned a busy gateway's 150 requests into 429s.)"""

    async def once() -> Refusal | None:
        try:
            return await throttle.ahit_token_rate(7)
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6000/minute"), at(START):
        refused = [asyncio.run(once()) for _ in range(150)]
    assert refused == [None] * 150
    assert list(counts(redis_url, on_redis).values()) == [150]


def test_near_the_limit_each_request_is_counted_as_it_comes(on_redis: str, redis_url: str) -> None:
    """The control: a limit with less room than two leases' share leases
    nothing, every request one ``INCRBY 1`` (as before leases)."""

    async def hits() -> tuple[list[bool], list[tuple[Any, ...]]]:
        try:
            await throttle.ahit_token_rate(7)
            sent = _spy_commands(async_cache.client())
            return [await throttle.ahit_token_rate(7) is None for _ in range(40)], sent
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="40/minute"), at(START):
        passed, sent = asyncio.run(hits())
    assert passed == [True] * 39 + [False]
    assert [(trip[0], trip[2]) for trip in sent if trip[0] == "INCRBY"] == [("INCRBY", 1)] * 40
    assert list(counts(redis_url, on_redis).values()) == [40]


def test_no_worker_lets_a_token_past_its_rate(on_redis: str, redis_url: str) -> None:
    """Two workers (each its own event loop and buckets) on one token, asking
    more than its rate between them: what they served and what they still
    hold counted ahead is exactly the limit, and Redis holds just that (the
    part of a lease that did not fit taken back)."""
    served: list[tuple[int, int]] = []
    go = threading.Barrier(2)

    def worker() -> None:
        async def hammer() -> tuple[int, int]:
            try:
                go.wait()
                passed = 0
                for asked in range(2_000):
                    passed += await throttle.ahit_token_rate(7) is None
                    if asked % 7 == 0:
                        await asyncio.sleep(0)
                await asyncio.sleep(0.1)  # a lease asked ahead lands
                buckets = throttle._batch_for(async_cache.client()).buckets
                return passed, sum(bucket.left for bucket in buckets.values())
            finally:
                await async_cache.aclose()

        served.append(asyncio.run(hammer()))

    with override_settings(CURFEW_TOKEN_RATE="3000/minute"), at(START):
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(served) == 2
    assert all(passed for passed, _ in served), served  # each worker served some
    assert sum(passed + held for passed, held in served) == 3000
    # Held ahead at the end: at most two leases each, small this near the limit.
    assert sum(passed for passed, _ in served) >= 3000 - 2 * 2 * 3000 // 64
    assert list(counts(redis_url, on_redis).values()) == [3000]


def test_a_lease_not_served_goes_back_when_the_next_window_opens(
    on_redis: str, redis_url: str
) -> None:
    async def hits() -> None:
        try:
            with at(START):
                for _ in range(3):  # the opening, a lease of 99, one of it served
                    assert await throttle.ahit_token_rate(7) is None
            with at(START + 60):
                # Five at once as the window turns: the lease goes back once,
                # and the new window opens with one lease (50, a 64th of the
                # room it surely has), not five: the four others see it on
                # its way and count one each.
                passed = await asyncio.gather(*(throttle.ahit_token_rate(7) for _ in range(5)))
                assert passed == [None] * 5
                await asyncio.sleep(0.05)  # given back in the background
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6400/minute"):
        asyncio.run(hits())
    number = int(START // 60)
    # The old window keeps the three served, not the 98 leased and unserved.
    assert counts(redis_url, on_redis) == {number: 3, number + 1: 50 + 4}


def test_a_lease_is_never_more_than_what_fits(on_redis: str, redis_url: str) -> None:
    """A lease asked as the window fills keeps only what fits; the request
    past it is refused and its count taken back."""

    async def hits() -> list[bool]:
        try:
            return [await throttle.ahit_token_rate(7) is None for _ in range(3000)]
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="2100/minute"), at(START):
        passed = asyncio.run(hits())
    assert passed.count(True) == 2100
    assert passed.index(False) == 2100
    assert list(counts(redis_url, on_redis).values()) == [2100]


def test_a_lease_ahead_that_fails_leaves_the_outage_to_the_next_dry_request(
    on_redis: str, redis_url: str
) -> None:
    """The lease asked in the background meets Redis down: nothing leaks
    from it (no request fails for it, no task error), the bucket serves what
    it holds, and the request that finds it dry meets the outage itself."""
    errors: list[dict[str, Any]] = []

    async def hits() -> tuple[int, str]:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
        try:
            assert await throttle.ahit_token_rate(7) is None  # the window opened
            assert await throttle.ahit_token_rate(7) is None  # a lease of 100
            down = redis.exceptions.ConnectionError("Redis is down")
            with mock.patch.object(throttle._IncrBatch, "count", side_effect=down) as count:
                served = 0
                try:
                    while True:
                        assert await throttle.ahit_token_rate(7) is None
                        served += 1
                        await asyncio.sleep(0)  # the lease ahead runs, and fails
                except redis.exceptions.ConnectionError as exc:
                    # Asked ahead once (not again by every request after it), then the dry one.
                    assert count.call_count == 2
                    return served, str(exc)
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        served, said = asyncio.run(hits())
    assert served == 99  # the lease's rest, all of it
    assert said == "Redis is down"
    assert errors == []


def test_a_lease_ahead_that_finds_its_key_gone_gives_it_an_expiry(
    on_redis: str, redis_url: str
) -> None:
    """Redis restarted (or an operator cleared the counts) while a bucket still
    held a lease: the lease asked ahead makes the window's key anew, and gives
    it the window's expiry, as a request's own count does."""
    client = redis.Redis.from_url(redis_url)

    async def hits() -> None:
        try:
            assert await throttle.ahit_token_rate(7) is None  # the window opened
            assert await throttle.ahit_token_rate(7) is None  # a lease of 100
            client.delete(*client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
            for _ in range(49):  # served, down to half the lease: the next asked ahead
                assert await throttle.ahit_token_rate(7) is None
            await asyncio.sleep(0.1)  # the lease ahead lands
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        asyncio.run(hits())
    keys = list(client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
    assert [int(client.get(key) or 0) for key in keys] == [98]  # made anew by the lease ahead
    assert 0 < client.ttl(keys[0]) <= 180


def test_an_idle_lease_goes_back_and_a_drawn_on_one_stays(
    on_redis: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token whose requests stopped coming to this process (its gateway's
    connection moved to another worker) has its unserved lease given back
    within two looks of the sweep, so it weighs on nobody else until the
    window ends; the control, a token still drawn on between looks, keeps
    its own. The sweep then ends."""
    monkeypatch.setattr(throttle, "LEASE_IDLE_SECONDS", 0.05)

    async def hits() -> tuple[int, int, int, bool]:
        try:
            for token in (7, 8):
                for _ in range(2):  # the window opened, then a lease of 100
                    assert await throttle.ahit_token_rate(token) is None
            batch = throttle._batch_for(async_cache.client())
            served = 2
            for _ in range(15):  # token 8 drawn on between looks; token 7 not
                await asyncio.sleep(0.02)
                assert await throttle.ahit_token_rate(8) is None
                served += 1
            kept = batch.buckets[throttle.rate_key(7, None)].left
            held = batch.buckets[throttle.rate_key(8, None)].left
            await asyncio.sleep(0.2)  # token 8 idle too: both given back
            sweeper = batch.sweeper
            return kept, held, served, sweeper is not None and sweeper.done()
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        kept, held, served, ended = asyncio.run(hits())
    assert kept == 0  # token 7's 99 went back
    assert held > 0  # token 8's stayed while it was drawn on
    # Redis keeps what each served, not what they held.
    assert sorted(counts_by_token(redis_url, on_redis).values()) == sorted([2, served])
    assert ended


def test_a_lease_given_back_after_a_restart_makes_no_key(on_redis: str, redis_url: str) -> None:
    """Redis lost the window's key while a bucket held a lease: giving the
    lease back as the next window opens makes no key (a ``DECRBY`` would make
    it anew, negative and kept for good, and the next window would read it
    as its previous count: room past the limit)."""
    client = redis.Redis.from_url(redis_url)

    async def hits() -> None:
        try:
            with at(START):
                for _ in range(2):  # the window opened, then a lease of 100
                    assert await throttle.ahit_token_rate(7) is None
            client.delete(*client.scan_iter(match=f"{on_redis}:throttle:token-rate:*"))
            with at(START + 60):
                assert await throttle.ahit_token_rate(7) is None  # the lease goes back
                await asyncio.sleep(0.05)  # in the background
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6400/minute"):
        asyncio.run(hits())
    number = int(START // 60)
    # The new window's opening lease (50) alone: no key made for the old one.
    assert counts(redis_url, on_redis) == {number + 1: 50}


def counts_by_token(url: str, prefix: str) -> dict[str, int]:
    """Each token's count on Redis (one window), by the key's token."""
    client = redis.Redis.from_url(url)
    return {
        key.decode().rsplit(":", 2)[-2]: int(client.get(key) or 0)
        for key in client.scan_iter(match=f"{prefix}:throttle:token-rate:*")
    }


def test_the_windows_first_request_does_not_wait_for_the_give_back(
    on_redis: str, redis_url: str
) -> None:
    """A lease's rest goes back in the background as the next window opens:
    the request that finds it (the token's first of the window) is answered
    even while the give-back has not landed (here: never does)."""

    async def hits() -> bool:
        try:
            with at(START):
                for _ in range(2):  # the window opened, then a lease of 100
                    assert await throttle.ahit_token_rate(7) is None
            stuck = asyncio.Event()

            async def never(*_: Any) -> None:
                await stuck.wait()

            with (
                mock.patch.object(throttle._IncrBatch, "give_back", side_effect=never),
                at(START + 60),
            ):
                return await asyncio.wait_for(throttle.ahit_token_rate(7), 2) is None
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6400/minute"):
        assert asyncio.run(hits())


def test_the_sweep_gives_back_every_idle_lease_in_one_command(
    on_redis: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many tokens gone idle together (a crowd of gateways moved on) cost one
    round trip, not one a token."""
    monkeypatch.setattr(throttle, "LEASE_IDLE_SECONDS", 0.05)

    async def hits() -> list[tuple[Any, ...]]:
        try:
            for token in range(1, 31):
                for _ in range(2):  # the window opened, then a lease of 100
                    assert await throttle.ahit_token_rate(token) is None
            sent = _spy_commands(async_cache.client())
            await asyncio.sleep(0.2)  # two looks: every lease idle
            return sent
        finally:
            await async_cache.aclose()

    with override_settings(CURFEW_TOKEN_RATE="6401/minute"), at(START):
        sent = asyncio.run(hits())
    assert [trip[0] for trip in sent] == ["EVALSHA"]
    assert sorted(counts_by_token(redis_url, on_redis).values()) == [2] * 30
