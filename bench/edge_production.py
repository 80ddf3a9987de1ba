"""The warm verdict in production's configuration against the server's floor (issue 40).

    python -m bench.edge_production [--seconds 4] [--rounds 3] [--connections 32]
                                    [--baseline DIR] [--served-by {serve,uvicorn}]
                                    [--write docs/benchmarks/edge_production.md]

``bench.edge_floor`` measures SQLite and the process-local cache. Companies run
``bin/serve`` on PostgreSQL and Redis: here, side by side in one run, the raw
ASGI hello-world (the floor, one uvicorn worker with the site's flags) and
the warm ``POST /api/v1/verdict`` of this checkout served by ``bin/serve``
with one worker (its production settings behind a TLS proxy, its app factory
and its collector's settings, ``curfew_site.serve``), on a throwaway
PostgreSQL database and a Redis namespace of its own, with the token's rate
counted (a generous rate, so it counts and never refuses), and a second
floor: a raw ASGI app answering the verdict's own exchange (its request, and
this checkout's answer's headers and length: ``hello.shaped``, as
``bench.edge_floor`` serves it). ``--served-by
uvicorn`` serves the site as the floor is served instead (``curfew_site.asgi``
under plain uvicorn, as every run before 2026-12-06 did). With
``--baseline DIR`` (another checkout, e.g. ``git archive <commit> | tar -x``),
that checkout's warm verdict in the same configuration. Each row also
reports the Redis commands one warm verdict costs (``MONITOR``, filtered by
its namespace), and the server's own CPU a request (``/proc``, user and
system): on a shared machine the floor's throughput moves with the host, and
the ratio with it; the CPU a request moves less. ``--write FILE`` appends the
run (markdown) to FILE.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.edge_floor import VERDICT_BODY, Row, loadgen_slice, shaped_floor, wrk_slice
from bench.record import cpu_seconds, loadavg, machine, published, versions
from curfew_testkit.server import ROOT, ServedApp

POSTGRES = "postgres://postgres@127.0.0.1:5432"
#: How the site is served (``--served-by``), as each run's line says.
SERVED_BY = {"serve": "bin/serve", "uvicorn": "plain uvicorn (curfew_site.asgi)"}
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def _pid(server: ServedApp) -> int:
    """The served app's process (``bin/serve`` with one worker ``exec``s it)."""
    assert server.process is not None, "started"
    return server.process.pid


