"""Verdicts per second: the engine alone, and the API against a trivial JSON
view (``/healthz``) on the same server and a raw ASGI app (the floor), side by
side in one run (``bench/edge_floor.py``: the same with ``GET /api/v1/state``,
loaded by wrk).

    python -m bench.verdict_throughput [--seconds 8] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from curfew_core.engine import RequestContext, decide
from curfew_testkit.loadgen import build_request, is_verdict, load

ROOT = Path(__file__).resolve().parents[1]


def engine_rate(seconds: float) -> list[tuple[str, float]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings_test")
    import django

    django.setup()
    from curfew_core.schedules import config as schedule_config

    schedule = schedule_config.build(
        schedule_config.default_config()
    )  # with the CN holiday calendar
    tz = ZoneInfo("Asia/Shanghai")
    rows = []
    for label, moment in [
        ("on duty (Tue 20:00)", datetime(2026, 9, 29, 20, 0, tzinfo=tz)),
        ("winding (Tue 23:30)", datetime(2026, 9, 29, 23, 30, tzinfo=tz)),
        ("peak (Tue 10:00)", datetime(2026, 9, 29, 10, 0, tzinfo=tz)),
    ]:
        request = RequestContext(max_tokens=4096)
        decide(moment, schedule, request)
        count = 0
        deadline = time.perf_counter() + seconds / 3
        started = time.perf_counter()
        while time.perf_counter() < deadline:
            for _ in range(200):
                decide(moment, schedule, request)
            count += 200
        elapsed = time.perf_counter() - started
        rows.append((label, count / elapsed))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    args, _ = parser.parse_known_args()

    print("engine alone (one core, in-process):")
    print(f"  {'scenario':<22} {'verdicts/s':>12} {'µs/verdict':>11}")
    for label, rate in engine_rate(6.0):
        print(f"  {label:<22} {rate:>12,.0f} {1e6 / rate:>11.1f}")

    import statistics

    from curfew_testkit.server import ServedApp

    rounds = max(1, args.rounds)
    print(
        f"\none server process each (uvicorn, SQLite, in-memory cache), {args.concurrency} "
        f"concurrent clients; {rounds} interleaved rounds of {args.seconds / rounds:.1f}s per "
        "row (every server and endpoint in each round, so a busy machine slows all alike); "
        "medians of the rounds. x = throughput against the trivial view of the same server "
        "(issue 13's target: verdict >= 2x); floor = against a raw ASGI hello-world app "
        "served with the same flags (issue 21's target: verdict >= 0.33x):"
    )
    print(
        f"  {'endpoint':<44} {'req/s':>8} {'x':>6} {'floor':>6} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'errors':>7}"
    )
    # The edge with and without the decision ledger (issue 14: recording must
    # not cost a measurable drop), each beside its own trivial Django view;
    # and the floor: a raw ASGI app (curfew_testkit.hello) with the same flags.
    setups = [
        ("edge", {}),
        ("edge, no ledger", {"CURFEW_LEDGER": "0"}),
    ]
    env = {"CURFEW_TOKEN_RATE": "off", "CURFEW_MANIFEST_STATIC": "0", "REDIS_URL": ""}
    apps = []
    try:
        floor = ServedApp(
            Path(tempfile.mkdtemp(prefix="curfew-bench-")), env=env, app="curfew_testkit.hello:app"
        )
        apps.append(floor)
        floor.start()
        hello = build_request("GET", floor.base_url + "/")
        load(hello, clients=4, seconds=1)  # warm-up
        runs: list[tuple[str, Any, Any, str]] = [
            ("raw ASGI hello-world (the floor)", hello, None, "floor")
        ]
        for route, setup in setups:
            # One token stands in for a whole fleet: its own rate would cap the run.
            app = ServedApp(Path(tempfile.mkdtemp(prefix="curfew-bench-")), env={**env, **setup})
            apps.append(app)
            app.manage("migrate", "--no-input", "-v0")
            app.start()
            token = app.create_user("bench")
            auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            trivial = build_request("GET", app.base_url + "/healthz")
            verdict = build_request(
                "POST", app.base_url + "/api/v1/verdict", headers=auth, body=b'{"max_tokens": 4096}'
            )
            load(trivial, clients=4, seconds=1)  # warm-up
            load(verdict, clients=4, seconds=1, check=is_verdict)
            runs.append(("GET /healthz (trivial Django view)", trivial, None, route))
            runs.append((f"POST /api/v1/verdict ({route})", verdict, is_verdict, route))
        slices: dict[tuple[str, str], list[Any]] = {(label, route): [] for label, *_, route in runs}
        for _ in range(rounds):
            for label, request, check, route in runs:
                kwargs = {"check": check} if check else {}
                report = load(
                    request, clients=args.concurrency, seconds=args.seconds / rounds, **kwargs
                )
                slices[label, route].append(report)
        floor_rate = trivial_rate = 0.0
        for label, _request, _check, route in runs:
            mine = slices[label, route]
            rate = statistics.median(report.rate for report in mine)
            if route == "floor":
                floor_rate = trivial_rate = rate
            elif label.startswith("GET /healthz"):
                trivial_rate = rate
            p50 = statistics.median(report.percentile(0.5) for report in mine)
            p99 = statistics.median(report.percentile(0.99) for report in mine)
            errors = sum(report.errors for report in mine)
            print(
                f"  {label:<44} {rate:>8,.0f} {rate / trivial_rate:>6.2f} "
                f"{rate / floor_rate:>6.2f} {p50:>8.1f} {p99:>8.1f} {errors:>7}",
                flush=True,
            )
    finally:
        for app in apps:
            app.stop()


if __name__ == "__main__":
    main()
