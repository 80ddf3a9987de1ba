"""The asyncio flavour: same cache and policies, one request for a burst, and a
hard deadline."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import httpx
import pytest
from curfew_client import Action, AsyncCurfewClient, CurfewUnavailable, State

from tests.client.fake_curfew import TOKEN, FakeCurfew
from tests.client.test_client import (
    OFF_DUTY,
    SCHEDULE,
    WINDING,
    Clock,
    closed_port_url,
    verdict_log,
)


@pytest.fixture
def fake() -> Iterator[FakeCurfew]:
    server = FakeCurfew(WINDING, SCHEDULE).start()
    yield server
    server.stop()


async def test_verdicts_are_cached_per_key(fake: FakeCurfew) -> None:
    fake.valid_for, fake.max_age = 30, 60
    clock = Clock(WINDING)
    async with AsyncCurfewClient(fake.base_url, TOKEN, timeout=2, clock=clock) as client:
        first = await client.verdict(session_id="s", max_tokens=500)
        assert (first.state, first.action, first.max_tokens) == (State.WINDING, Action.CLAMP, 500)
        clock.advance(29)
        assert await client.verdict(session_id="s", max_tokens=500) is first
        assert (await client.verdict(session_id="exempt")).exempt
        assert fake.count == 2
        clock.advance(1)
        await client.verdict(session_id="s", max_tokens=500)
        assert fake.count == 3


async def test_a_burst_at_expiry_asks_once(fake: FakeCurfew) -> None:
    fake.delay = 0.2
    async with AsyncCurfewClient(fake.base_url, TOKEN, timeout=2, clock=Clock(WINDING)) as client:
        verdicts = await asyncio.gather(*(client.verdict(session_id="s") for _ in range(20)))
    assert fake.count == 1
    assert len({id(v) for v in verdicts}) == 1


async def test_one_cancelled_caller_does_not_cancel_the_others(fake: FakeCurfew) -> None:
    fake.delay = 0.2
    async with AsyncCurfewClient(fake.base_url, TOKEN, timeout=2, clock=Clock(WINDING)) as client:
        doomed = asyncio.ensure_future(client.verdict(session_id="s"))
        survivor = asyncio.ensure_future(client.verdict(session_id="s"))
        await asyncio.sleep(0.05)
        doomed.cancel()
        verdict = await survivor
    assert verdict.origin == "server"
    assert fake.count == 1


@pytest.mark.parametrize(
    ("policy", "origin", "action"),
    [("fail_open", "fail_open", Action.PASS), ("fail_closed", "fail_closed", Action.SHORT_CIRCUIT)],
)
async def test_policies_with_the_server_down(policy: str, origin: str, action: Action) -> None:
    async with AsyncCurfewClient(closed_port_url(), TOKEN, policy=policy) as client:  # type: ignore[arg-type]
        verdict = await client.verdict(session_id="s")
    assert (verdict.origin, verdict.action) == (origin, action)


async def test_raise_policy_raises() -> None:
    async with AsyncCurfewClient(closed_port_url(), TOKEN, policy="raise") as client:
        with pytest.raises(CurfewUnavailable):
            await client.verdict()


async def test_last_known_survives_an_outage() -> None:
    server = FakeCurfew(OFF_DUTY, SCHEDULE).start()
    server.valid_for = 10
    clock = Clock(OFF_DUTY)
    client = AsyncCurfewClient(server.base_url, TOKEN, policy="last_known", clock=clock)
    try:
        fresh = await client.verdict()
        assert fresh.short_circuit
    finally:
        server.stop()
    clock.advance(120)
    stale = await client.verdict()
    assert (stale.origin, stale.reply) == ("last_known", "。")
    await client.aclose()


async def test_timeout_is_a_hard_deadline(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="curfew.client")
    slow = FakeCurfew(WINDING, SCHEDULE).start()
    slow.delay = 6
    try:
        async with AsyncCurfewClient(slow.base_url, TOKEN, timeout=0.2) as client:
            started = time.monotonic()
            verdict = await client.verdict()
            assert time.monotonic() - started < 2.5  # the 0.2s timeout, not the 6s answer
            assert verdict.origin == "fail_open"
            for _ in range(10):
                await client.verdict()  # inside the retry interval: no new attempt
    finally:
        slow.stop()
    assert slow.count == 1
    assert len(verdict_log(caplog)) == 1


async def test_a_custom_transport_is_used() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500, json={"error": "boom", "message": "no"})

    transport = httpx.MockTransport(answer)
    async with AsyncCurfewClient("http://curfew.test", TOKEN, transport=transport) as client:
        verdict = await client.verdict()
    assert verdict.origin == "fail_open"
    assert str(seen[0].url) == "http://curfew.test/api/v1/verdict"
    assert seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
