"""Decisions answered from the cache are reported to the ledger in batches, in
the background, each counted once: a recording fake Curfew (a MockTransport)
sees the reports, and a scripted one refuses them to prove the retries."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from curfew_client.reporting import DecisionLog
from fake_clock import Clock
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
SRC = Path(__file__).resolve().parents[1] / "src"


class FakeCurfew:
    """Answers verdicts with ``WINDING`` and records every report, with the
    thread it arrived on. ``script`` answers the next reports (status, headers)
    before the default 200; a status of 0 is a network error."""

    def __init__(self) -> None:
        self.verdicts = 0
        self.reports: list[list[dict[str, Any]]] = []
        self.threads: list[threading.Thread] = []
        self.script: list[tuple[int, dict[str, str]]] = []
        self.stored: dict[str, dict[str, Any]] = {}
        self.gate: threading.Event | None = None
        self.released: list[bool] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/verdict":
            self.verdicts += 1
            return httpx.Response(200, json=WINDING)
        assert request.url.path == "/api/v1/decisions"
        assert request.method == "POST"
        assert request.headers["Authorization"] == "Bearer t"
        batch = json.loads(request.content)["decisions"]
        with self.lock:
            self.reports.append(batch)
            self.threads.append(threading.current_thread())
            answer = self.script.pop(0) if self.script else (200, {})
        if self.gate is not None:
            self.released.append(self.gate.wait(10))
        status, headers = answer
        if status == 0:
            raise httpx.ConnectError("connection refused", request=request)
        if status != 200:
            return httpx.Response(status, headers=headers, json={"error": "x", "message": "y"})
        new = [d for d in batch if d["id"] not in self.stored]
        for decision in new:
            self.stored[decision["id"]] = decision
        return httpx.Response(200, json={"received": len(batch), "stored": len(new)})

    def ids(self, n: int) -> list[str]:
        return [d["id"] for d in self.reports[n]]


def client(fake: FakeCurfew, clock: Callable[[], float] = lambda: NOW, **kw: Any) -> CurfewClient:
    kw.setdefault("report_interval", 3600)  # only what a test asks for is sent
    return CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(fake), clock=clock, **kw
    )


def until(condition: Callable[[], bool]) -> None:
    """Wait for the background sender (a deadline against hanging, not a timing)."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the background sender never sent"
        time.sleep(0.01)


def test_cached_answers_are_reported_and_the_asked_one_is_not() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    with client(fake, clock) as c:
        c.verdict(session_id="s", purpose="chat", max_tokens=4000)  # asked: the server records it
        for budget in (4000, 300, None):
            clock.now += 1
            c.verdict(session_id="s", purpose="chat", max_tokens=budget)
        c.flush_reports()
    assert fake.verdicts == 1
    assert len(fake.reports) == 1
    [batch] = fake.reports
    assert [(d["budget_before"], d["budget_after"]) for d in batch] == [
        (4000, 1000),  # clamped to the verdict's ceiling
        (300, 300),  # min, never a raise
        (None, 1000),
    ]
    first = batch[0]
    assert first["at"] == datetime.fromtimestamp(NOW + 1, tz=UTC).isoformat()
    assert (first["state"], first["action"], first["reason"]) == (
        "winding",
        "clamp",
        WINDING["reason"],
    )
    assert (first["session_id"], first["purpose"], first["exempt"], first["dry_run"]) == (
        "s",
        "chat",
        False,
        False,
    )
    assert len({d["id"] for d in batch}) == 3
    assert fake.stored.keys() == {d["id"] for d in batch}


def test_the_background_sender_reports_within_the_interval_without_being_asked() -> None:
    fake = FakeCurfew()
    c = client(fake, report_interval=0.05)
    c.verdict(session_id="s")
    for _ in range(7):
        c.verdict(session_id="s")
    until(lambda: sum(map(len, fake.reports)) == 7)
    assert all(t is not threading.main_thread() for t in fake.threads)
    c.close()
    assert sum(map(len, fake.reports)) == 7  # nothing twice


def test_a_full_batch_is_sent_before_the_interval() -> None:
    fake = FakeCurfew()
    with client(fake, report_batch=10) as c:  # the interval is an hour
        c.verdict(session_id="s")
        for _ in range(25):
            c.verdict(session_id="s")
        until(lambda: sum(map(len, fake.reports)) >= 20)  # the interval is an hour
        assert all(t is not threading.main_thread() for t in fake.threads)
    assert all(len(b) <= 10 for b in fake.reports)
    assert len(fake.stored) == 25


