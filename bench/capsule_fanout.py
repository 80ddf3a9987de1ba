"""How fast one change reaches N open capsules on one server process, and what they cost.

Starts the real app (uvicorn, in-memory channel layer, SQLite) like the test
harness does, opens N capsule sockets (default 1,000) from this process over
loopback, then fires two kinds of change and times how long until every capsule
had the new state:

* override (group push): ``POST /api/v1/overrides {"overtime": …}``: one
  ``user.changed`` group message after the commit; each consumer re-reads.
* override expiry (timers): nothing is sent; each consumer's one timer fires at
  the verdict's ``valid_until`` (the overtime's end) and re-reads. Latency is
  measured from that instant. This is the "boundary" path.

Also reports the server's resident memory idle and with N capsules open.
Bounded: loopback only, every wait has a timeout. ``--redis URL`` runs the same
with the Redis channel layer and cache (own key prefix) instead of in-memory.

    .venv/bin/python -m bench.capsule_fanout [--n 1000] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from curfew_testkit.server import ServedApp

ROOT = Path(__file__).resolve().parents[1]

USER = "fanout"
TIMEOUT = 120.0  # seconds, for any one phase


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def post(app: ServedApp, token: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{app.base_url}/api/v1/overrides",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def open_capsules(url: str, n: int) -> list[ClientConnection]:
    gate = asyncio.Semaphore(64)  # do not flood the accept backlog

    async def one() -> ClientConnection:
        async with gate:
            ws = await connect(url, open_timeout=30, ping_interval=None, max_size=2**20)
            await asyncio.wait_for(ws.recv(), 30)  # the state on connect
            return ws

    return list(await asyncio.wait_for(asyncio.gather(*(one() for _ in range(n))), TIMEOUT))


async def arrivals(
    sockets: list[ClientConnection],
    wanted: Callable[[dict[str, Any]], bool],
    fire: Callable[[], Any],
) -> tuple[list[float], Any]:
    """Wall-clock arrival time (epoch s) of the first wanted state on every socket."""

    async def watch(ws: ClientConnection) -> float:
        while True:
            state = json.loads(await ws.recv())
            if wanted(state):
                return time.time()

    watchers = [asyncio.ensure_future(watch(ws)) for ws in sockets]
    await asyncio.sleep(0.2)  # every watcher is parked in recv()
    fired = await asyncio.to_thread(fire)
    done = await asyncio.wait_for(asyncio.gather(*watchers), TIMEOUT)
    return list(done), fired


def row(name: str, latencies_ms: list[float], n: int) -> str:
    ordered = sorted(latencies_ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{name:<28}{statistics.median(ordered):>9.1f}{p99:>9.1f}{ordered[-1]:>9.1f}"
        f"{len(ordered):>7}/{n}"
    )


async def run(app: ServedApp, api: str, embed: str, n: int, layer: str) -> None:
    assert app.process is not None
    pid = app.process.pid
    idle = rss_mib(pid)
    url = f"ws://127.0.0.1:{app.port}/ws/capsule/?token={embed}"
    began = time.perf_counter()
    sockets = await open_capsules(url, n)
    opened = time.perf_counter() - began
    loaded = rss_mib(pid)

    # 1. A change pushed to the user's group after the commit.
    fired_at = answered_at = 0.0

    def start_overtime() -> Any:
        nonlocal fired_at, answered_at
        fired_at = time.time()
        answer = post(app, api, {"overtime": "6s"})
        answered_at = time.time()
        return answer

    times, state = await arrivals(sockets, lambda s: s["override"] == "overtime", start_overtime)
    pushed = [(t - fired_at) * 1000 for t in times]

    # 2. The boundary: the overtime ends, each capsule's own timer notices.
    boundary = datetime.fromisoformat(state["override_until"]).timestamp()
    times, _ = await arrivals(sockets, lambda s: s["override"] is None, lambda: None)
    timed = [(t - boundary) * 1000 for t in times]
    after = rss_mib(pid)

    for ws in sockets:
        await ws.close()

    print(f"capsule fan-out: {n} capsules of one user on one server process")
    print(f"(uvicorn, {layer} channel layer, SQLite; client in this process; loopback)")
    print()
    print(f"{'change':<28}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'got':>12}")
    print(row("override (group push)", pushed, n))
    print(row("override expiry (timers)", timed, n))
    print()
    print(f"{'server memory':<28}{'RSS MiB':>9}")
    print(f"{'idle':<28}{idle:>9.1f}")
    print(f"{f'{n} capsules open':<28}{loaded:>9.1f}")
    print(f"{'after both changes':<28}{after:>9.1f}")
    per = (loaded - idle) * 1024 / n
    print(f"\nthe override's own API request took {(answered_at - fired_at) * 1000:.0f} ms")
    print(f"opening {n} capsules took {opened:.2f}s; about {per:.0f} KiB of server RSS each")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="capsules to open (default 1000)")
    parser.add_argument("--redis", metavar="URL", help="use the Redis channel layer at URL")
    args = parser.parse_args()
    if not 1 <= args.n <= 5000:
        parser.error("--n must be between 1 and 5000")
    env = {}
    if args.redis:
        env = {"REDIS_URL": args.redis, "CURFEW_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:12]}"}
    with tempfile.TemporaryDirectory(prefix="capsule-fanout-") as tmp:
        app = ServedApp(Path(tmp), env=env)
        app.manage("migrate", "--no-input", "-v0")
        api = app.create_user(USER)
        embed = app.manage("curfew", "embed-token", "--user", USER).stdout.split()[-1]
        app.start()
        try:
            asyncio.run(run(app, api, embed, args.n, "Redis" if args.redis else "in-memory"))
        except BaseException:
            print(f"server log:\n{app.log_path.read_text()[-3000:]}", file=sys.stderr)
            raise
        finally:
            app.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
