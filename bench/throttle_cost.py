"""What the throttle adds to a warm verdict: in-process, throttle on against off.

    python -m bench.throttle_cost [--requests 2000] [--redis redis://127.0.0.1:6379/0]

Django's test client calls the verdict API in this process (no server, no
socket to the client), so the difference is the throttle's own cost: one hit
on the token's rate, a Redis round trip (counted below) or a few dict
operations in memory. Blocks of on and off alternate so drift hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--redis", metavar="URL", help="Redis for the cache and the throttle")
    args, _ = parser.parse_known_args()

    workdir = Path(tempfile.mkdtemp(prefix="curfew-throttle-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    if args.redis:
        os.environ["REDIS_URL"] = args.redis
        os.environ["CURFEW_REDIS_PREFIX"] = f"bench-throttle-{os.getpid()}"
    else:
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    import redis
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client, override_settings

    from curfew_core import throttle
    from curfew_core.services.tokens import token_create

    call_command("migrate", "--no-input", verbosity=0)
    user = User.objects.create_user("bench")
    _, raw = token_create(user=user, name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")

    calls = 0
    original = redis.Redis.execute_command

    def counting(self: redis.Redis, *a: object, **k: object) -> object:
        nonlocal calls
        calls += 1
        return original(self, *a, **k)

    redis.Redis.execute_command = counting  # type: ignore[method-assign]

    def block(n: int) -> tuple[float, float]:
        """µs per request and Redis commands per request over ``n`` verdicts."""
        nonlocal calls
        calls = 0
        started = time.perf_counter()
        for _ in range(n):
            response = client.post("/api/v1/verdict", "{}", content_type="application/json")
            assert response.status_code == 200, response.content
        return (time.perf_counter() - started) / n * 1e6, calls / n

    # A rate no benchmark reaches: its counter is still hit on every request.
    with override_settings(CURFEW_TOKEN_RATE="1000000/minute"):  # noqa: S106
        block(200)  # warm: token, schedule, built memo, script SHAs
        on, off, on_calls, off_calls = [], [], [], []
        size = max(50, args.requests // 10)
        for _ in range(10):
            cost, per = block(size)
            on.append(cost)
            on_calls.append(per)
            with override_settings(CURFEW_THROTTLE=False):
                cost, per = block(size)
            off.append(cost)
            off_calls.append(per)
        throttle.reset()

    where = f"Redis at {args.redis}" if args.redis else "in-memory cache and counts"
    print(f"warm POST /api/v1/verdict in-process ({where}), {10 * size} requests each:")
    print(f"  {'throttle':<10} {'µs/request (median of 10)':>27} {'Redis commands/request':>24}")
    print(f"  {'off':<10} {statistics.median(off):>27.0f} {statistics.mean(off_calls):>24.2f}")
    print(f"  {'on':<10} {statistics.median(on):>27.0f} {statistics.mean(on_calls):>24.2f}")
    added = statistics.median(on) - statistics.median(off)
    print(f"  added: {added:.0f} µs per request ({added / statistics.median(off):.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