@pytest.mark.parametrize(
    ("answer", "waited"),
    [
        ((503, {"Retry-After": "120"}), 120),
        ((429, {"Retry-After": "30"}), 30),
        ((503, {}), 1),  # no advice: the backoff's own first step (1 s and jitter)
        ((0, {}), 1),  # the network
    ],
)
def test_a_failed_report_is_retried_with_the_same_ids_not_before_retry_after(
    answer: tuple[int, dict[str, str]], waited: float
) -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [answer]
    with client(fake, clock) as c:
        c.verdict(session_id="s")
        for _ in range(3):
            c.verdict(session_id="s")
        c.flush_reports()
        assert len(fake.reports) == 1
        c.verdict(session_id="s")  # a newer decision waits for the next batch
        clock.now += waited - 0.01 if waited > 1 else 0.99
        c.flush_reports()
        assert len(fake.reports) == 1  # not before the advice (or the backoff)
        clock.now += 0.5 if waited == 1 else 0.02
        c.flush_reports()
        assert c.reports is not None
        assert c.reports.delivered == 4
    assert len(fake.reports) == 3
    assert fake.ids(1) == fake.ids(0)  # the retry: the very same ids, stored once
    assert len(fake.reports[2]) == 1
    assert len(fake.stored) == 4


def test_the_backoff_grows_while_the_server_keeps_failing() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [(503, {})] * 4
    with client(fake, clock) as c:
        c.verdict(session_id="s")
        c.verdict(session_id="s")
        reports = c.reports
        assert reports is not None
        waits = []
        for _ in range(4):
            before = clock.now
            c.flush_reports()
            waits.append(reports.retry_at - before)
            clock.now = reports.retry_at
        assert [w >= 2**n for n, w in enumerate(waits)] == [True] * 4  # 1, 2, 4, 8 s at least
        c.flush_reports()
    assert len({tuple(fake.ids(n)) for n in range(5)}) == 1
    assert len(fake.stored) == 1


def test_a_refused_report_is_dropped_and_counted_not_retried() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [(422, {})]
    with client(fake, clock) as c:
        c.verdict(session_id="s")
        c.verdict(session_id="s")
        c.flush_reports()
        clock.now += 3600
        c.flush_reports()
        assert c.reports is not None
        assert (c.reports.refused, c.reports.waiting) == (1, 0)
    assert len(fake.reports) == 1


def test_a_server_without_a_ledger_is_not_reported_to_again() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [(404, {})]
    with client(fake, clock) as c:
        c.verdict(session_id="s")
        c.verdict(session_id="s")
        c.flush_reports()
        for _ in range(3):
            c.verdict(session_id="s")
        clock.now += 10
        c.flush_reports()
        assert c.reports is not None
        assert (c.reports.unsupported, c.reports.refused, c.reports.waiting) == (True, 1, 0)
    assert len(fake.reports) == 1  # close() sent nothing either


def test_the_queue_is_bounded_the_oldest_dropped_and_counted() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [(503, {"Retry-After": "3600"})]
    with client(fake, clock, report_batch=5, report_queue=10) as c:
        c.verdict(session_id="s")
        for _ in range(5):
            c.verdict(session_id="s")
        c.flush_reports()  # refused: those 5 wait in the outbox for an hour
        for n in range(25):
            clock.now = NOW + 10 + n  # within max_age: all cached
            c.verdict(session_id="s")
        reports = c.reports
        assert reports is not None
        assert (len(reports.pending), reports.dropped) == (10, 15)
        kept = [at for at, *_ in reports.pending]
        assert kept == [NOW + 10 + n for n in range(15, 25)]  # the newest
        fake.script = []
    # close() sends what is left, the backoff notwithstanding: 5 + 10.
    assert len(fake.stored) == 15


def test_close_and_the_context_flush_what_is_left() -> None:
    fake = FakeCurfew()
    c = client(fake)
    c.verdict(session_id="s")
    c.verdict(session_id="s", max_tokens=10)
    c.close()
    assert [len(b) for b in fake.reports] == [1]
    assert fake.threads == [threading.main_thread()]  # close() waited for it


def test_close_never_raises_nor_hangs_with_the_server_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeCurfew()
    fake.script = [(0, {})] * 10
    c = client(fake)
    c.verdict(session_id="s")
    c.verdict(session_id="s")
    c.close()  # one try, then given up, and said so (not "retrying")
    assert len(fake.reports) == 1
    assert [r.getMessage() for r in caplog.records if r.name == "curfew.client.reports"] == [
        "1 decision(s) not reported: the curfew server did not take them"
    ]


