"""Ten thousand capsule sockets held open in production's configuration: memory
over time, pushes while they are held, and memory after the crowd leaves.

Issues 40 and 41: ``bin/serve`` with two workers on PostgreSQL and Redis
(``DATABASE_URL``, ``REDIS_URL``; the database is created if missing and
migrated by ``bin/serve``), production settings behind a TLS-terminating proxy.
N sockets (default 10,000) of one user's embed token, each with its own client
address (``X-Forwarded-For``, as the balancer would send it, so the
per-address limit is production's, not lifted), opened from this process over
loopback with the bare client of ``bench.capsule_fanout``.

The run:

1. warm-up (50 sockets opened and closed), then the workers' idle RSS;
2. crowd 1: N sockets opened and held ``--hold`` seconds (600: issue 41's ten
   minutes). Every ``--every`` seconds (30) each worker's resident set
   (``/proc/<pid>/status`` VmRSS) and open file descriptors are sampled; every
   other sample an override is pushed (``POST /api/v1/overrides``, a group
   message through Redis) and its end reaches the sockets by their timers: both
   timed until *every* socket has it (p50, p99, max);
3. the crowd leaves: every socket closed, RSS sampled for ``--after`` seconds;
4. crowd 2: N sockets again, held ``--every`` seconds, then closed and sampled
   again: memory kept after a crowd is re-used by the next, or grows.

``--baseline REV`` first runs the same on another commit of this repository
(``git archive`` into a temporary folder, served with this virtualenv, on a
database of its own), crowd 1 held ``--baseline-hold`` seconds (120), so its
pushes and its leaving sit beside this checkout's from one run.

    .venv/bin/python -m bench.capsule_soak [--n 10000] [--hold 600] [--every 30]
        [--workers 2] [--after 60] [--baseline REV] [--json FILE]

``make capsule-soak`` runs it as issue 41 asked (ten minutes; about fifteen in all).
The client shares the machine with the servers (2 cores): the push times are
upper bounds; the RSS curve is the figure this run is for.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.capsule_fanout import Capsule, arrivals, quantile, rss_kib
from bench.record import loadavg, machine, revision, versions
from curfew_testkit.server import ServedApp

ROOT = Path(__file__).resolve().parents[1]
USER = "soak"
OVERTIME_SECONDS = 6
OPEN_TIMEOUT = 300.0
PUSH_TIMEOUT = 120.0


def ensure_database(url: str) -> None:
    """Create ``url``'s database on its server if it is missing (``bin/serve`` migrates it)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


class Client(Capsule):
    """The bench's bare capsule, from its own client address, through the "balancer"."""

    def __init__(self, host: str, path: str, address: str) -> None:
        super().__init__(host, path)
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
            f"X-Forwarded-For: {address}\r\nX-Forwarded-Proto: https\r\n\r\n"
        ).encode()
        self.lost = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        super().connection_lost(exc)


