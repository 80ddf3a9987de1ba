"""A failing server is said loudly, once: an ERROR naming what happened and what
the policy does about it, the same failure again quiet until the server answers
(said once more), and ``last_error`` / ``health()`` for a gateway's health check."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from curfew_client import (
    AsyncCurfewClient,
    CurfewClient,
    CurfewError,
    CurfewHealth,
    CurfewUnavailable,
)
from curfew_client.health import Policy
from fake_clock import Clock
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
HTML_500 = b"<!DOCTYPE html><html><head><title>Server Error (500)</title></head><body>oops</body>"
SERVER = "http://curfew.test"


class Server:
    """Answers each verdict request with ``self.answer`` (status, body), or raises it."""

    def __init__(self, status: int, body: Any) -> None:
        self.answer: tuple[int, Any] | Exception = (status, body)
        self.asked = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        status, body = self.answer
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(status, content=content)


def sync_client(
    server: Server, clock: Callable[[], float], policy: Policy = "fail_open", **kw: Any
) -> CurfewClient:
    return CurfewClient(
        SERVER,
        "t",
        transport=httpx.MockTransport(server),
        clock=clock,
        policy=policy,
        retry_interval=2,
        report_decisions=False,
        **kw,
    )


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> Callable[[int], list[str]]:
    """The verdicts' log lines at ``level`` exactly (logger ``curfew.client``)."""
    caplog.set_level(logging.DEBUG, logger="curfew.client")

    def at(level: int) -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == "curfew.client" and r.levelno == level
        ]

    return at


def test_an_html_500_is_one_error_naming_it_and_that_no_curfew_is_enforced(
    logged: Callable[[int], list[str]],
) -> None:
    clock = Clock(NOW)
    client = sync_client(Server(500, HTML_500), clock)
    assert client.healthy
    assert client.last_error is None
    assert client.verdict().origin == "fail_open"
    [line] = logged(logging.ERROR)
    assert "HTTP 500" in line
    assert "not Curfew's JSON: an HTML error page" in line
    assert "'Server Error (500)'" in line  # the page's title, to recognise it
    assert "fail_open: calls pass UNCHECKED" in line
    assert "no curfew is enforced" in line
    assert SERVER in line
    assert logged(logging.WARNING) == []
    error = client.last_error
    assert isinstance(error, CurfewError)
    assert (error.kind, error.status, error.policy, error.at) == (
        "http_error",
        500,
        "fail_open",
        NOW,
    )
    assert "HTML" in error.message
    assert "no curfew is enforced" in error.applied
    assert str(error) in line
    assert not client.healthy


def test_the_same_failure_again_is_not_logged_again_at_error(
    logged: Callable[[int], list[str]],
) -> None:
    clock = Clock(NOW)
    server = Server(500, HTML_500)
    client = sync_client(server, clock)
    for _ in range(5):
        client.verdict()
        clock.now += 3  # past the retry interval: asked again each time
    assert server.asked == 5
    assert len(logged(logging.ERROR)) == 1
    assert len(logged(logging.DEBUG)) == 4  # the repeats, only for whoever asks
    assert client.last_error is not None
    assert client.last_error.at == NOW + 12
    assert client.last_error.since == NOW


def test_recovery_clears_last_error_and_is_logged_once(
    logged: Callable[[int], list[str]],
) -> None:
    clock = Clock(NOW)
    server = Server(500, HTML_500)
    client = sync_client(server, clock)
    client.verdict()
    clock.now += 1
    client.verdict()  # backing off: the policy's answer, not asked
    server.answer = (200, WINDING)
    clock.now += 2
    assert client.verdict().origin == "server"
    for _ in range(3):
        clock.now += 0.5
        client.verdict()
    assert client.last_error is None
    assert client.healthy
    [recovered] = logged(logging.WARNING)
    assert "answers again after 3.0s" in recovered
    assert "2 call(s) answered by policy fail_open" in recovered
    assert "http_error, HTTP 500" in recovered
    assert len(logged(logging.ERROR)) == 1

    server.answer = (500, HTML_500)  # a new outage is said again
    clock.now += 3600
    client.verdict()
    assert len(logged(logging.ERROR)) == 2


