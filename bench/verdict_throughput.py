"""Verdicts per second: the engine alone, and the API against a trivial JSON
view (``/healthz``) on the same server, side by side in one run.

    python -m bench.verdict_throughput [--seconds 8] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from curfew_core.engine import RequestContext, decide
from curfew_testkit.loadgen import build_request, is_verdict, load

ROOT = Path(__file__).resolve().parents[1]


def engine_rate(seconds: float) -> list[tuple[str, float]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings_test")
    import django

    django.setup()
    from curfew_core import schedule_config

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
    args, _ = parser.parse_known_args()

    print("engine alone (one core, in-process):")
    print(f"  {'scenario':<22} {'verdicts/s':>12} {'µs/verdict':>11}")
    for label, rate in engine_rate(6.0):
        print(f"  {label:<22} {rate:>12,.0f} {1e6 / rate:>11.1f}")

    from curfew_testkit.server import ServedApp

    print(
        f"\none server process (uvicorn, SQLite, in-memory cache), "
        f"{args.concurrency} concurrent clients, {args.seconds:.0f}s each; "
        "x = throughput against the trivial view of the same server (target: verdict >= 2x):"
    )
    print(f"  {'endpoint':<44} {'req/s':>8} {'x':>6} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    # The lean route (issue 13) with and without the decision ledger (issue 14:
    # recording must not cost a measurable drop), and, as the baseline,
    # Django's view (CURFEW_LEAN_API=0).
    setups = [
        ("lean route", {"CURFEW_LEAN_API": "1"}),
        ("lean, no ledger", {"CURFEW_LEAN_API": "1", "CURFEW_LEDGER": "0"}),
        ("Django's view", {"CURFEW_LEAN_API": "0"}),
    ]
    for route, setup in setups:
        # One token stands in for a whole fleet: its own rate would cap the run.
        app = ServedApp(
            Path(tempfile.mkdtemp(prefix="curfew-bench-")),
            env={"CURFEW_TOKEN_RATE": "off", **setup},
        )
        app.manage("migrate", "--no-input", "-v0")
        app.start()
        try:
            token = app.create_user("bench")
            auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            body = b'{"max_tokens": 4096}'
            runs = [
                (
                    "GET /healthz (trivial JSON view)",
                    build_request("GET", app.base_url + "/healthz"),
                    None,
                ),
                (
                    f"POST /api/v1/verdict ({route})",
                    build_request(
                        "POST", app.base_url + "/api/v1/verdict", headers=auth, body=body
                    ),
                    is_verdict,
                ),
            ]
            trivial = None
            for label, request, check in runs:
                kwargs = {"check": check} if check else {}
                load(request, clients=4, seconds=1, **kwargs)  # warm-up
                result = load(request, clients=args.concurrency, seconds=args.seconds, **kwargs)
                trivial = trivial or result.rate
                print(
                    f"  {label:<44} {result.rate:>8,.0f} {result.rate / trivial:>6.2f} "
                    f"{result.percentile(0.5):>8.1f} {result.percentile(0.99):>8.1f} "
                    f"{result.errors:>7}",
                    flush=True,
                )
        finally:
            app.stop()


if __name__ == "__main__":
    main()
