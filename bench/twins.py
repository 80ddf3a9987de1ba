"""Twins that pay or go (issue 43): each speed twin against its original, A/B in one process.

    python -m bench.twins [--old COMMIT] [--rounds 15] [--database URL] [--redis URL]

An A/B for issue 43, run by hand (``make bench`` leaves it out: it reads the
old side from git).

A twin is a second copy of a rule kept for speed. It stays only where it pays
at least 5 % of the warm verdict on the edge bench in production's
configuration (PostgreSQL and Redis). Here both sides run in this one
process, in alternating blocks (old, new, old, new, ...), so a shared
machine's drift hits them alike; only their ratios count.

The old side is the code as it was at ``--old`` (the commit before the
twins went), loaded from git beside this tree's modules under names of its
own: ``api.hot`` (its ``_now``, ``timezone.now`` without the setting's
read), ``api.views`` + ``services.ledger_recorder`` (``record_verdict``: the
verdict's row and tally made inline, positional ``sums[0..4]``) and
``ledger.batch`` (``add_fields``: the tally's rule inline, apart from
``_count``'s). Twins that stay are measured against their originals the same
way (``selectors.verdicts``: ``verdict_json`` and ``_state_json`` against the
model's bytes,
``max_age`` against ``max_age_of``). Rows:

- the warm ``POST /api/v1/verdict`` through the site's ASGI app, 32 at a
  time as the edge bench's connections keep them in flight, called as a
  server calls it (no socket, no HTTP parsing: the app's own cost, so a
  twin's share here is larger than on the edge bench, where uvicorn's work
  is added), on PostgreSQL and Redis (the token's rate counted): this
  tree, the old code whole, and the old ``api.hot`` alone (its ``_now``);
  the raw ASGI hello-world (the edge bench's floor) beside them;
- each twin and its original alone: the verdict's ledger record, a proxy
  door's ``Batch.add``, the clock.

The ledger's buffer is dropped after each block (the flusher's write is off
the request, in a thread, alike for both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The last commit with the twins (``git show`` reads the old side from it).
OLD = "2563b5f"
PER_BLOCK = 256
POSTGRES = "postgres://postgres@127.0.0.1:5432"
#: Calls in flight at once, as the edge bench's connections keep them: a
#: verdict's waits on Redis overlap with the others' work, as in a server.
CONCURRENT = 32


def old_module(commit: str, path: str, name: str, swaps: dict[str, str]) -> types.ModuleType:
    """``path`` as it was at ``commit``, loaded as module ``name`` (its imports
    are this tree's, but for the lines ``swaps`` rewrites)."""
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    for old, new in swaps.items():
        assert old in source, f"{path}@{commit}: no {old!r}"
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = f"{path}@{commit}"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default=OLD, help="the commit whose code is the old side")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--database", metavar="URL", help="a PostgreSQL database (default: a throwaway one)"
    )
    parser.add_argument(
        "--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), metavar="URL"
    )
    args = parser.parse_args()
    throwaway = None
    if args.database is None:
        import psycopg

        throwaway = f"curfew_bench_twins_{os.getpid()}"
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{throwaway}"')
        args.database = f"{POSTGRES}/{throwaway}"
    try:
        return measure(args)
    finally:
        if throwaway is not None:
            import psycopg

            with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{throwaway}" WITH (FORCE)')


