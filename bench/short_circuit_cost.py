"""What a short-circuited proxy call costs beside a verdict, in-process (issue 13).

    python -m bench.short_circuit_cost [--rounds 15] [--redis redis://127.0.0.1:6379/0]

The site's ASGI application is called in this process, as a server calls it
(no socket, no HTTP parsing: what is left is the app's own cost), for a warm
token whose clock says peak hours (off duty): ``POST /api/v1/verdict`` (the
verdict API's lean route), and each proxy door's short-circuit (JSON and SSE)
through the proxy's lean route and through Django's proxy route (the lean
route serving no path: what it cost before). Rounds of 100 calls of each are
interleaved, so drift on a shared machine hits every row alike; the median
of the rounds is printed, and the best round (the least disturbed by others).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

CHAT: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
DOORS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", CHAT),
    "responses": ("/v1/responses", {"model": "m", "input": "hello"}),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 256, "messages": CHAT["messages"]}),
    "completions": ("/v1/completions", {"model": "m", "prompt": "hello"}),
}
PER_ROUND = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--redis", metavar="URL", help="Redis for the cache and the throttle")
    args, _ = parser.parse_known_args()

    workdir = Path(tempfile.mkdtemp(prefix="curfew-short-circuit-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["CURFEW_LEAN_API"] = "1"
    if args.redis:
        os.environ["REDIS_URL"] = args.redis
        os.environ["CURFEW_REDIS_PREFIX"] = f"bench-short-circuit-{os.getpid()}"
    else:
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import override_settings
    from django.utils import timezone

    from curfew_core import async_cache, override_commands
    from curfew_core.ledger import recorder
    from curfew_core.proxy import lean
    from curfew_core.services.overrides import override_apply
    from curfew_core.services.tokens import token_create
    from curfew_site.asgi import application
    from curfew_testkit.asgi_scope import http_scope

    call_command("migrate", "--no-input", verbosity=0)
    user = User.objects.create_user("bench")
    _, raw = token_create(user=user, name="bench")
    peak = override_commands.from_json({"debug": "2026-09-29 10:00"})
    override_apply(user=user, command=peak, now=timezone.now())

    async def call(path: str, body: bytes) -> None:
        sent: list[dict[str, Any]] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await asyncio.Event().wait()  # a client waiting for its answer
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        headers = [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {raw}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await application(http_scope("POST", path, headers), receive, send)
        if sent[0]["status"] != 200:
            raise SystemExit(f"{path} answered {sent[0]['status']}: {sent[-1].get('body')!r}")

    lean_routes = dict(lean.ROUTES)

    def through(routes: dict[str, Any], path: str, body: bytes) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            lean.ROUTES = routes  # the lean route serves these paths (none: Django's)
            await call(path, body)

        return one

    calls: dict[str, Callable[[], Awaitable[None]]] = {
        "verdict": through(
            lean_routes, "/api/v1/verdict", json.dumps({"max_tokens": 4096}).encode()
        )
    }
    for name, (path, body) in DOORS.items():
        for kind, sent in (("JSON", body), ("SSE", {**body, "stream": True})):
            raw_body = json.dumps(sent).encode()
            calls[f"{name} {kind} lean"] = through(lean_routes, path, raw_body)
            calls[f"{name} {kind} django"] = through({}, path, raw_body)

    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {label: [] for label in calls}
        for one in calls.values():
            for _ in range(20):
                await one()  # warm: token, rows, built memo, every code path
        for _ in range(args.rounds):
            for label, one in calls.items():
                started = time.perf_counter()
                for _ in range(PER_ROUND):
                    await one()
                out[label].append((time.perf_counter() - started) / PER_ROUND * 1e6)
            recorder.discard()  # the ledger's buffer (no flusher in the test settings)
        lean.ROUTES = lean_routes
        await async_cache.aclose()
        return out

    # A rate no benchmark reaches: its counter is still hit on every request.
    with override_settings(CURFEW_TOKEN_RATE="1000000/minute"):  # noqa: S106
        cost = asyncio.run(run())

    verdict = statistics.median(cost["verdict"])
    best_verdict = min(cost["verdict"])
    where = f"Redis at {args.redis}" if args.redis else "in-memory cache and counts"
    print(
        f"in-process, warm, off duty ({where}); {args.rounds} interleaved rounds of "
        f"{PER_ROUND} calls each, µs per call: the rounds' median (and best round)"
    )
    print(f"  {'POST /api/v1/verdict (lean route)':<34} {verdict:>7.0f} ({best_verdict:.0f})")
    print(
        f"  {'short-circuit':<18} {'lean route':>16} {'÷ verdict':>15} "
        f"{'Django route':>16} {'÷ verdict':>15}"
    )
    for name in DOORS:
        for kind in ("JSON", "SSE"):
            row = f"  {name + ' ' + kind:<18}"
            for route in ("lean", "django"):
                rounds = cost[f"{name} {kind} {route}"]
                mid, best = statistics.median(rounds), min(rounds)
                row += (
                    f" {mid:>7.0f} ({best:>5.0f}) {mid / verdict:>6.2f}x "
                    f"({best / best_verdict:.2f}x)"
                )
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