def post(app: ServedApp, token: str, body: dict[str, Any]) -> Any:
    """An API request as the balancer passes it on (``X-Forwarded-Proto: https``)."""
    request = urllib.request.Request(
        f"{app.base_url}/api/v1/overrides",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            **app.client_headers,
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def address(index: int) -> str:
    return f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


async def open_crowd(port: int, path: str, n: int, first: int) -> list[Client]:
    gate = asyncio.Semaphore(64)  # do not flood the accept backlog
    loop = asyncio.get_running_loop()

    async def one(index: int) -> Client:
        async with gate:
            _, capsule = await loop.create_connection(
                lambda: Client(f"127.0.0.1:{port}", path, address(index)), "127.0.0.1", port
            )
            await asyncio.wait_for(capsule.first, 60)  # the state on connect
            return capsule

    opened = asyncio.gather(*(one(first + i) for i in range(n)))
    return list(await asyncio.wait_for(opened, OPEN_TIMEOUT))


def workers_of(pid: int) -> list[int]:
    """``bin/serve``'s worker processes (uvicorn's supervisor's children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    # Besides the workers, multiprocessing may start a small resource tracker.
    found = [int(c) for c in children if "spawn_main" in _cmdline(int(c))]
    return sorted(found) or [int(c) for c in children]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


@dataclass
class Sample:
    seconds: float  # since the run's start
    phase: str
    rss_mib: list[float]
    fds: list[int]
    sockets: int  # the client's sockets still open

    @property
    def total(self) -> float:
        return sum(self.rss_mib)


@dataclass
class Push:
    seconds: float
    kind: str  # override | boundary
    p50_ms: float
    p99_ms: float
    max_ms: float


@dataclass
class Run:
    label: str
    revision: str
    n: int
    workers: int
    samples: list[Sample] = field(default_factory=list)
    pushes: list[Push] = field(default_factory=list)
    open_seconds: list[float] = field(default_factory=list)


class Soak:
    def __init__(self, run: Run, app: ServedApp, api: str, embed: str) -> None:
        self.run = run
        self.app = app
        self.api = api
        self.path = f"/ws/capsule/?token={embed}"
        assert app.process is not None
        self.pids = workers_of(app.process.pid)
        self.began = time.monotonic()
        self.opened = 0

    def sample(self, phase: str, sockets: list[Client]) -> Sample:
        sample = Sample(
            round(time.monotonic() - self.began, 1),
            phase,
            [round(rss_kib(pid) / 1024, 1) for pid in self.pids],
            [open_fds(pid) for pid in self.pids],
            sum(1 for s in sockets if not s.lost),
        )
        self.run.samples.append(sample)
        rss = " + ".join(f"{r:.0f}" for r in sample.rss_mib)
        print(
            f"  {sample.seconds:7.1f} s  {phase:<14} RSS {rss} = {sample.total:.0f} MiB"
            f"  fds {sample.fds}  client sockets {sample.sockets}",
            flush=True,
        )
        return sample

    async def crowd(self, n: int) -> list[Client]:
        began = time.perf_counter()
        sockets = await open_crowd(self.app.port, self.path, n, self.opened)
        self.opened += n
        self.run.open_seconds.append(round(time.perf_counter() - began, 1))
        return sockets

    async def push(self, sockets: list[Client]) -> None:
        """An override to every socket, then its end by their timers."""
        fired_at = 0.0

        def start() -> Any:
            nonlocal fired_at
            fired_at = time.time()
            return post(self.app, self.api, {"overtime": f"{OVERTIME_SECONDS}s"})

        live: list[Capsule] = [s for s in sockets if not s.lost]
        times, state = await asyncio.wait_for(
            arrivals(live, lambda s: '"override": "overtime"' in s, start), PUSH_TIMEOUT
        )
        self.record("override", [(t - fired_at) * 1000 for t in times])
        boundary = datetime.fromisoformat(state["override_until"]).timestamp()
        times, _ = await asyncio.wait_for(
            arrivals(live, lambda s: '"override": null' in s, lambda: None), PUSH_TIMEOUT
        )
        self.record("boundary", [(t - boundary) * 1000 for t in times])

    def record(self, kind: str, delays: list[float]) -> None:
        push = Push(
            round(time.monotonic() - self.began, 1),
            kind,
            round(quantile(delays, 0.5), 1),
            round(quantile(delays, 0.99), 1),
            round(max(delays), 1),
        )
        self.run.pushes.append(push)
        print(
            f"  {push.seconds:7.1f} s  push {kind:<9} p50 {push.p50_ms:,.0f} ms"
            f"  p99 {push.p99_ms:,.0f} ms  max {push.max_ms:,.0f} ms",
            flush=True,
        )

    async def leave(self, sockets: list[Client], after: float, every: float) -> None:
        for capsule in sockets:
            capsule.close()
        waited = 0.0
        while waited < after:
            step = min(every, after - waited)
            await asyncio.sleep(step)
            waited += step
            self.sample(f"closed +{waited:.0f}s", [])

    async def main(self, n: int, hold: float, every: float, after: float) -> None:
        for capsule in await open_crowd(self.app.port, self.path, 50, 0):
            capsule.close()
        self.opened = 50
        await asyncio.sleep(5)
        self.sample("idle", [])
        sockets = await self.crowd(n)
        self.sample("crowd 1 open", sockets)
        held = time.monotonic()
        ticks = 0
        while time.monotonic() - held < hold:
            ticks += 1
            delay = held + ticks * every - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.sample(f"held {time.monotonic() - held:.0f}s", sockets)
            if ticks % 2 == 1 and time.monotonic() - held + 20 < hold:
                await self.push(sockets)
        await self.leave(sockets, after, min(every, 10.0))
        del sockets
        sockets = await self.crowd(n)
        self.sample("crowd 2 open", sockets)
        await self.push(sockets)
        self.sample("crowd 2 pushed", sockets)
        await self.leave(sockets, after, min(every, 10.0))


def serve(
    label: str, root: Path, args: argparse.Namespace, database_url: str, hold: float
) -> tuple[Run, list[str]]:
    rev = revision() if root == ROOT else args.baseline
    run = Run(label, rev, args.n, args.workers)
    env = {
        "DATABASE_URL": database_url,
        "REDIS_URL": args.redis,
        "CURFEW_REDIS_PREFIX": f"soak-{uuid.uuid4().hex[:12]}",
        # One embed token opens every socket: its rate would refuse most of them.
        # The per-address socket limit stays on (each socket has its own address).
        "CURFEW_THROTTLE": "0",
    }
    with tempfile.TemporaryDirectory(prefix="capsule-soak-") as tmp:
        app = ServedApp(Path(tmp), workers=args.workers, env=env, root=root)
        app.manage("migrate", "--no-input", "-v0")
        api = app.create_user(USER)
        embed = app.manage("curfew", "embed-token", "--user", USER).stdout.split()[-1]
        app.start(timeout=240)
        try:
            soak = Soak(run, app, api, embed)
            print(f"{label}: workers {soak.pids}", flush=True)
            asyncio.run(soak.main(args.n, hold, args.every, args.after))
        except BaseException:
            print(f"server log:\n{app.log_path.read_text()[-3000:]}", file=sys.stderr)
            raise
        finally:
            app.stop()
        errors = [
            line
            for line in app.log_path.read_text().splitlines()
            if "ERROR" in line or "Traceback" in line
        ]
    return run, errors


def checkout(rev: str, into: Path) -> Path:
    """``rev`` of this repository as files in ``into`` (served with this virtualenv)."""
    archive = subprocess.run(
        ["git", "archive", rev], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def report(run: Run) -> None:
    print(f"\n{run.label} ({run.revision}): {run.n:,} sockets, bin/serve x{run.workers}")
    print(f"  opening took {', '.join(f'{s} s' for s in run.open_seconds)}")
    idle = run.samples[0].total
    print(f"  {'when':<18}{'RSS MiB':>10}{'vs idle':>10}")
    for sample in run.samples:
        print(f"  {sample.phase:<18}{sample.total:>10.0f}{sample.total - idle:>+10.0f}")
    held = [s.total for s in run.samples if s.phase.startswith("held")]
    if held:
        print(f"  held: min {min(held):.0f}, max {max(held):.0f}, last {held[-1]:.0f} MiB")
    for kind in ("override", "boundary"):
        rows = [p for p in run.pushes if p.kind == kind]
        if rows:
            print(
                f"  {kind} pushes ({len(rows)}): p50 median "
                f"{quantile([p.p50_ms for p in rows], 0.5):,.0f} ms, "
                f"p99 median {quantile([p.p99_ms for p in rows], 0.5):,.0f} ms, "
                f"p99 worst {max(p.p99_ms for p in rows):,.0f} ms"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="sockets per crowd (10000)")
    parser.add_argument("--hold", type=float, default=600.0, help="seconds crowd 1 is held (600)")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples (30)")
    parser.add_argument("--after", type=float, default=60.0, help="seconds sampled after a crowd")
    parser.add_argument("--workers", type=int, default=2, help="bin/serve workers (2)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/curfew_soak"),
        help="PostgreSQL (default DATABASE_URL; created if missing)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="Redis (default REDIS_URL; a fresh key prefix per run)",
    )
    parser.add_argument("--baseline", metavar="REV", help="also run this commit, first")
    parser.add_argument(
        "--baseline-hold",
        type=float,
        default=120.0,
        help="seconds the baseline's crowd 1 is held (120: its pushes and its leaving "
        "are what it is there for; --hold for the full soak)",
    )
    parser.add_argument("--json", type=Path, help="write the figures to FILE")
    args = parser.parse_args()
    if not args.database_url.startswith("postgres"):
        parser.error("--database-url must be PostgreSQL (production's configuration)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.n + 1024
    if hard != resource.RLIM_INFINITY and hard < wanted:
        print(f"open-file limit {hard} is too low for {args.n} sockets; use --n", file=sys.stderr)
        return 1
    if soft < wanted:  # the servers inherit it
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    ensure_database(args.database_url)
    print(f"{machine()}; {versions()}; load average {loadavg()}", flush=True)
    runs: list[tuple[Run, list[str]]] = []
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="capsule-soak-baseline-") as tmp:
            root = checkout(args.baseline, Path(tmp))
            name = urlsplit(args.database_url).path.lstrip("/") + "_baseline"
            base_url = urlunsplit(urlsplit(args.database_url)._replace(path=f"/{name}"))
            ensure_database(base_url)
            runs.append(
                serve(f"baseline {args.baseline}", root, args, base_url, args.baseline_hold)
            )
    runs.append(serve("this checkout", ROOT, args, args.database_url, args.hold))
    for run, errors in runs:
        report(run)
        if errors:
            print(f"  server log: {len(errors)} ERROR/Traceback lines, first: {errors[0][:200]}")
    if args.json:
        args.json.write_text(json.dumps([asdict(run) for run, _ in runs], indent=1) + "\n")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