def test_a_failure_of_another_kind_is_logged_again(logged: Callable[[int], list[str]]) -> None:
    clock = Clock(NOW)
    server = Server(500, HTML_500)
    client = sync_client(server, clock)
    client.verdict()
    server.answer = httpx.ConnectError("[Errno 111] Connection refused")
    clock.now += 3
    client.verdict()
    first, second = logged(logging.ERROR)
    assert "HTTP 500" in first
    assert "unreachable: connection refused" in second
    assert client.last_error is not None
    assert client.last_error.kind == "unreachable"
    assert client.last_error.since == NOW  # one outage, two kinds of failure
    clock.now += 3
    client.verdict()
    assert len(logged(logging.ERROR)) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_named_by_its_url(logged: Callable[[int], list[str]]) -> None:
    base = f"http://127.0.0.1:{_closed_port()}"
    client = CurfewClient(base, "t", policy="fail_closed", report_decisions=False)
    try:
        assert client.verdict().origin == "fail_closed"
    finally:
        client.close()
    error = client.last_error
    assert error is not None
    assert (error.kind, error.status) == ("unreachable", None)
    assert base in error.message
    assert "connection refused" in error.message
    assert error.applied.startswith("fail_closed: calls are answered with the off-duty reply")
    [line] = logged(logging.ERROR)
    assert base in line
    assert "unreachable" in line


def test_a_timeout_is_unreachable_and_says_the_timeout(logged: Callable[[int], list[str]]) -> None:
    server = Server(200, WINDING)
    server.answer = httpx.ReadTimeout("timed out")
    client = sync_client(server, Clock(NOW), timeout=0.25)
    client.verdict()
    assert client.last_error is not None
    assert client.last_error.kind == "unreachable"
    assert "no answer within 0.25 s" in client.last_error.message


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_is_a_configuration_error_not_an_outage(
    status: int, logged: Callable[[int], list[str]]
) -> None:
    body = {"error": "unauthorized", "message": "missing or invalid token"}
    client = sync_client(Server(status, body), Clock(NOW))
    assert client.verdict().origin == "fail_open"
    error = client.last_error
    assert error is not None
    assert (error.kind, error.status) == ("refused_token", status)
    assert "the token is unknown or revoked" in error.message
    assert "not an outage of the server" in error.message
    assert "configuration error" in error.message
    assert "missing or invalid token" in error.message  # the server's own words
    [line] = logged(logging.ERROR)
    assert f"HTTP {status}" in line
    assert "no curfew is enforced" in line


@pytest.mark.parametrize(
    ("status", "body", "kind", "said"),
    [
        (429, {"error": "rate_limited", "message": "slow down"}, "rate_limited", "rate limited"),
        (
            503,
            {"error": "unavailable", "message": "storage unavailable; retry shortly"},
            "unavailable",
            "storage outage (HTTP 503: unavailable: storage unavailable",
        ),
        (503, b"<html>Service Unavailable</html>", "http_error", "HTTP 503 (not Curfew's JSON"),
        (502, b"", "http_error", "HTTP 502 (an empty body"),
        (404, b"Not Found", "http_error", "is the base URL right?"),
        (500, {"error": "oops", "message": "down"}, "http_error", "HTTP 500: oops: down"),
        (200, {"state": "winding"}, "bad_answer", "HTTP 200 but not with a verdict"),
        (
            200,
            b"<html><title>Sign in</title>",
            "bad_answer",
            "not Curfew's JSON: an HTML page titled 'Sign in'",
        ),
    ],
)
def test_each_kind_of_failure_is_named(
    status: int, body: Any, kind: str, said: str, logged: Callable[[int], list[str]]
) -> None:
    client = sync_client(Server(status, body), Clock(NOW))
    client.verdict()
    error = client.last_error
    assert error is not None
    assert (error.kind, error.status) == (kind, status)
    assert said in error.message
    assert len(logged(logging.ERROR)) == 1


