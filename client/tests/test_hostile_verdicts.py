"""Verdict answers from a hostile or broken server (issue 41).

An answer no Curfew server writes is no verdict: the outage policy answers
(``fail_open`` passes as it would in an outage, ``fail_closed`` holds), nothing
is cached, and no budget is ever raised. Reading an answer is bounded in
bytes and in time, in both flavours.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from curfew_client.policy import MAX_FRESH
from curfew_client.transport import MAX_ANSWER
from fake_clock import Clock
from wire_samples import WINDING

NOW = 1_790_000_000.0
Policy = Literal["fail_open", "fail_closed"]

ABSURD: list[dict[str, Any]] = [
    {"max_tokens": -5},
    {"max_tokens": 0},
    {"max_tokens": 10**30},
    {"budget": -1},
    {"budget": 10**30},
    {"progress": -7.0},
    {"progress": float("nan")},
    {"progress": float("inf")},
    {"state": "party"},
    {"action": "raise-the-budget"},
    {"valid_until": "9999-12-31T23:59:59-23:59", "max_age": None},
    {"valid_until": "9999-12-31T23:59:59+00:00"},
    {"at": "0001-01-01T00:00:00+23:59"},
    {"override_until": "9999-12-31T23:59:59-23:59", "override": "overtime"},
    {
        "would": {
            "action": "clamp",
            "reply": None,
            "max_tokens": -1,
            "persona": None,
            "tools": "allow",
            "reasoning_effort": None,
        },
        "dry_run": True,
    },
]


def _client(handler: Any, *, policy: Policy = "fail_open", clock: Clock | None = None) -> Any:
    return CurfewClient(
        "http://curfew",
        "cfw_t",
        transport=httpx.MockTransport(handler),
        clock=clock or Clock(NOW),
        policy=policy,
        report_decisions=False,
        timeout=0.2,
    )


@pytest.mark.parametrize("policy", ["fail_open", "fail_closed"])
@pytest.mark.parametrize("absurd", ABSURD, ids=lambda over: ",".join(over))
def test_an_absurd_verdict_is_no_verdict(absurd: dict[str, Any], policy: Policy) -> None:
    body = json.dumps({**WINDING, **absurd}).encode()
    gateway = _client(lambda request: httpx.Response(200, content=body), policy=policy)
    try:
        verdict = gateway.verdict(max_tokens=500)
        assert verdict.origin == policy
        assert gateway.cache.entries == {}
        asked = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 500}
        if policy == "fail_open":
            assert verdict.apply(asked) == asked  # passed as in an outage, never raised
        else:
            assert verdict.short_circuit
        assert gateway.last_error is not None
        assert gateway.last_error.kind == "bad_answer"
    finally:
        gateway.close()


def test_a_sane_verdict_still_is_one() -> None:
    body = json.dumps(WINDING).encode()
    gateway = _client(lambda request: httpx.Response(200, content=body))
    try:
        verdict = gateway.verdict(max_tokens=500)
        assert verdict.origin == "server"
        assert verdict.max_tokens == 500  # min(500, 1000)
    finally:
        gateway.close()


def test_a_far_valid_until_is_fresh_for_a_day_at_most() -> None:
    clock = Clock(NOW)
    asked: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(1)
        far = {**WINDING, "valid_until": "2999-01-01T00:00:00+00:00", "max_age": None}
        return httpx.Response(200, json=far)

    gateway = _client(handler, clock=clock)
    try:
        gateway.verdict()
        clock.now += MAX_FRESH - 1
        gateway.verdict()
        assert len(asked) == 1
        clock.now += 2
        gateway.verdict()
        assert len(asked) == 2  # asked again after a day, not in the year 2999
    finally:
        gateway.close()


def test_a_refusal_nested_too_deep_is_no_crash() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    for status in (400, 404, 422, 500):
        gateway = _client(lambda request, status=status: httpx.Response(status, content=body))
        try:
            verdict = gateway.verdict(user="ada")
            assert verdict.origin == "fail_open"
        finally:
            gateway.close()


class Counted:
    """An answer's body handed out in chunks, counted (how much was read)."""

    def __init__(self, chunk: bytes, total: int, pause: float = 0.0) -> None:
        self.chunk, self.total, self.pause = chunk, total, pause
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        while self.sent < self.total:
            if self.pause:
                time.sleep(self.pause)
            self.sent += len(self.chunk)
            yield self.chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.sent < self.total:
            self.sent += len(self.chunk)
            yield self.chunk
            await asyncio.sleep(0)


