"""The gateway client: typed verdicts, caching by key until they may change, and
the outage policies with the curfew server down (a closed port)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from curfew_client import (
    Action,
    CurfewClient,
    CurfewUnavailable,
    CurfewVerdict,
    State,
)

from curfew_core.engine import RequestContext, decide
from curfew_core.schedules import config as schedule_config
from curfew_testkit.server import free_port
from tests.client.fake_curfew import TOKEN, FakeCurfew

ROOT = Path(__file__).resolve().parents[2]
SHANGHAI = ZoneInfo("Asia/Shanghai")
WINDING = datetime(2026, 9, 29, 23, 30, tzinfo=SHANGHAI)
OFF_DUTY = datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI)
SCHEDULE = schedule_config.build(schedule_config.with_defaults({"exempt_sessions": ["exempt"]}))


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingTransport(httpx.HTTPTransport):
    """Counts attempts to ask for a verdict, answered or not (the cache's
    decision reports go by, uncounted)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/verdict"):
            self.attempts += 1
        return super().handle_request(request)


@pytest.fixture
def fake() -> Iterator[FakeCurfew]:
    server = FakeCurfew(WINDING, SCHEDULE).start()
    yield server
    server.stop()


def verdict_log(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The verdicts' outage log only: an earlier test's unclosed client may
    still be reporting decisions (``curfew.client.reports``) to its gone server."""
    return [r for r in caplog.records if r.name == "curfew.client"]


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_a_verdict_is_typed_and_matches_the_engine(fake: FakeCurfew) -> None:
    clock = Clock(WINDING)
    client = CurfewClient(fake.base_url, TOKEN, clock=clock)
    verdict = client.verdict(session_id="s-1", max_tokens=4096)
    want = decide(WINDING, SCHEDULE, RequestContext(session_id="s-1", max_tokens=4096))
    assert isinstance(verdict, CurfewVerdict)
    assert verdict.state == State.WINDING
    assert verdict.action == Action.CLAMP
    assert verdict.max_tokens == want.max_tokens == 1824
    assert verdict.persona == want.persona
    assert verdict.valid_until == want.valid_until
    assert verdict.max_age == 60
    assert verdict.origin == "server"
    assert not verdict.short_circuit
    # The budget is not sent: the server answers the ceiling, the client takes the min.
    assert fake.bodies == [{"session_id": "s-1", "subagent": False}]


def test_a_verdict_is_cached_until_valid_until(fake: FakeCurfew) -> None:
    fake.valid_for, fake.max_age = 30, 3600
    clock = Clock(WINDING)
    client = CurfewClient(fake.base_url, TOKEN, clock=clock)
    first = client.verdict(session_id="s")
    for _ in range(29):
        clock.advance(1)
        assert client.verdict(session_id="s") is first
    assert fake.count == 1
    clock.advance(1)  # valid_until reached
    client.verdict(session_id="s")
    assert fake.count == 2


def test_max_age_bounds_the_cache_when_it_is_sooner(fake: FakeCurfew) -> None:
    fake.valid_for, fake.max_age = 3600, 60  # an override could come any second
    clock = Clock(WINDING)
    client = CurfewClient(fake.base_url, TOKEN, clock=clock)
    client.verdict()
    clock.advance(59.9)
    client.verdict()
    assert fake.count == 1
    clock.advance(0.1)
    client.verdict()
    assert fake.count == 2


def test_keys_keep_sessions_purposes_and_subagents_apart_but_not_budgets(
    fake: FakeCurfew,
) -> None:
    client = CurfewClient(fake.base_url, TOKEN, clock=Clock(WINDING))
    ordinary = client.verdict(session_id="ordinary")
    exempt = client.verdict(session_id="exempt")
    purpose = client.verdict(session_id="ordinary", purpose="title")
    subagent = client.verdict(session_id="ordinary", subagent=True)
    small = client.verdict(session_id="ordinary", max_tokens=100)  # clamped here, not asked
    assert fake.count == 4
    assert (ordinary.action, ordinary.max_tokens) == (Action.CLAMP, 1824)
    assert (exempt.action, exempt.exempt) == (Action.PASS, True)
    assert purpose.action == Action.PASS
    assert subagent.action == Action.CLAMP  # subagents are not spared by default
    assert small.max_tokens == 100
    for session in ("ordinary", "exempt"):
        client.verdict(session_id=session)
    assert fake.count == 4  # all cached


# -- outages -------------------------------------------------------------------------


def test_fail_open_passes_when_the_server_is_down() -> None:
    client = CurfewClient(closed_port_url(), TOKEN, policy="fail_open")
    verdict = client.verdict(session_id="s", max_tokens=10)
    assert verdict.origin == "fail_open"
    assert verdict.action == Action.PASS
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10}
    assert verdict.apply(body) == body


def test_fail_closed_short_circuits_with_the_off_duty_reply() -> None:
    client = CurfewClient(closed_port_url(), TOKEN, policy="fail_closed")
    verdict = client.verdict(session_id="s")
    assert verdict.origin == "fail_closed"
    assert verdict.short_circuit
    assert verdict.reply == "。"
    assert verdict.state == State.OFF_DUTY
    payload, content_type = verdict.answer({"model": "m", "stream": False})
    assert content_type == "application/json"
    assert b'"total_tokens": 0' in payload


def test_raise_is_the_only_policy_that_raises() -> None:
    client = CurfewClient(closed_port_url(), TOKEN, policy="raise")
    with pytest.raises(CurfewUnavailable):
        client.verdict()


def test_last_known_serves_the_expired_verdict_up_to_its_limit(fake: FakeCurfew) -> None:
    fake.valid_for, fake.max_age = 60, 60
    clock = Clock(WINDING)
    client = CurfewClient(
        fake.base_url, TOKEN, policy="last_known", last_known_limit=600, clock=clock
    )
    fresh = client.verdict(session_id="s")
    fake.stop()  # the server goes down

    clock.advance(300)  # long past valid_until, within the limit
    stale = client.verdict(session_id="s")
    assert stale.origin == "last_known"
    assert (stale.state, stale.action, stale.max_tokens) == (
        fresh.state,
        fresh.action,
        fresh.max_tokens,
    )
    assert clock.now > stale.valid_until.timestamp()

    clock.advance(301)  # past the limit: the fallback policy answers
    assert client.verdict(session_id="s").origin == "fail_open"
    # A key never fetched has no last known verdict either.
    assert client.verdict(session_id="other").origin == "fail_open"


def test_last_known_can_fall_back_closed() -> None:
    client = CurfewClient(
        closed_port_url(), TOKEN, policy="last_known", last_known_fallback="fail_closed"
    )
    assert client.verdict().origin == "fail_closed"


def test_a_slow_server_is_a_down_server() -> None:
    slow = FakeCurfew(WINDING, SCHEDULE).start()
    slow.delay = 6
    try:
        client = CurfewClient(slow.base_url, TOKEN, timeout=0.2, policy="fail_closed")
        started = time.monotonic()
        verdict = client.verdict()
        assert time.monotonic() - started < 2.5  # the 0.2s timeout, not the 6s answer
        assert verdict.origin == "fail_closed"
    finally:
        slow.stop()


def test_a_refused_token_answers_by_policy_and_says_why(
    fake: FakeCurfew, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="curfew.client")
    client = CurfewClient(fake.base_url, "wrong-token", clock=Clock(WINDING))
    assert client.verdict().origin == "fail_open"
    [record] = verdict_log(caplog)
    assert "HTTP 401" in record.getMessage()
    assert "wrong-token" not in record.getMessage()


def test_an_outage_is_logged_once_retried_sparingly_and_its_end_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="curfew.client")
    port = free_port()
    clock = Clock(WINDING)
    transport = CountingTransport()
    client = CurfewClient(
        f"http://127.0.0.1:{port}",
        TOKEN,
        clock=clock,
        retry_interval=2,
        transport=transport,
    )
    for _ in range(100):  # 10s of calls, 0.1s apart
        assert client.verdict().origin == "fail_open"
        clock.advance(0.1)
    assert transport.attempts == 5  # once per retry interval, not once per call
    errors = [r for r in verdict_log(caplog) if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "unreachable" in errors[0].getMessage()

    server = FakeCurfew(WINDING, SCHEDULE, port=port).start()  # it comes back
    try:
        clock.advance(2)
        assert client.verdict().origin == "server"
        for _ in range(10):
            client.verdict()
        recovered = [r for r in caplog.records if "answers again" in r.getMessage()]
        assert len(recovered) == 1
        assert "100 call(s)" in recovered[0].getMessage()
    finally:
        server.stop()

    clock.advance(3600)  # a second outage is a new outage: logged once more
    for _ in range(20):
        client.verdict()
        clock.advance(0.5)
    assert len([r for r in verdict_log(caplog) if r.levelno == logging.ERROR]) == 2


def test_the_cache_is_bounded(fake: FakeCurfew) -> None:
    client = CurfewClient(fake.base_url, TOKEN, clock=Clock(WINDING), max_entries=8)
    for index in range(20):
        client.verdict(session_id=f"s-{index}")
    assert len(client.cache.entries) <= 8
    assert client.verdict(session_id="s-19").origin == "server"


def test_invalid_budgets_are_taken_as_unknown(fake: FakeCurfew) -> None:
    client = CurfewClient(fake.base_url, TOKEN, clock=Clock(WINDING))
    verdict = client.verdict(max_tokens=0)
    assert verdict.origin == "server"
    assert verdict.max_tokens == 1824
    assert "max_tokens" not in fake.bodies[0]


def test_an_unknown_policy_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="policy"):
        CurfewClient("http://127.0.0.1:1", TOKEN, policy="fail_sideways")  # type: ignore[arg-type]