def test_the_hot_path_never_waits_for_a_report() -> None:
    """A report in flight is held open by the fake; the cached calls all answer
    meanwhile, none sends anything itself, and then the report is let go."""
    fake = FakeCurfew()
    fake.gate = threading.Event()
    c = client(fake, report_batch=10)
    c.verdict(session_id="s")
    for _ in range(10):
        c.verdict(session_id="s")  # a full batch: the sender starts its report
    until(lambda: len(fake.reports) == 1)  # and it is now held
    requests = len(fake.reports) + fake.verdicts
    for _ in range(1000):
        c.verdict(session_id="s")
    assert len(fake.reports) + fake.verdicts == requests  # the calls sent nothing themselves
    fake.gate.set()
    c.close()
    assert all(fake.released)  # let go by the test, never timed out waiting for it
    assert fake.threads[0] is not threading.main_thread()
    assert sum(map(len, fake.reports)) == 1010


def test_an_outage_policy_answer_is_not_reported() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)

    def down(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/verdict":
            raise httpx.ConnectError("down", request=request)
        return fake(request)

    with CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(down), clock=clock, report_interval=3600
    ) as c:
        for _ in range(5):
            assert c.verdict(session_id="s").origin == "fail_open"
        assert c.reports is not None
        assert c.reports.waiting == 0
    assert fake.reports == []


def test_report_decisions_false_reports_nothing() -> None:
    fake = FakeCurfew()
    with client(fake, report_decisions=False) as c:
        for _ in range(5):
            c.verdict(session_id="s")
        assert c.reports is None
    assert fake.reports == []


def test_the_batch_and_the_queue_are_checked() -> None:
    with pytest.raises(ValueError, match="report_batch"):
        client(FakeCurfew(), report_batch=501)
    with pytest.raises(ValueError, match="report_queue"):
        client(FakeCurfew(), report_batch=100, report_queue=99)


def test_ids_are_unique_per_client_and_per_fork() -> None:
    def make() -> DecisionLog:
        return DecisionLog(interval=1, batch=1, limit=1, clock=time.time, nudge=lambda: None)

    one, two = make(), make()
    assert one.prefix != two.prefix
    before = one.prefix
    one.pending.append((NOW, ("s", None, False), None, None))  # type: ignore[arg-type]
    one.forked()  # what a forked child runs
    assert one.prefix != before
    assert (len(one.pending), one.running) == (0, False)


# -- the asyncio flavour -------------------------------------------------------------


def aclient(fake: FakeCurfew, clock: Callable[[], float] = lambda: NOW, **kw: Any) -> Any:
    kw.setdefault("report_interval", 3600)
    return AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(fake), clock=clock, **kw
    )


async def test_async_cached_answers_and_joined_callers_are_reported_once() -> None:
    fake = FakeCurfew()
    gate = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/verdict":
            await gate.wait()
        return fake(request)

    async with AsyncCurfewClient(
        "http://curfew",
        "t",
        transport=httpx.MockTransport(slow),
        clock=lambda: NOW,
        report_interval=3600,
    ) as c:
        burst = [asyncio.ensure_future(c.verdict(session_id="s")) for _ in range(5)]
        await asyncio.sleep(0.01)
        gate.set()
        await asyncio.gather(*burst)  # one request; four callers joined it
        for _ in range(3):
            await c.verdict(session_id="s")  # cached
        assert fake.verdicts == 1
    assert [len(b) for b in fake.reports] == [7]  # 4 joined + 3 cached; the asker is the server's


async def test_async_background_sender_and_retry_with_the_same_ids() -> None:
    fake, clock = FakeCurfew(), Clock(NOW)
    fake.script = [(503, {"Retry-After": "5"})]
    async with aclient(fake, clock, report_interval=0.05) as c:
        await c.verdict(session_id="s")
        for _ in range(3):
            await c.verdict(session_id="s")
        deadline = time.monotonic() + 10
        while not fake.reports:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert fake.threads[0] is threading.main_thread()  # the loop's own task
        await asyncio.sleep(0.2)
        assert len(fake.reports) == 1  # Retry-After: 5 on the client's clock
        clock.now += 5
        while len(fake.reports) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
    assert fake.ids(1) == fake.ids(0)
    assert len(fake.stored) == 3