def measure(args: argparse.Namespace) -> int:

    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = args.database
    os.environ["REDIS_URL"] = args.redis
    os.environ["CURFEW_REDIS_PREFIX"] = f"bench-twins-{os.getpid()}"
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import override_settings
    from django.utils import timezone

    from curfew_core.api import hot
    from curfew_core.engine import Overrides, RequestContext, decide
    from curfew_core.hot_settings import setting
    from curfew_core.ledger.batch import Batch
    from curfew_core.ledger.entry import Entry, verdict_entry
    from curfew_core.schedules import config as schedule_config
    from curfew_core.selectors import verdicts
    from curfew_core.selectors.bundles import UserBundle
    from curfew_core.selectors.verdicts import max_age, verdict_answer, verdict_json
    from curfew_core.services import ledger_recorder as recorder
    from curfew_core.services.ledger import at_value
    from curfew_core.services.tokens import token_create
    from curfew_core.store import async_cache
    from curfew_site.asgi import application
    from curfew_testkit import hello
    from curfew_testkit.asgi_scope import http_scope

    old_batch = old_module(args.old, "curfew_core/ledger/batch.py", "twins_old_batch", {})
    old_recorder = old_module(
        args.old, "curfew_core/services/ledger_recorder.py", "twins_old_recorder", {}
    )
    old_recorder.Batch = old_batch.Batch  # type: ignore[attr-defined]
    old_views = old_module(
        args.old,
        "curfew_core/api/views.py",
        "twins_old_views",
        {
            "from curfew_core.services.ledger_recorder import record_verdict": (
                "from twins_old_recorder import record_verdict"
            )
        },
    )
    import_views = "from curfew_core.api.views import checked_verdict_request, verdict_body"
    old_hot = old_module(
        args.old,
        "curfew_core/api/hot.py",
        "twins_old_hot",
        {import_views: import_views.replace("curfew_core.api.views", "twins_old_views")},
    )
    old_verdicts = old_module(
        args.old, "curfew_core/selectors/verdicts.py", "twins_old_verdicts", {}
    )
    old_clock_only = old_module(args.old, "curfew_core/api/hot.py", "twins_old_hot_clock", {})
    del old_views

    call_command("migrate", "--no-input", verbosity=0)
    User.objects.filter(username="bench-twins").delete()
    user = User.objects.create_user("bench-twins")
    _, raw = token_create(user=user, name="bench")
    edge = application.application_mapping["http"]
    route = "curfew_core.api.hot.verdict"
    body = json.dumps({"max_tokens": 4096, "session_id": "s-1"}).encode()

    def caller(
        app: Any, method: str, path: str, sent: bytes = b""
    ) -> Callable[[], Awaitable[None]]:
        headers = [(b"host", b"testserver"), (b"content-length", str(len(sent)).encode())]
        if path.startswith("/api/"):
            headers.append((b"authorization", f"Bearer {raw}".encode()))
            headers.append((b"content-type", b"application/json"))

        async def one() -> None:
            answers: list[dict[str, Any]] = []
            delivered = False

            async def receive() -> dict[str, Any]:
                nonlocal delivered
                if delivered:
                    await asyncio.Event().wait()
                delivered = True
                return {"type": "http.request", "body": sent, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                answers.append(message)

            await app(http_scope(method, path, headers), receive, send)
            if answers[0]["status"] != 200:
                raise SystemExit(f"{path}: {answers[0]['status']} {answers[-1].get('body')!r}")

        return one

    verdict_call = caller(application, "POST", "/api/v1/verdict", body)
    handlers = {
        "verdict, this tree (originals)": hot.verdict,
        "verdict, old code (every twin)": old_hot.verdict,
        "verdict, old api.hot alone (_now)": old_clock_only.verdict,
    }

    def with_handler(handler: Any) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            edge.handlers[route] = handler
            await verdict_call()

        return one

    served: dict[str, Callable[[], Awaitable[None]]] = {
        "raw ASGI hello-world (floor)": caller(hello.app, "GET", "/"),
        **{label: with_handler(handler) for label, handler in handlers.items()},
    }

    # The twins alone, on the same inputs.
    at = datetime(2026, 9, 29, 15, 30, 1, 250, tzinfo=UTC)
    verdict = decide(at, schedule_config.build(schedule_config.default_config()), RequestContext())
    full = schedule_config.with_defaults({})
    held = UserBundle(
        user_id=7,
        version=1,
        config=full,
        schedule=schedule_config.build(full),
        overrides=Overrides(None, None, None),
    )
    new_batch, twin_batch = Batch(at_value()), old_batch.Batch(at_value())
    entry = Entry(
        at=at,
        state="winding",
        action="clamp",
        origin="chat",
        user_id=7,
        session="s-1",
        reason="winding down",
        budget_before=4096,
        budget_after=1024,
        input_tokens=12,
        output_tokens=300,
    )

    def twin_record() -> None:
        old_recorder.record_verdict(
            verdict,
            origin="verdict",
            at=at,
            user_id=7,
            session="s-1",
            purpose=None,
            budget_before=4096,
        )

    def original_record() -> None:
        recorder.record(
            verdict_entry(
                verdict,
                origin="verdict",
                at=at,
                user_id=7,
                session="s-1",
                purpose=None,
                budget_before=4096,
            )
        )

    alone: dict[str, Callable[[], object]] = {
        "record: record_verdict (twin)": twin_record,
        "record: record(verdict_entry(...))": original_record,
        "Batch.add: add_fields (twin)": lambda: twin_batch.add(entry, 7),
        "Batch.add: _count (one rule)": lambda: new_batch.add(entry, 7),
        "clock: hot._now (twin)": old_clock_only._now,
        "clock: timezone.now": timezone.now,
        "answer: verdict_json (twin)": lambda: verdict_json(verdict, now=at),
        "answer: the model's bytes": lambda: (
            verdict_answer(verdict, max_age=max_age(verdict, now=at)).model_dump_json().encode()
        ),
        "state: _state_json (twin)": lambda: verdicts._state_json(verdict, held, now=at),
        "state: the model's bytes": lambda: (
            verdicts._state_answer(verdict, held, now=at).model_dump_json().encode()
        ),
        "max_age: quick form (twin)": lambda: old_verdicts.max_age(verdict, now=at),
        "max_age: max_age_of": lambda: verdicts.max_age_of(
            verdict.valid_until, at, setting("CURFEW_VERDICT_MAX_AGE")
        ),
    }

    def forget() -> None:
        recorder.discard()
        old_recorder.discard()
        for batch in (new_batch, twin_batch):
            batch.rows.clear()
            batch.tallies.clear()

    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {
            label: [] for label in [*served, *(f"{label} CPU" for label in served), *alone]
        }
        for one in served.values():
            for _ in range(50):
                await one()
        rows = list(served.items())
        for round_ in range(args.rounds):
            # Each round in another order: no row always follows the same one
            # (the blocks before leave garbage and caches behind them).
            turn = round_ % len(rows)
            for label, call in rows[turn:] + rows[:turn]:
                started, cpu = time.perf_counter(), time.process_time()
                for _ in range(PER_BLOCK // CONCURRENT):
                    await asyncio.gather(*(call() for _ in range(CONCURRENT)))
                out[label].append((time.perf_counter() - started) / PER_BLOCK * 1e6)
                out[f"{label} CPU"].append((time.process_time() - cpu) / PER_BLOCK * 1e6)
                forget()
            for label, plain in alone.items():
                started = time.perf_counter()
                for _ in range(PER_BLOCK * 20):
                    plain()
                out[label].append((time.perf_counter() - started) / (PER_BLOCK * 20) * 1e6)
                forget()
        edge.handlers[route] = hot.verdict
        await async_cache.aclose()
        return out

    with override_settings(CURFEW_TOKEN_RATE="100000000/minute"):  # noqa: S106
        cost = asyncio.run(run())

    load = os.getloadavg()
    print(
        f"bench.twins: old = {args.old}, new = this tree; PostgreSQL + Redis "
        f"({args.database.rsplit('/', 1)[0]}/…, {args.redis}); {args.rounds} rounds, old and "
        f"new in alternating blocks in one process; load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}; µs a call, median of the rounds (best round)"
    )
    new = statistics.median(cost["verdict, this tree (originals)"])
    new_cpu = statistics.median(cost["verdict, this tree (originals) CPU"])
    for label, rounds in cost.items():
        mid, best = statistics.median(rounds), min(rounds)
        extra = ""
        if label.startswith("verdict") and not label.endswith("CPU"):
            extra = f"  {mid / new:.3f}x this tree's verdict, {new / mid - 1:+.1%} rate"
        if label.startswith("verdict") and label.endswith("CPU"):
            extra = f"  {mid / new_cpu:.3f}x this tree's CPU"
        print(f"  {label:<40} {mid:>8.2f} ({best:>7.2f}){extra}")
    pairs = [
        ("record: record_verdict (twin)", "record: record(verdict_entry(...))"),
        ("Batch.add: add_fields (twin)", "Batch.add: _count (one rule)"),
        ("clock: hot._now (twin)", "clock: timezone.now"),
        ("answer: verdict_json (twin)", "answer: the model's bytes"),
        ("state: _state_json (twin)", "state: the model's bytes"),
        ("max_age: quick form (twin)", "max_age: max_age_of"),
    ]
    print(
        "each twin's saving a warm verdict, against this tree's in-process verdict "
        "(wall time a call with 32 in flight; its CPU time):"
    )
    for twin, original in pairs:
        gained = statistics.median(cost[original]) - statistics.median(cost[twin])
        print(
            f"  {twin.split(':')[0]:<10} {gained:+.2f} µs = {gained / new:+.1%} of a verdict, "
            f"{gained / new_cpu:+.1%} of its CPU"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
