"""Engine speed: µs per verdict of ``decide``, beside the implementation it
replaced (``curfew_testkit.engine_reference``: datetimes for every night and peak
window, read per call from a per-date frame) in the same run, and the 20 µs
target of issue 13.

One core, in-process, no Django request: the default schedule with the CN
holiday calendar (as the API builds it), instants in UTC (as the API passes
``now``). Old and new run in alternating blocks of 200 calls for ``--seconds``
per instant; each figure is the best block, so a busy machine slows both alike
and the ratio holds.

    python -m bench.engine_speed [--seconds 4]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from curfew_core.engine import RequestContext, Schedule, Verdict, decide
from curfew_testkit.engine_reference import reference_decide

TARGET_US = 20.0
BLOCK = 200
SHANGHAI = ZoneInfo("Asia/Shanghai")
CASES = [
    ("on duty (Tue 20:00)", datetime(2026, 9, 29, 20, 0, tzinfo=SHANGHAI)),
    ("winding (Tue 23:30)", datetime(2026, 9, 29, 23, 30, tzinfo=SHANGHAI)),
    ("peak (Tue 10:00)", datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI)),
    ("lights out (Wed 04:00)", datetime(2026, 9, 30, 4, 0, tzinfo=SHANGHAI)),
]

Decide = Callable[[datetime, Schedule, RequestContext], Verdict]


def default_schedule() -> Schedule:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings_test")
    import django

    django.setup()
    from curfew_core.schedules import config as schedule_config

    return schedule_config.build(schedule_config.default_config())  # CN holiday calendar


def block(fn: Decide, now: datetime, schedule: Schedule, request: RequestContext) -> float:
    """Seconds per call over one block of calls."""
    started = time.perf_counter()
    for _ in range(BLOCK):
        fn(now, schedule, request)
    return (time.perf_counter() - started) / BLOCK


def measure(
    now: datetime, schedule: Schedule, request: RequestContext, seconds: float
) -> tuple[float, float]:
    """Best µs per verdict of (new, old), in alternating blocks for ``seconds``."""
    best_new = best_old = float("inf")
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        best_new = min(best_new, block(decide, now, schedule, request))
        best_old = min(best_old, block(reference_decide, now, schedule, request))
    return best_new * 1e6, best_old * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0, help="per instant")
    args, _ = parser.parse_known_args()

    schedule = default_schedule()
    request = RequestContext(max_tokens=4096)
    print(
        f"engine alone (one core, in-process; best {BLOCK}-call block in {args.seconds:.0f}s "
        "per instant, old and new alternating):"
    )
    print(
        f"  {'instant':<24} {'µs/verdict':>10} {'before':>8} {'speed-up':>9} "
        f"{'target':>7} {'met':>4}"
    )
    for label, moment in CASES:
        now = moment.astimezone(UTC)
        new, old = decide(now, schedule, request), reference_decide(now, schedule, request)
        if new != old or new.reason != old.reason:  # the bench measures the same answer
            raise SystemExit(f"{label}: the engine and its reference disagree")
        fast, before = measure(now, schedule, request, args.seconds)
        met = "yes" if fast <= TARGET_US else "no"
        print(
            f"  {label:<24} {fast:>10.1f} {before:>8.1f} {before / fast:>8.1f}× "
            f"{TARGET_US:>7.0f} {met:>4}"
        )


if __name__ == "__main__":
    main()