async def test_async_hot_path_never_waits_for_a_report() -> None:
    """The report task's request is held open; the cached calls on the same loop
    all answer meanwhile, and none of them sent anything."""
    fake = FakeCurfew()
    held, release = asyncio.Event(), asyncio.Event()

    async def holding(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions" and not release.is_set():
            held.set()
            await asyncio.wait_for(release.wait(), 10)
        return fake(request)

    async with AsyncCurfewClient(
        "http://curfew",
        "t",
        transport=httpx.MockTransport(holding),
        clock=lambda: NOW,
        report_interval=3600,
        report_batch=10,
    ) as c:
        await c.verdict(session_id="s")
        for _ in range(10):
            await c.verdict(session_id="s")  # a full batch: the task starts its report
        await asyncio.wait_for(held.wait(), 10)
        requests = len(fake.reports) + fake.verdicts
        for _ in range(1000):
            await c.verdict(session_id="s")
        assert len(fake.reports) + fake.verdicts == requests
        release.set()
    assert sum(map(len, fake.reports)) == 1010
    assert len(fake.stored) == 1010


async def test_async_opt_out_and_outage_report_nothing() -> None:
    fake = FakeCurfew()
    async with aclient(fake, report_decisions=False) as c:
        for _ in range(3):
            await c.verdict(session_id="s")
    assert fake.reports == []

    def down(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/verdict":
            raise httpx.ConnectError("down", request=request)
        return fake(request)

    async with AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(down), clock=lambda: NOW
    ) as c:
        for _ in range(3):
            assert (await c.verdict(session_id="s")).origin == "fail_open"
    assert fake.reports == []


# -- at exit -------------------------------------------------------------------------

SCRIPT = """
import asyncio, sys
from curfew_client import AsyncCurfewClient, CurfewClient
url, flavour = sys.argv[1], sys.argv[2]
if flavour == "sync":
    c = CurfewClient(url, "t", report_interval=3600, timeout=10.0)
    for _ in range(4):
        c.verdict(session_id="s")
else:
    c = AsyncCurfewClient(url, "t", report_interval=3600, timeout=10.0)
    async def main():
        for _ in range(4):
            await c.verdict(session_id="s")
    asyncio.run(main())
# no close(): the interpreter's exit sends what is left
"""
# (The verdict's timeout is generous: a cold process on a busy machine may take
# longer than the default half second to its first answer; this is about exit.)


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_what_is_left_is_sent_at_exit(flavour: str, tmp_path: Path) -> None:
    fake = FakeCurfew()
    answer = dict(WINDING, valid_until="2099-01-01T00:00:00+00:00")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path.endswith("/decisions"):
                fake.reports.append(body["decisions"])
                data = json.dumps({"received": 3, "stored": 3}).encode()
            else:
                fake.verdicts += 1
                data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        script = tmp_path / "gateway.py"
        script.write_text(textwrap.dedent(SCRIPT))
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = subprocess.run(
            [sys.executable, str(script), url, flavour],
            env={"PYTHONPATH": str(SRC)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
    assert fake.verdicts == 1
    assert [len(b) for b in fake.reports] == [3]


@pytest.mark.parametrize("budget", [10_000_001, 2**31, 2**63])
def test_a_budget_beyond_the_servers_bound_is_reported_at_the_bound(budget: int) -> None:
    """The server refuses a report whose budget exceeds ``MAX_TOKENS`` (issue
    23), and with it every other decision of the batch: the client caps it,
    as it cuts text the server would refuse."""
    from curfew_client.reporting import MAX_TOKENS

    fake = FakeCurfew()
    with client(fake) as c:
        c.verdict(session_id="s", max_tokens=4096)
        c.verdict(session_id="s", max_tokens=budget)
        c.verdict(session_id="s", max_tokens=MAX_TOKENS)
        c.flush_reports()
    [batch] = fake.reports
    # WINDING clamps: the budget allowed is the clamp, the one asked is capped.
    assert [d["budget_before"] for d in batch] == [MAX_TOKENS, MAX_TOKENS]
    assert MAX_TOKENS == 10_000_000


def test_a_team_keys_cached_answers_are_reported_for_their_member() -> None:
    """A team key's cached verdicts are reported, each naming the member it
    was for (the server stores each under that member); a personal token's
    name nobody (the control)."""
    fake = FakeCurfew()
    team = CurfewClient(
        "http://curfew",
        "cft_team",
        transport=httpx.MockTransport(lambda request: _as_team(fake, request)),
        clock=lambda: NOW,
        report_interval=3600,
    )
    with team as c:
        for name in ("alice", "bob", "alice", "bob"):
            c.verdict(user=name)
        c.flush_reports()
    assert [d["user"] for batch in fake.reports for d in batch] == ["alice", "bob"]
    personal = FakeCurfew()
    with client(personal) as c:
        c.verdict()
        c.verdict()
        c.flush_reports()
    assert [("user" in d) for batch in personal.reports for d in batch] == [False]


def _as_team(fake: FakeCurfew, request: httpx.Request) -> httpx.Response:
    """``fake``, for the team key's bearer header."""
    assert request.headers["Authorization"] == "Bearer cft_team"
    request.headers["Authorization"] = "Bearer t"
    return fake(request)
