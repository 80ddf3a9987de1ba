"""How fast one change reaches N open capsules, and what an idle capsule costs the server.

Issues 13 and 21's capsule target (p99 within a second at 10,000 sockets), each
figure beside its baseline from the same run:
N capsule sockets (default 10,000) of one user, opened from this process over
loopback, then two kinds of change, timed until *every* socket had the new state:

* override (group push): ``POST /api/v1/overrides {"overtime": …}``; one
  ``user.changed`` message after the commit, heard by the process's hub and
  handed to its sockets. Measured from the moment the request is sent (so it
  includes the request itself and the commit).
* boundary (timers): the overtime's end; nothing is sent, the sockets' shared
  timer fires at the verdict's ``valid_until``. Measured from that instant.

Three servers, one after the other, on their own SQLite file:

1. baseline: ``python -m uvicorn curfew_site.asgi:application`` with uvicorn's
   defaults (legacy websockets protocol, per-message deflate on), in-memory layer;
2. ``bin/serve run`` (one worker), the production command and its WebSocket
   settings, in-memory layer;
3. two ``bin/serve run`` processes on one Redis (``--redis``, default
   ``REDIS_URL`` or redis://127.0.0.1:6379/0; skipped if none answers), half the
   sockets on each, the override sent through the first: the fan-out across processes.

Memory per idle socket: the server's resident set (``/proc/<pid>/status`` VmRSS)
with N sockets open and idle for two seconds, less the same before they opened
(after 50 sockets were opened and closed, so one-time start-up costs are not
counted), divided by N. The client is a bare protocol (``Capsule``), cheap enough
that ten thousand sockets on one loop time the server, not the client; it
offers per-message deflate, as browsers do.
Each push is reported as p50 and p99 over the sockets (and its first and last
arrival). The client shares the machine with the server: the arrival times are
when this process read each frame, so a busy machine slows both alike; run it
more than once and compare rows of one run.
Bounded: loopback only, every wait has a timeout.

``--write FILE`` also records the run in FILE (markdown): the runs already
there are kept, the new one is added, and the summary is made anew from them all
(``docs/benchmarks/capsule.md``; ``--label`` names the run).

    .venv/bin/python -m bench.capsule_fanout [--n 10000] [--redis redis://127.0.0.1:6379/0]
        [--write docs/benchmarks/capsule.md --label "after: ..."]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import sys
import tempfile
import time
import urllib.request
import uuid
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.record import Page, loadavg, revision, run_facts
from curfew_testkit.server import ServedApp

ROOT = Path(__file__).resolve().parents[1]

USER = "fanout"
TIMEOUT = 180.0  # seconds, for any one phase
OVERTIME_SECONDS = 8  # the override whose end is the boundary
#: Issue 13's targets.
TARGET_P99_MS = 1000.0
TARGET_KIB = 20.0


def rss_kib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    return float("nan")


class Served(ServedApp):
    """``bin/serve run`` with one worker (production's command), or uvicorn's defaults."""

    def __init__(self, workdir: Path, *, production: bool, env: dict[str, str]) -> None:
        super().__init__(workdir, env=env)
        self.production = production
        if production:
            self.env.update(
                HOST="127.0.0.1", PORT=str(self.port), CURFEW_WORKERS="1", PYTHON=sys.executable
            )

    def command(self) -> list[str]:
        if self.production:
            return [str(ROOT / "bin" / "serve"), "run"]
        return super().command()

    def server_pid(self) -> int:
        """The process holding the sockets (uvicorn's worker under ``--workers 1``)."""
        assert self.process is not None
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        # bin/serve execs uvicorn's supervisor; its worker is a child (besides
        # multiprocessing's resource tracker, the smaller one).
        if children:
            return max((int(c) for c in children), key=lambda c: rss_kib(c))
        return pid


def post(app: ServedApp, token: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{app.base_url}/api/v1/overrides",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


class Capsule(asyncio.Protocol):
    """A bare WebSocket client for one capsule: enough of RFC 6455 to read the
    server's text frames and answer its pings, and cheap, so ten thousand of them on one event loop
    time the server rather than the client. Offers per-message deflate, as
    browsers do, and inflates when the server takes it."""

    def __init__(self, host: str, path: str) -> None:
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
            "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
        ).encode()
        self.buffer = b""
        self.closing = False
        self.upgraded = False
        self.inflater: Any = None
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.first: asyncio.Future[str] = loop.create_future()
        #: (predicate, future): resolved with the arrival time of the first wanted state.
        self.waiting: tuple[Callable[[str], bool], asyncio.Future[float]] | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.upgraded:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if not sep:
                return
            if not head.startswith(b"HTTP/1.1 101"):
                self.fail(RuntimeError(head.decode("latin1")[:200]))
                return
            if b"permessage-deflate" in head.lower():
                self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            self.upgraded, self.buffer = True, rest
        while len(self.buffer) >= 2:
            first, second = self.buffer[0], self.buffer[1]
            length, offset = second & 0x7F, 2
            if length == 126:
                if len(self.buffer) < 4:
                    return
                length, offset = int.from_bytes(self.buffer[2:4], "big"), 4
            elif length == 127:
                if len(self.buffer) < 10:
                    return
                length, offset = int.from_bytes(self.buffer[2:10], "big"), 10
            if len(self.buffer) < offset + length:
                return
            payload = self.buffer[offset : offset + length]
            self.buffer = self.buffer[offset + length :]
            opcode = first & 0x0F
            if opcode == 0x8:
                self.fail(RuntimeError(f"closed by the server: {payload[:2].hex()}"))
                return
            if opcode == 0x9 and self.transport is not None:  # ping: the server's keepalive
                mask = os.urandom(4)
                masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
                self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + mask + masked)
                continue
            if opcode != 0x1:
                continue
            if first & 0x40 and self.inflater is not None:  # RSV1: compressed
                payload = self.inflater.decompress(payload + b"\x00\x00\xff\xff")
            self.message(payload.decode())

    def message(self, text: str) -> None:
        if not self.first.done():
            self.first.set_result(text)
        elif self.waiting is not None:
            wanted, future = self.waiting
            if not future.done() and wanted(text):
                future.set_result(time.time())

    def fail(self, error: Exception) -> None:
        if self.closing:
            return
        for future in (self.first, *(self.waiting[1:] if self.waiting else ())):
            if not future.done():
                future.set_exception(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(ConnectionError("connection lost"))

    def expect(self, wanted: Callable[[str], bool]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting = (wanted, future)
        return future

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()


async def open_capsules(port: int, path: str, n: int) -> list[Capsule]:
    gate = asyncio.Semaphore(64)  # do not flood the accept backlog
    loop = asyncio.get_running_loop()

    async def one() -> Capsule:
        async with gate:
            _, capsule = await loop.create_connection(
                lambda: Capsule(f"127.0.0.1:{port}", path), "127.0.0.1", port
            )
            await asyncio.wait_for(capsule.first, 60)  # the state on connect
            return capsule

    return list(await asyncio.wait_for(asyncio.gather(*(one() for _ in range(n))), TIMEOUT))


async def arrivals(
    sockets: list[Capsule], wanted: Callable[[str], bool], fire: Callable[[], Any]
) -> tuple[list[float], Any]:
    """Wall-clock arrival time (epoch s) of the first wanted state on every socket."""
    futures = [capsule.expect(wanted) for capsule in sockets]
    fired = await asyncio.to_thread(fire)
    done = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    return list(done), fired


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def p99(values: list[float]) -> float:
    return quantile(values, 0.99)


NAN = float("nan")


@dataclass
class Figures:
    label: str
    n: int
    override_min: float = NAN
    override_p50: float = NAN
    override_p99: float = NAN
    override_max: float = NAN
    boundary_min: float = NAN
    boundary_p50: float = NAN
    boundary_p99: float = NAN
    boundary_max: float = NAN
    kib_per_socket: float = NAN
    open_seconds: float = NAN


async def measure(apps: list[Served], api: str, embed: str, n: int, label: str) -> Figures:
    figures = Figures(label, n)
    pids = [app.server_pid() for app in apps]
    # Warm up: one-time costs (imports, the hub, caches) are not per socket.
    path = f"/ws/capsule/?token={embed}"
    for app in apps:
        for capsule in await open_capsules(app.port, path, 50):
            capsule.close()
    await asyncio.sleep(2)
    idle = sum(rss_kib(pid) for pid in pids)
    began = time.perf_counter()
    sockets: list[Capsule] = []
    for index, app in enumerate(apps):
        share = n // len(apps) + (1 if index < n % len(apps) else 0)
        sockets += await open_capsules(app.port, path, share)
    figures.open_seconds = time.perf_counter() - began
    await asyncio.sleep(2)
    loaded = sum(rss_kib(pid) for pid in pids)
    figures.kib_per_socket = (loaded - idle) / n

    fired_at = 0.0

    def start_overtime() -> Any:
        nonlocal fired_at
        fired_at = time.time()
        return post(apps[0], api, {"overtime": f"{OVERTIME_SECONDS}s"})

    times, state = await arrivals(sockets, lambda s: '"override": "overtime"' in s, start_overtime)
    pushed = [(t - fired_at) * 1000 for t in times]
    figures.override_min, figures.override_max = min(pushed), max(pushed)
    figures.override_p50, figures.override_p99 = quantile(pushed, 0.5), p99(pushed)

    boundary = datetime.fromisoformat(state["override_until"]).timestamp()
    times, _ = await arrivals(sockets, lambda s: '"override": null' in s, lambda: None)
    timed = [(t - boundary) * 1000 for t in times]
    figures.boundary_min, figures.boundary_max = min(timed), max(timed)
    figures.boundary_p50, figures.boundary_p99 = quantile(timed, 0.5), p99(timed)

    for capsule in sockets:
        capsule.close()
    await asyncio.sleep(1)
    return figures


def run_one(label: str, n: int, *, production: bool, processes: int, redis: str | None) -> Figures:
    # Every socket comes from 127.0.0.1: the per-address throttles would refuse most.
    env: dict[str, str] = {"CURFEW_THROTTLE": "0"}
    if redis:
        env |= {"REDIS_URL": redis, "CURFEW_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:12]}"}
    with tempfile.TemporaryDirectory(prefix="capsule-fanout-") as tmp:
        apps = [Served(Path(tmp), production=production, env=env) for _ in range(processes)]
        apps[0].manage("migrate", "--no-input", "-v0")  # one SQLite file for all
        api = apps[0].create_user(USER)
        embed = apps[0].manage("curfew", "embed-token", "--user", USER).stdout.split()[-1]
        started: list[Served] = []
        try:
            for app in apps:
                app.start(timeout=60)
                started.append(app)
            return asyncio.run(measure(apps, api, embed, n, label))
        except BaseException:
            for app in apps:
                print(f"server log:\n{app.log_path.read_text()[-3000:]}", file=sys.stderr)
            raise
        finally:
            for app in started:
                app.stop()


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


# -- the record -------------------------------------------------------------------------

#: Where a run is kept in the written file: one JSON line per run.
RUN_MARK = "<!-- capsule_fanout run: "

#: (name, field, target): the rows printed, in order.
LINES = [
    ("boundary p50 ms", "boundary_p50", ""),
    ("boundary p99 ms", "boundary_p99", f"{TARGET_P99_MS:.0f}"),
    ("boundary first ms", "boundary_min", ""),
    ("boundary max ms", "boundary_max", ""),
    ("override p50 ms", "override_p50", ""),
    ("override p99 ms", "override_p99", f"{TARGET_P99_MS:.0f}"),
    ("override first ms", "override_min", ""),
    ("override max ms", "override_max", ""),
    ("KiB per idle socket", "kib_per_socket", f"{TARGET_KIB:.0f}"),
    ("opening all took s", "open_seconds", ""),
]

HEADER = """\
# Capsule fan-out: one change to ten thousand sockets

Written by `python -m bench.capsule_fanout --write docs/benchmarks/capsule.md`
(issues 13 and 21), not by hand: each run is added below, and this summary is
made anew from them all.

One run opens N capsule sockets of one user (SQLite, the client in the bench's
own process on loopback, offering per-message deflate as browsers do) on each of
three servers in turn: uvicorn's defaults (the baseline), `bin/serve run` with one
worker, and two `bin/serve run` on one Redis (half the sockets each). It then
times two pushes until every socket has the new state: an override (a group
push, from the API request's start) and the override's end (a timer push, from
the instant). Target: **boundary p99 within 1000 ms** at 10,000 sockets, and at
most 20 KiB per idle socket. The machine is shared (2 cores, other jobs at
times, the client on the same cores as the server): compare rows of one run,
and read the spread over runs, not one figure.
"""


def _ms(value: float) -> str:
    return "-" if value != value else f"{value:,.0f}"  # NaN: not measured


def summary_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| date | run | commit | server | sockets | boundary p50 ms | boundary p99 ms "
        "| override p50 ms | override p99 ms | KiB per socket |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        for row in run["rows"]:
            lines.append(
                f"| {run['date']} | {run['label']} | {run['revision']} | {row['label']} "
                f"| {row['n']:,} | {_ms(row['boundary_p50'])} | **{_ms(row['boundary_p99'])}** "
                f"| {_ms(row['override_p50'])} | {_ms(row['override_p99'])} "
                f"| {row['kib_per_socket']:.1f} |"
            )
    return "\n".join(lines)


def run_section(run: dict[str, Any]) -> str:
    name = run["label"]
    if name != run["revision"] and run["revision"] != "unknown":
        name += f" ({run['revision']})"
    rows = run["rows"]
    lines = [
        f"### {run['date']}: {name}",
        "",
        f"{run['machine']}; {run['versions']}; {run['n']:,} sockets of one user; "
        f"load average at the start {run['loadavg']}.{run.get('note') or ''}",
        "",
        "| figure | target | " + " | ".join(row["label"] for row in rows) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in rows) + " |",
    ]
    for label, key, target in LINES:
        digits = ".1f" if key == "kib_per_socket" or key == "open_seconds" else ",.0f"
        cells = ["-" if row[key] != row[key] else f"{row[key]:{digits}}" for row in rows]
        lines.append(f"| {label} | {target} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


PAGE = Page(mark=RUN_MARK, header=HEADER, summary_table=summary_table, run_section=run_section)


# -- the run ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="capsules to open (default 10000)")
    parser.add_argument(
        "--redis",
        metavar="URL",
        default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="Redis for the two-process run (default REDIS_URL or redis://127.0.0.1:6379/0)",
    )
    parser.add_argument("--write", type=Path, metavar="FILE", help="record the run in FILE")
    parser.add_argument("--label", default="", help="the run's name in FILE (default: the commit)")
    parser.add_argument(
        "--revision", default="", help="the code measured, for FILE (default: this checkout's)"
    )
    args, _ = parser.parse_known_args()  # make bench passes its arguments to every script
    if not 1 <= args.n <= 20_000:
        parser.error("--n must be between 1 and 20000")
    # Each socket is a file descriptor here and in the server (which inherits this limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, args.n + 1024) if hard != resource.RLIM_INFINITY else args.n + 1024
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < args.n + 256:
        print(f"open-file limit {hard} is too low for {args.n} sockets; use --n", file=sys.stderr)
        return 1

    started_load = loadavg()
    rows = [
        run_one("uvicorn defaults", args.n, production=False, processes=1, redis=None),
        run_one("bin/serve (1 process)", args.n, production=True, processes=1, redis=None),
    ]
    if redis_answers(args.redis):
        rows.append(
            run_one("bin/serve x2, Redis", args.n, production=True, processes=2, redis=args.redis)
        )
        redis_note = ""
    else:
        redis_note = f"(no Redis answering at {args.redis}: the two-process run was skipped)"

    print(f"capsule fan-out: {args.n} capsules of one user (SQLite; client in this process,")
    print("loopback; override from the API request's start, boundary from the instant)")
    print()
    print(f"{'figure':<24}{'target':>10}" + "".join(f"{row.label:>24}" for row in rows))
    for name, key, target in LINES:
        cells = "".join(f"{getattr(row, key):>24.1f}" for row in rows)
        print(f"{name:<24}{target:>10}{cells}")
    if redis_note:
        print(redis_note)
    if args.write:
        rev = args.revision or revision()
        PAGE.record(
            args.write,
            {
                **run_facts(label=args.label, rev=rev, load=started_load),
                "n": args.n,
                "note": f" {redis_note}" if redis_note else "",
                "rows": [asdict(row) for row in rows],
            },
        )
        print(f"  recorded in {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
