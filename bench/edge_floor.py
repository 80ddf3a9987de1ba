"""The edge against the floor of the server (issue 21).

    python -m bench.edge_floor [--seconds 4] [--rounds 3] [--connections 32]
                               [--client auto|wrk|loadgen] [--write docs/benchmarks/edge.md]

Serves, side by side in one run and with identical uvicorn flags (one worker,
``curfew_testkit.server.ServedApp``'s: SQLite, the process-local cache):

- a raw ASGI hello-world app (``curfew_testkit.hello``): the server's floor,
  what any ASGI app pays at least;
- a trivial Django view in Curfew's stack (``GET /healthz``: Django's handler
  and middleware, a ``JsonResponse``);
- the warm ``POST /api/v1/verdict`` (the edge, the engine, the ledger on);
- the warm ``GET /api/v1/state``.

Each is loaded from a second process on loopback (``wrk`` when installed, one
thread; else the project's ``curfew_testkit.loadgen``) with a fixed number of
keep-alive connections for a fixed time, in interleaved rounds (every row in
each round, so a busy machine slows all alike); the medians of the rounds are
printed, with each row's throughput against the floor and against the trivial
view. Issue 21's target: the warm verdict at 0.33x the floor or more (Curfew's
own work per verdict at most twice the server's per-request cost).

``--callgrind N`` also counts the instructions each row costs inside its
server (valgrind's callgrind, counting only while N requests are answered one
after another). The count is the event loop's thread's (the main thread:
the server and every warm request run there); every thread's is printed
and recorded beside it. The pool threads do the cold reads the process-local
cache takes every few seconds of wall time, and the once-a-minute stamp of a
token's last use: under valgrind, fifty times slower, those seconds hold a
few hundred requests, not tens of thousands, so on a busy machine they came
to more than the warm requests themselves (one run counted 755k
instructions a verdict on every thread, the same code 396k on a quiet
machine). The loop's thread has clock work of its own too (uvicorn ticks
ten times a second): each server is first counted idle for
``IDLE_SECONDS``, and that rate, times the requests' wall time, is taken
out of its count. So the count does not move with whatever else the
machine runs. The ledger's flusher is left out of either (its interval
set to an hour; under valgrind a second holds a few dozen decisions, not
thousands, so its per-flush work would be charged to too few).

``--write FILE`` also records the run in FILE (markdown): the runs already
there are kept, this one is added, and the summary table over all of them is
made anew, so running it before and after a change gives the comparison.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.record import Page, loadavg, machine, revision, run_facts, versions
from curfew_testkit.loadgen import build_request, is_verdict, load
from curfew_testkit.server import ServedApp

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.33
VERDICT_BODY = b'{"max_tokens": 4096}'
#: Where a run is kept in the written file: one JSON line per run.
RUN_MARK = "<!-- edge_floor run: "
#: The rows served by an app of their own (the rest: the site).
APPS = {"floor": "curfew_testkit.hello:app", "shaped": "curfew_testkit.hello:shaped"}


@dataclass
class Row:
    key: str
    label: str
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    verdict: bool = False
    rates: list[float] = field(default_factory=list)
    p50s: list[float] = field(default_factory=list)
    p99s: list[float] = field(default_factory=list)
    errors: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "rate": round(statistics.median(self.rates), 1),
            "p50_ms": round(statistics.median(self.p50s), 2),
            "p99_ms": round(statistics.median(self.p99s), 2),
            "errors": self.errors,
        }


# -- the load ---------------------------------------------------------------------------


def _lua(text: str) -> str:
    return "[==[" + text + "]==]"


def wrk_slice(row: Row, *, connections: int, seconds: int) -> tuple[float, float, float, int]:
    """``(req/s, p50 ms, p99 ms, errors)`` of one wrk run (one thread)."""
    lines = [f"wrk.method = {_lua(row.method)}", f"wrk.body = {_lua(row.body.decode())}"]
    lines += [f"wrk.headers[ {_lua(k)} ] = {_lua(v)}" for k, v in row.headers.items()]
    lines.append(
        "done = function(s, latency, requests)\n"
        "  local e = s.errors\n"
        '  io.write(string.format("EDGE-FLOOR %d %d %d %d %d %d\\n", s.requests, s.duration,\n'
        "    latency:percentile(50), latency:percentile(99),\n"
        "    e.connect + e.read + e.write + e.timeout, e.status))\n"
        "end\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines))
    try:
        done = subprocess.run(
            [
                "wrk",
                "-t1",
                f"-c{connections}",
                f"-d{seconds}s",
                "--timeout",
                "10s",
                "-s",
                script.name,
                row.url,
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 30,
        )
    finally:
        os.unlink(script.name)
    found = re.search(r"^EDGE-FLOOR (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", done.stdout, re.M)
    if found is None:
        raise RuntimeError(f"wrk said: {done.stdout}{done.stderr}")
    requests, duration_us, p50_us, p99_us, socket_errors, status_errors = map(int, found.groups())
    ok = requests - status_errors
    return ok / duration_us * 1e6, p50_us / 1000, p99_us / 1000, socket_errors + status_errors


def loadgen_slice(row: Row, *, connections: int, seconds: int) -> tuple[float, float, float, int]:
    request = build_request(row.method, row.url, headers=row.headers, body=row.body)
    kwargs = {"check": is_verdict} if row.verdict else {}
    report = load(request, clients=connections, seconds=seconds, **kwargs)
    return report.rate, report.percentile(0.5), report.percentile(0.99), report.errors


#: What the server writes itself (not the app's headers): ``connection: close``
#: answers urllib's own ``Connection: close``.
SERVER_HEADERS = frozenset({"date", "server", "connection"})


def check_answer(row: Row) -> dict[str, Any]:
    """One request first: the row answers what it should (wrk counts statuses
    only). Returns the answer's shape, as ``hello.shaped`` takes it: the app's
    headers (lower case, in order) and the body's length."""
    request = urllib.request.Request(
        row.url, data=row.body or None, headers=row.headers, method=row.method
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        body = answer.read()
        headers = [
            [name.lower(), value]
            for name, value in answer.getheaders()
            if name.lower() not in SERVER_HEADERS
        ]
    if row.verdict and not is_verdict(body):
        raise SystemExit(f"{row.label}: not a verdict: {body[:300]!r}")
    if row.key == "state" and b'"day"' not in body:
        raise SystemExit(f"{row.label}: not a state: {body[:300]!r}")
    return {"headers": headers, "length": len(body)}


def shaped_floor(verdict: Row, env: dict[str, str]) -> tuple[ServedApp, Row]:
    """The server's floor for ``verdict``'s own exchange, started: a raw app
    (``hello.shaped``) answering its request with its answer's headers and
    length, under the floor's flags; and the row that asks it as ``verdict``
    asks its own server."""
    shape = json.dumps(check_answer(verdict))
    shaped = ServedApp(
        Path(tempfile.mkdtemp(prefix="curfew-shaped-")),
        env={**env, "CURFEW_HELLO_SHAPE": shape},
        app=APPS["shaped"],
    )
    shaped.start()
    path = urlsplit(verdict.url).path
    row = Row(
        "shaped",
        "raw ASGI app, the verdict's exchange",
        "POST",
        shaped.base_url + path,
        verdict.headers,
        VERDICT_BODY,
    )
    return shaped, row


def callgrind_counts(
    rows: list[Row], site: ServedApp, env: dict[str, str], count: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Instructions per request of each row inside its own server (see the
    docstring): on the event loop's thread, and on every thread."""
    counts: dict[str, float] = {}
    every: dict[str, float] = {}
    for row in rows:
        app = APPS.get(row.key, "curfew_site.asgi:application")
        server = _Callgrind(
            site.workdir, env={**env, "CURFEW_LEDGER_FLUSH_SECONDS": "3600"}, app=app
        )
        many = count if row.key != "trivial" else max(1, count // 8)
        try:
            server.start(timeout=600)
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            _ask(connection, row, 50)
            server.instrument("on")
            # The loop's own clock work first, idle (uvicorn ticks ten times a
            # second): its rate, times the requests' wall time, is taken out.
            started = time.monotonic()
            time.sleep(IDLE_SECONDS)
            server.control("-d")
            idle_rate = server.loop_thread(dump=1) / (time.monotonic() - started)
            # Idle longer than uvicorn keeps a connection: a new one, used once
            # before the count starts.
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            _ask(connection, row, 5)
            server.control("-z")
            started = time.monotonic()
            _ask(connection, row, many)
            server.instrument("off")
            elapsed = time.monotonic() - started
            connection.close()
        finally:
            server.stop()
        counts[row.key] = max(0.0, server.loop_thread() - idle_rate * elapsed) / many
        every[row.key] = server.collected() / many
    return counts, every


#: How long each server is counted idle first (``callgrind_counts``).
IDLE_SECONDS = 5


def _ask(connection: http.client.HTTPConnection, row: Row, times: int) -> None:
    path = urlsplit(row.url).path
    for _ in range(times):
        connection.request(row.method, path, body=row.body or None, headers=row.headers)
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            raise SystemExit(f"{row.label} under callgrind: HTTP {answer.status}")


class _Callgrind(ServedApp):
    """The same server under callgrind, counting only when told to."""

    def command(self) -> list[str]:
        self.out = self.workdir / f"callgrind-{self.port}.out"
        return [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            # A file per thread: the event loop's (the main thread) is read apart.
            "--separate-threads=yes",
            f"--callgrind-out-file={self.out}",
            *super().command(),
        ]

    def instrument(self, state: str) -> None:
        self.control("-i", state)

    def control(self, *args: str) -> None:
        """``callgrind_control`` on the server (it returns once the server did it)."""
        assert self.process is not None
        subprocess.run(
            ["callgrind_control", *args, str(self.process.pid)],
            capture_output=True,
            check=True,
            timeout=120,
        )

    def stop(self) -> None:
        if self.process is not None:
            self.terminate()
            self.wait_stopped(timeout=120)

    def loop_thread(self, dump: int | None = None) -> int:
        """What the main thread (the server's event loop) ran while counted:
        since the last zeroing, at exit, or in the ``dump``-th dump."""
        part = "" if dump is None else f".{dump}"
        dump_file = self.out.with_name(f"{self.out.name}{part}-01")
        return self._totals(dump_file)

    @staticmethod
    def _totals(dump: Path) -> int:
        found = re.search(r"^totals: (\d+)", dump.read_text(), re.M)
        if found is None:
            raise RuntimeError(f"no count in {dump}")
        return int(found.group(1))

    def collected(self) -> int:
        """What every thread ran since the last zeroing (each one's file at exit)."""
        return sum(self._totals(dump) for dump in self.out.parent.glob(f"{self.out.name}-*"))


# -- the record -------------------------------------------------------------------------


HEADER = """\
# The edge against the server's floor

Written by `python -m bench.edge_floor --write docs/benchmarks/edge.md` (issue 21),
not by hand: each run is added below, and this summary is made anew from them all.

One run serves, side by side with identical uvicorn flags (one worker, SQLite,
the process-local cache, warm): a raw ASGI hello-world app (`curfew_testkit/hello.py`,
the server's floor), a trivial Django view in Curfew's stack (`GET /healthz`), the
warm `POST /api/v1/verdict` (ledger on) and the warm `GET /api/v1/state`, and loads
each from a second process on loopback in interleaved rounds (medians). `x floor`
is a row's throughput against the raw ASGI app's, `x trivial` against the trivial
view's. Target (issue 21): the warm verdict at **0.33x the floor** or more.

From the third pass on, a second raw app (`hello.shaped`) answers the verdict's own
exchange: its request (a POST with a token and a body) with the verdict's own headers
and length, read off a real answer. What a verdict costs beyond it is the site's own
work; the last column puts that against the server's own (issue 21's gloss of the
target: "Curfew's own work per verdict at most twice the server's own per-request cost").
The machine is shared (2 cores, other jobs at times): compare rows of one run,
and runs by their ratios rather than their absolute rates.

From the fourth pass on, the instructions are counted on the server's event-loop
thread alone, less the loop's idle clock work (uvicorn ticks ten times a second)
over the requests' wall time; every thread's raw count is in each run's text. The
pool threads' cold reads and the ticks come by *wall* time, which valgrind
stretches fifty-fold, so on a busy machine they were charged to a few hundred
requests and doubled a verdict's count (the runs before counted every thread, on
quieter machines).
"""


def _instructions(run: dict[str, Any]) -> dict[str, float]:
    return {row["key"]: row["instructions"] for row in run["rows"] if row.get("instructions")}


def summary_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| date | run | commit | floor req/s | trivial | verdict | state "
        "| verdict x floor | state x floor | verdict x trivial "
        "| verdict x floor, instructions | state x floor, instructions "
        "| site's own work per verdict, x the server's |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        rate = {row["key"]: row["rate"] for row in run["rows"]}
        floor, trivial = rate["floor"] or 1e-9, rate["trivial"] or 1e-9
        counts = _instructions(run)
        by_count = ["-", "-"]
        if {"floor", "verdict", "state"} <= counts.keys():
            by_count = [f"{counts['floor'] / counts[key]:.2f}x" for key in ("verdict", "state")]
        own = _own_work(counts)
        lines.append(
            f"| {run['date']} | {run['label']} | {run['revision']} | {rate['floor']:,.0f} "
            f"| {rate['trivial']:,.0f} | {rate['verdict']:,.0f} | {rate['state']:,.0f} "
            f"| **{rate['verdict'] / floor:.2f}x** | {rate['state'] / floor:.2f}x "
            f"| {rate['verdict'] / trivial:.2f}x | {by_count[0]} | {by_count[1]} "
            f"| {'-' if own is None else f'{own:.2f}x'} |"
        )
    return "\n".join(lines)


def _own_work(counts: dict[str, float]) -> float | None:
    """The site's own instructions per verdict (beyond the server's floor for
    the verdict's very exchange, ``hello.shaped``) against that floor: issue
    21's "Curfew's own work per verdict at most twice the server's own"."""
    if not {"shaped", "verdict"} <= counts.keys():
        return None
    return (counts["verdict"] - counts["shaped"]) / counts["shaped"]


def run_section(run: dict[str, Any]) -> str:
    rate = {row["key"]: row["rate"] for row in run["rows"]}
    floor, trivial = rate["floor"] or 1e-9, rate["trivial"] or 1e-9
    counts = _instructions(run)
    name = run["label"]
    if name != run["revision"] and run["revision"] != "unknown":
        name += f" ({run['revision']})"
    counted = ""
    if counts:
        counted = (
            f" Instructions per request inside the server: callgrind, "
            f"{run['callgrind']} requests one after another per row (the ledger's flusher "
            "not counted)."
        )
        if run.get("counted") == "loop thread":
            every = {
                row["key"]: row["instructions_all_threads"]
                for row in run["rows"]
                if row.get("instructions_all_threads")
            }
            counted += (
                " Counted on the event loop's thread, less its idle clock work (uvicorn's"
                " ticks) over the requests' wall time; the pool threads' cold reads, every few"
                " seconds of wall time, left out. On every thread, uncorrected, the warm"
                f" verdict took {every.get('verdict', 0):,.0f}."
            )
    lines = [
        f"### {run['date']}: {name}",
        "",
        f"{run['machine']}; {run['versions']}; load: {run['client']}, "
        f"{run['connections']} connections, {run['rounds']} rounds of {run['seconds']} s "
        f"per row; load average at the start {run['loadavg']}.{counted}",
        "",
        "| endpoint | req/s | x floor | x trivial | p50 ms | p99 ms | errors "
        "| instructions | x floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in run["rows"]:
        mine = counts.get(row["key"])
        count = "-" if mine is None else f"{mine:,.0f}"
        ratio = "-" if mine is None or "floor" not in counts else f"{counts['floor'] / mine:.2f}"
        lines.append(
            f"| {row['label']} | {row['rate']:,.0f} | {row['rate'] / floor:.2f} "
            f"| {row['rate'] / trivial:.2f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} "
            f"| {row['errors']} | {count} | {ratio} |"
        )
    return "\n".join(lines)


PAGE = Page(mark=RUN_MARK, header=HEADER, summary_table=summary_table, run_section=run_section)


# -- the run ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=4, help="per row and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--client", choices=("auto", "wrk", "loadgen"), default="auto")
    parser.add_argument("--write", type=Path, metavar="FILE", help="record the run in FILE")
    parser.add_argument("--label", default="", help="the run's name in FILE (default: commit)")
    parser.add_argument(
        "--revision", default="", help="the code measured, for FILE (default: this checkout's)"
    )
    parser.add_argument(
        "--callgrind",
        type=int,
        default=0,
        metavar="N",
        help="also count instructions per request over N requests per row (valgrind)",
    )
    args, _ = parser.parse_known_args()
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "loadgen"
    slice_of = wrk_slice if client == "wrk" else loadgen_slice
    seconds, rounds = max(1, args.seconds), max(1, args.rounds)

    env = {
        # One token stands in for a whole fleet: its own rate would cap the run.
        "CURFEW_TOKEN_RATE": "off",
        "CURFEW_MANIFEST_STATIC": "0",
        "REDIS_URL": "",
        "CURFEW_LOG_LEVEL": "WARNING",
    }
    started_load = loadavg()
    servers: list[ServedApp] = []
    try:
        floor = ServedApp(
            Path(tempfile.mkdtemp(prefix="curfew-floor-")), env=env, app="curfew_testkit.hello:app"
        )
        site = ServedApp(Path(tempfile.mkdtemp(prefix="curfew-edge-")), env=env)
        site.manage("migrate", "--no-input", "-v0")
        token = site.create_user("bench")
        servers += [floor, site]
        for server in servers:
            server.start()
        auth = {"Authorization": f"Bearer {token}"}
        rows = [
            Row("floor", "raw ASGI hello-world (the floor)", "GET", floor.base_url + "/"),
            Row("trivial", "GET /healthz (trivial Django view)", "GET", site.base_url + "/healthz"),
            Row(
                "verdict",
                "POST /api/v1/verdict (warm)",
                "POST",
                site.base_url + "/api/v1/verdict",
                {**auth, "Content-Type": "application/json"},
                VERDICT_BODY,
                verdict=True,
            ),
            Row("state", "GET /api/v1/state (warm)", "GET", site.base_url + "/api/v1/state", auth),
        ]
        shaped, shaped_row = shaped_floor(rows[2], env)
        env["CURFEW_HELLO_SHAPE"] = shaped.env["CURFEW_HELLO_SHAPE"]
        servers.append(shaped)
        rows.insert(1, shaped_row)
        for row in rows:
            check_answer(row)
            slice_of(row, connections=min(8, args.connections), seconds=1)  # warm-up
        print(
            f"{machine()}; {versions()}; load: {client}, {args.connections} connections, "
            f"{rounds} interleaved rounds of {seconds}s per row (medians); "
            f"load average {started_load}",
            flush=True,
        )
        for _ in range(rounds):
            for row in rows:
                rate, p50, p99, errors = slice_of(
                    row, connections=args.connections, seconds=seconds
                )
                row.rates.append(rate)
                row.p50s.append(p50)
                row.p99s.append(p99)
                row.errors += errors
        for server in servers:
            server.stop()
        counts, every = (
            callgrind_counts(rows, site, env, args.callgrind) if args.callgrind > 0 else ({}, {})
        )
    finally:
        for server in servers:
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)

    results = [row.summary() for row in rows]
    for result in results:
        if result["key"] in counts:
            result["instructions"] = round(counts[result["key"]])
            result["instructions_all_threads"] = round(every[result["key"]])
    by_key = {result["key"]: result for result in results}
    floor_rate = by_key["floor"]["rate"] or 1e-9
    trivial_rate = by_key["trivial"]["rate"] or 1e-9
    print(
        f"  {'endpoint':<36} {'req/s':>8} {'x floor':>8} {'x trivial':>10} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
        + (f" {'instructions':>13} {'x floor':>8}" if counts else "")
    )
    for result in results:
        counted = ""
        if counts:
            mine = counts[result["key"]]
            counted = f" {mine:>13,.0f} {counts['floor'] / mine:>8.2f}"
        print(
            f"  {result['label']:<36} {result['rate']:>8,.0f} "
            f"{result['rate'] / floor_rate:>8.2f} {result['rate'] / trivial_rate:>10.2f} "
            f"{result['p50_ms']:>8.2f} {result['p99_ms']:>8.2f} {result['errors']:>7}{counted}"
        )
    ratio = by_key["verdict"]["rate"] / floor_rate
    print(
        f"  warm verdict / floor: {ratio:.2f}x (issue 21's target: >= {TARGET}x: "
        f"{'met' if ratio >= TARGET else 'not met'})"
    )
    if counts:
        print(
            f"  by instructions: {counts['floor'] / counts['verdict']:.2f}x on the event "
            f"loop's thread ({counts['verdict']:,.0f} a verdict; every thread: "
            f"{every['verdict']:,.0f}, {every['floor'] / every['verdict']:.2f}x)"
        )
        own = _own_work(counts)
        if own is not None:
            print(
                f"  the site's own work per verdict: {own:.2f}x the server's own for the "
                "same exchange (issue 21: at most 2x)"
            )
    if args.write:
        rev = args.revision or revision()
        PAGE.record(
            args.write,
            {
                **run_facts(label=args.label, rev=rev, load=started_load),
                "client": client if client == "loadgen" else "wrk -t1",
                "connections": args.connections,
                "rounds": rounds,
                "seconds": seconds,
                "callgrind": args.callgrind,
                **({"counted": "loop thread"} if counts else {}),
                "rows": results,
            },
        )
        print(f"  recorded in {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