def test_a_huge_answer_is_not_read_to_its_end() -> None:
    body = Counted(b" " * 65536, 64 * 1024 * 1024)  # JSON may start with blanks
    gateway = _client(lambda request: httpx.Response(200, content=iter(body)))
    try:
        assert gateway.verdict().origin == "fail_open"
        assert body.sent <= MAX_ANSWER + 65536
    finally:
        gateway.close()


def test_a_declared_huge_answer_is_not_read_at_all() -> None:
    body = Counted(b" " * 65536, 64 * 1024 * 1024)
    headers = {"Content-Length": str(body.total)}
    gateway = _client(lambda request: httpx.Response(200, headers=headers, content=iter(body)))
    try:
        assert gateway.verdict().origin == "fail_open"
        assert body.sent <= 65536
    finally:
        gateway.close()


async def test_the_async_client_reads_no_huge_answer_either() -> None:
    body = Counted(b" " * 65536, 64 * 1024 * 1024)
    gateway = AsyncCurfewClient(
        "http://curfew",
        "cfw_t",
        transport=httpx.MockTransport(lambda request: httpx.Response(200, content=body)),
        clock=Clock(NOW),
        report_decisions=False,
        timeout=5.0,
    )
    try:
        assert (await gateway.verdict()).origin == "fail_open"
        assert body.sent <= MAX_ANSWER + 65536
    finally:
        await gateway.aclose()


def test_a_trickling_answer_is_cut_off_after_its_deadline() -> None:
    """A byte at a time, each within the read timeout: per read, httpx would
    wait for ever; the answer's deadline stops it (counted in bytes, not timed)."""
    body = Counted(b" ", 10_000, pause=0.01)  # 100 s if read to its end
    gateway = _client(lambda request: httpx.Response(200, content=iter(body)))
    try:
        verdict = gateway.verdict()
        assert verdict.origin == "fail_open"
        assert body.sent < 1000
    finally:
        gateway.close()


def test_a_slow_loris_over_a_real_socket_holds_one_call_briefly() -> None:
    """The same over TCP: headers, then a blank every 0.1 s (each read well
    within the 0.2 s timeout), for up to 60 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    sent = [0]
    done = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            try:
                while not done.is_set() and sent[0] < 600:
                    connection.sendall(b"1\r\n \r\n")
                    sent[0] += 1
                    done.wait(0.1)
            except OSError:
                return  # the client hung up: what it should do

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    gateway = CurfewClient(f"http://127.0.0.1:{port}", "cfw_t", timeout=0.2, report_decisions=False)
    try:
        assert gateway.verdict().origin == "fail_open"
        assert sent[0] < 50  # cut off within a few reads, not after a minute
    finally:
        done.set()
        gateway.close()
        listener.close()
        thread.join(timeout=5)


def _reporting_server(body: Counted, *, asynchronous: bool = False) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/decisions"):
            content = aiter(body) if asynchronous else iter(body)
            return httpx.Response(200, content=content)
        return httpx.Response(200, json=WINDING)

    return httpx.MockTransport(handler)


def test_an_endless_answer_to_a_decision_report_is_not_read_to_its_end() -> None:
    body = Counted(b" " * 65536, 64 * 1024 * 1024)
    gateway = CurfewClient(
        "http://curfew", "cfw_t", transport=_reporting_server(body), clock=Clock(NOW)
    )
    try:
        gateway.verdict()
        gateway.verdict()  # from the cache: a decision to report
        gateway.flush_reports()
        assert body.sent > 0
        assert body.sent <= MAX_ANSWER + 65536
    finally:
        gateway.close()


async def test_the_async_reporter_reads_no_endless_answer_either() -> None:
    body = Counted(b" " * 65536, 64 * 1024 * 1024)
    transport = _reporting_server(body, asynchronous=True)
    gateway = AsyncCurfewClient("http://curfew", "cfw_t", transport=transport, clock=Clock(NOW))
    try:
        await gateway.verdict()
        await gateway.verdict()
        await gateway.flush_reports()
        assert body.sent > 0
        assert body.sent <= MAX_ANSWER + 65536
    finally:
        await gateway.aclose()
