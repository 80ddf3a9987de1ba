"""What a short-circuited proxy call costs beside a verdict, in-process (issue 13).

    python -m bench.short_circuit_cost [--rounds 15] [--redis redis://127.0.0.1:6379/0]

The site's ASGI application is called in this process, as a server calls it
(no socket, no HTTP parsing: what is left is the app's own cost), for a warm
token whose clock says peak hours (off duty): ``POST /api/v1/verdict`` and
``GET /api/v1/state`` through the edge, and each proxy door's short-circuit
(JSON and SSE), beside two baselines called the same way: a raw ASGI
hello-world app (``curfew_testkit.hello``: the least an app can do) and a
trivial Django view in the site (``GET /healthz``). Rounds of 100 calls of
each are interleaved, so drift on a shared machine hits every row alike; the
median of the rounds is printed, and the best round (the least disturbed by
others).
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

    from curfew_core.schedules import override_commands
    from curfew_core.services import ledger_recorder as recorder
    from curfew_core.services.overrides import override_apply
    from curfew_core.services.tokens import token_create
    from curfew_core.store import async_cache
    from curfew_site.asgi import application
    from curfew_testkit import hello
    from curfew_testkit.asgi_scope import http_scope

    call_command("migrate", "--no-input", verbosity=0)
    user = User.objects.create_user("bench")
    _, raw = token_create(user=user, name="bench")
    peak = override_commands.from_json({"debug": "2026-09-29 10:00"})
    override_apply(user=user, command=peak, now=timezone.now())

    def caller(
        app: Any, method: str, path: str, body: bytes = b"", *, token: bool = True
    ) -> Callable[[], Awaitable[None]]:
        headers = [(b"host", b"testserver"), (b"content-length", str(len(body)).encode())]
        if token:
            headers.append((b"authorization", f"Bearer {raw}".encode()))
        if body:
            headers.append((b"content-type", b"application/json"))

        async def one() -> None:
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

            await app(http_scope(method, path, headers), receive, send)
            if sent[0]["status"] != 200:
                raise SystemExit(f"{path} answered {sent[0]['status']}: {sent[-1].get('body')!r}")

        return one

    calls: dict[str, Callable[[], Awaitable[None]]] = {
        "raw ASGI hello-world": caller(hello.app, "GET", "/", token=False),
        "GET /healthz (trivial view)": caller(application, "GET", "/healthz", token=False),
        "POST /api/v1/verdict": caller(
            application, "POST", "/api/v1/verdict", json.dumps({"max_tokens": 4096}).encode()
        ),
        "GET /api/v1/state": caller(application, "GET", "/api/v1/state"),
    }
    baselines = list(calls)
    for name, (path, body) in DOORS.items():
        for kind, sent in (("JSON", body), ("SSE", {**body, "stream": True})):
            calls[f"{name} {kind}"] = caller(application, "POST", path, json.dumps(sent).encode())

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
        await async_cache.aclose()
        return out

    # A rate no benchmark reaches: its counter is still hit on every request.
    with override_settings(CURFEW_TOKEN_RATE="1000000/minute"):  # noqa: S106
        cost = asyncio.run(run())

    verdict = statistics.median(cost["POST /api/v1/verdict"])
    best_verdict = min(cost["POST /api/v1/verdict"])
    where = f"Redis at {args.redis}" if args.redis else "in-memory cache and counts"
    print(
        f"in-process, warm, off duty ({where}); {args.rounds} interleaved rounds of "
        f"{PER_ROUND} calls each, µs per call: the rounds' median (and best round), "
        "and against the verdict's"
    )
    print(f"  {'call':<30} {'µs':>16} {'÷ verdict':>15}")
    for label in [*baselines, *(label for label in calls if label not in baselines)]:
        rounds = cost[label]
        mid, best = statistics.median(rounds), min(rounds)
        print(
            f"  {label:<30} {mid:>7.0f} ({best:>6.0f}) {mid / verdict:>6.2f}x "
            f"({best / best_verdict:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