def test_last_known_says_which_verdict_it_serves_and_for_how_long(
    logged: Callable[[int], list[str]],
) -> None:
    clock = Clock(NOW)
    server = Server(200, {**WINDING, "max_age": 60})
    client = sync_client(server, clock, policy="last_known", last_known_limit=600)
    client.verdict()
    server.answer = (500, HTML_500)
    clock.now += 100
    assert client.verdict().origin == "last_known"
    error = client.last_error
    assert error is not None
    assert error.applied.startswith("last_known: serving the verdict from ")
    assert "for up to 500 s, then fail_open: calls pass UNCHECKED" in error.applied
    [line] = logged(logging.ERROR)
    assert error.applied in line


def test_raise_says_so_and_carries_the_error(logged: Callable[[int], list[str]]) -> None:
    client = sync_client(Server(500, HTML_500), Clock(NOW), policy="raise")
    with pytest.raises(CurfewUnavailable) as raised:
        client.verdict()
    assert raised.value.error is client.last_error
    assert client.last_error is not None
    assert client.last_error.applied.startswith("raise: verdict() raises CurfewUnavailable")
    assert len(logged(logging.ERROR)) == 1


def test_health_is_what_a_gateway_health_check_reads() -> None:
    clock = Clock(NOW)
    server = Server(200, WINDING)
    client = sync_client(server, clock)
    assert client.health() == CurfewHealth(
        ok=True,
        last_error=None,
        last_success=None,
        serving_policy=False,
        policy_answered=0,
        policy="fail_open",
    )
    client.verdict(session_id="a")
    server.answer = (500, HTML_500)
    clock.now += 10
    client.verdict(session_id="b")
    client.verdict(session_id="a")  # still fresh: the server's verdict, from the cache
    client.verdict(session_id="c")  # backing off: the policy's
    health = client.health()
    assert (health.ok, health.last_success, health.serving_policy) == (False, NOW, True)
    assert health.policy_answered == 2
    assert health.last_error is client.last_error
    body = health.as_dict()
    assert json.loads(json.dumps(body)) == body  # ready for a health endpoint
    assert body["last_error"] == {
        "kind": "http_error",
        "status": 500,
        "message": client.last_error.message if client.last_error else None,
        "applied": "fail_open: calls pass UNCHECKED until the server answers"
        " — no curfew is enforced",
        "policy": "fail_open",
        "at": NOW + 10,
        "since": NOW + 10,
    }


async def test_the_async_client_says_it_the_same_way(
    logged: Callable[[int], list[str]],
) -> None:
    clock = Clock(NOW)
    server = Server(500, HTML_500)
    async with AsyncCurfewClient(
        SERVER,
        "t",
        transport=httpx.MockTransport(server),
        clock=clock,
        retry_interval=2,
        report_decisions=False,
    ) as client:
        assert (await client.verdict()).origin == "fail_open"
        error = client.last_error
        assert error is not None
        assert (error.kind, error.status) == ("http_error", 500)
        [line] = logged(logging.ERROR)
        assert "HTML" in line
        assert "no curfew is enforced" in line
        clock.now += 3
        await client.verdict()
        assert len(logged(logging.ERROR)) == 1

        server.answer = httpx.ConnectError("[Errno 111] Connection refused")
        clock.now += 3
        await client.verdict()
        assert client.last_error is not None
        assert client.last_error.kind == "unreachable"
        assert len(logged(logging.ERROR)) == 2

        server.answer = (200, WINDING)
        clock.now += 3
        assert (await client.verdict()).origin == "server"
        assert client.last_error is None
        assert client.healthy
        assert client.health().ok
        assert len(logged(logging.WARNING)) == 1


async def test_an_async_timeout_is_unreachable() -> None:
    clock = Clock(NOW)

    async def never(request: httpx.Request) -> httpx.Response:
        raise TimeoutError

    async with AsyncCurfewClient(
        SERVER,
        "t",
        transport=httpx.MockTransport(never),
        clock=clock,
        timeout=0.5,
        report_decisions=False,
    ) as client:
        await client.verdict()
    assert client.last_error is not None
    assert client.last_error.kind == "unreachable"
    assert "no answer within 0.5 s" in client.last_error.message