def commands_per_verdict(row: Row, prefix: str, requests: int = 20) -> float:
    """The Redis commands naming ``prefix`` that ``requests`` warm verdicts cost, each."""
    import urllib.request

    client: Any = redis.Redis.from_url(REDIS_URL)
    mark = f"bench-mark-{secrets.token_hex(4)}"
    seen: list[str] = []
    ready = threading.Event()

    def watch() -> None:
        with client.monitor() as monitor:
            ready.set()
            for found in monitor.listen():
                if mark in found["command"]:
                    return
                if prefix in found["command"]:
                    seen.append(found["command"])

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    ready.wait(5)
    time.sleep(0.2)
    for _ in range(requests):
        request = urllib.request.Request(
            row.url, data=row.body, headers=row.headers, method=row.method
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()
    time.sleep(0.2)
    client.get(mark)
    thread.join(5)
    return len(seen) / requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--baseline", type=Path, help="another checkout to serve beside this one")
    parser.add_argument("--write", type=Path, metavar="FILE")
    parser.add_argument(
        "--served-by",
        choices=("serve", "uvicorn"),
        default="serve",
        help="the site by bin/serve with one worker (production), or by plain uvicorn",
    )
    parser.add_argument(
        "--token-rate",
        default="100000000/minute",
        help="CURFEW_TOKEN_RATE of the served apps (counted, never refusing; 'off': not counted)",
    )
    args = parser.parse_args()
    slice_of = wrk_slice if shutil.which("wrk") else loadgen_slice
    database = f"curfew_bench_{secrets.token_hex(4)}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    env = {
        "DATABASE_URL": f"{POSTGRES}/{database}",
        "REDIS_URL": REDIS_URL,
        "CURFEW_TOKEN_RATE": args.token_rate,
        "CURFEW_MANIFEST_STATIC": "0",
        "CURFEW_LOG_LEVEL": "WARNING",
    }
    servers: list[ServedApp] = []
    rows: list[Row] = []
    #: Each row's server CPU a request (µs), a round each.
    used: dict[str, list[float]] = defaultdict(list)
    prefixes: dict[str, str] = {}
    started_load = loadavg()
    try:
        floor = ServedApp(
            Path(tempfile.mkdtemp(prefix="curfew-floor-")), env=env, app="curfew_testkit.hello:app"
        )
        servers.append(floor)
        rows.append(Row("floor", "raw ASGI hello-world (the floor)", "GET", floor.base_url + "/"))
        roots = [("this", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
        for name, root in roots:
            prefix = f"bench-{name}-{secrets.token_hex(4)}"
            site = ServedApp(
                Path(tempfile.mkdtemp(prefix=f"curfew-{name}-")),
                env={**env, "CURFEW_REDIS_PREFIX": prefix},
                root=root,
                workers=1 if args.served_by == "serve" else None,
            )
            if name == "this":
                site.manage("migrate", "--no-input", "-v0")
            token = site.create_user(f"bench-{name}")
            servers.append(site)
            prefixes[name] = prefix
            rows.append(
                Row(
                    name,
                    f"POST /api/v1/verdict (warm), {name}",
                    "POST",
                    site.base_url + "/api/v1/verdict",
                    {
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                        **site.client_headers,
                    },
                    VERDICT_BODY,
                    verdict=True,
                )
            )
        for server in servers:
            server.start(timeout=180)
        # A second floor: a raw app answering the verdict's own exchange (its
        # request, and an answer with this checkout's headers and length),
        # served with the floor's flags: what the server alone costs for it.
        shaped, shaped_row = shaped_floor(rows[1], env)
        servers.insert(1, shaped)
        rows.insert(1, shaped_row)
        for row in rows:
            slice_of(row, connections=8, seconds=1)  # warm-up
        commands = {row.key: commands_per_verdict(row, prefixes[row.key]) for row in rows[2:]}
        seconds = max(1, args.seconds)
        for _ in range(max(1, args.rounds)):
            for row, server in zip(rows, servers, strict=True):
                pid = _pid(server)
                before = cpu_seconds(pid)
                rate, p50, p99, errors = slice_of(
                    row, connections=args.connections, seconds=seconds
                )
                # The server's own CPU a request: what it costs, whatever wrk,
                # PostgreSQL or the host took of the cores meanwhile.
                used[row.key].append((cpu_seconds(pid) - before) / (rate * seconds) * 1e6)
                row.rates.append(rate)
                row.p50s.append(p50)
                row.p99s.append(p99)
                row.errors += errors
    finally:
        for server in servers:
            server.stop()
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    floor_rate = statistics.median(rows[0].rates)
    floor_cpu = statistics.median(used[rows[0].key])
    lines = [
        f"{machine()}; {versions()}; PostgreSQL + Redis, one uvicorn worker each, "
        f"the site served by {SERVED_BY[args.served_by]}, "
        f"{args.connections} connection{'s' if args.connections != 1 else ''}, "
        f"{args.rounds} rounds of {args.seconds}s (medians); "
        f"load average {started_load}",
        "",
        "| row | req/s | x floor | p50 ms | p99 ms | Redis commands a verdict | errors "
        "| server CPU µs a request | x floor by CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        rate = statistics.median(row.rates)
        lines.append(
            f"| {row.label} | {rate:,.0f} | {rate / floor_rate:.2f} | "
            f"{statistics.median(row.p50s):.2f} | {statistics.median(row.p99s):.2f} | "
            f"{commands.get(row.key, 0):.1f} | {row.errors} | "
            f"{statistics.median(used[row.key]):.0f} | "
            f"{floor_cpu / statistics.median(used[row.key]):.2f} |"
        )
    exchange = statistics.median(rows[1].rates) / statistics.median(rows[2].rates)
    lines += [
        "",
        f"This checkout's warm verdict against the raw app answering its exchange: "
        f"{1 / exchange:.2f}x by throughput, "
        f"{statistics.median(used['shaped']) / statistics.median(used['this']):.2f}x by CPU.",
    ]
    text = "\n".join(lines)
    published(text, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
