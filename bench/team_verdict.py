"""A warm team-key verdict against a personal one (issue 26), in one run.

    python -m bench.team_verdict [--members 5000] [--rounds 5] [--requests 5000]

One process, the site's ASGI app driven in-process (no server, no socket: the
edge, the cache read, the engine and the answer's bytes, which is all a warm
verdict is), SQLite in a temporary file and the process-local cache. A team
of ``--members`` members (one of them also holds a personal token) and one
team key. Rows, interleaved in every round so a busy machine slows all alike:

- a personal token of someone in no team (the verdict as it was);
- a member's own personal token (the combined verdict, team and own);
- the team key, naming one member (``"user"``), always the same;
- the team key cycling through every member, so each request names another
  of the 5,000 (each warm after the first round).

Printed: the median µs per verdict over the rounds, and each row against the
member's own token (issue 26's target: the team key no slower than a personal
token). The ledger records every verdict, as it does when served.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _setup(members: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="curfew-team-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings_test")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    # Warm means warm (see below): rows are trusted for an hour in this run.
    os.environ["CURFEW_CACHE_FRESH_SECONDS"] = "3600"
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command

    # One token stands in for a whole gateway: its own rate would cap the run.
    settings.CURFEW_TOKEN_RATE = ""
    # Warm means warm: a round through 5,000 members takes longer than the
    # process-local cache keeps an entry (5 s; a shared cache keeps them an
    # hour) and than rows are trusted (the freshness bound, set above), so without this
    # the rotating row would measure the cold path, for the team key and a
    # personal token alike.
    # And Django's process-local cache holds 300 entries: 5,000 members' rows
    # would be culled as they go round (Redis, in production, holds them all).
    from curfew_core.store import cache_policy

    cache_policy.LOCAL_CACHE_SECONDS = 3600
    if "locmem" in settings.CACHES["default"]["BACKEND"]:
        settings.CACHES["default"].setdefault("OPTIONS", {})["MAX_ENTRIES"] = 1_000_000
    call_command("migrate", "--no-input", verbosity=0)
    from curfew_core.models import ApiToken, TeamMembership
    from curfew_core.selectors.tokens import digest
    from curfew_core.services.teams import team_create, team_token_create
    from curfew_core.services.tokens import token_create

    loner = User.objects.create_user("loner")
    admin = User.objects.create_user("member-00000")
    team = team_create(name="bench", admin=admin)
    names = [f"member-{n:05d}" for n in range(1, members)]
    User.objects.bulk_create([User(username=name) for name in names], batch_size=1000)
    users = dict(User.objects.filter(username__in=names).values_list("username", "id"))
    TeamMembership.objects.bulk_create(
        [TeamMembership(team=team, user_id=users[name]) for name in names], batch_size=1000
    )
    _, team_key = team_token_create(team=team)
    # Every member's own token too, made in bulk (as ``token_create`` makes one).
    raws = {name: f"cfw_bench{n:06d}" for n, name in enumerate(names)}
    ApiToken.objects.bulk_create(
        [
            ApiToken(user_id=users[name], name="bench", prefix=raw[:12], digest=digest(raw))
            for name, raw in raws.items()
        ],
        batch_size=1000,
    )
    return {
        "loner": token_create(user=loner)[1],
        "member": token_create(user=admin)[1],
        "team": team_key,
        "names": ["member-00000", *names],
        "tokens": list(raws.values()),
    }


def _scope(token: str) -> dict[str, Any]:
    from curfew_testkit.asgi_scope import http_scope

    return http_scope(
        "POST",
        "/api/v1/verdict",
        [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
        ],
    )


async def _call(app: Any, scope: dict[str, Any], body: bytes) -> int:
    sent = False
    status = 0
    answer = b""

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, answer
        if message["type"] == "http.response.start":
            status = message["status"]
        elif status != 200:
            answer += message.get("body", b"")

    await app(scope, receive, send)
    if status != 200:
        raise SystemExit(f"verdict answered {status}: {answer[:300]!r}")
    return status


async def _row(app: Any, calls: list[tuple[dict[str, Any], bytes]], count: int) -> float:
    """µs per verdict for ``count`` requests, the (scope, body) pairs taken in turn."""
    started = time.perf_counter()
    for n in range(count):
        scope, body = calls[n % len(calls)]
        await _call(app, scope, body)
    return (time.perf_counter() - started) / count * 1e6


async def _run(args: argparse.Namespace, made: dict[str, Any]) -> None:
    from curfew_site.asgi import application

    names = made["names"]
    plain = b'{"max_tokens": 4096}'
    team = _scope(made["team"])
    rows = [
        ("personal token, no team", [(_scope(made["loner"]), plain)]),
        ("personal token of a member", [(_scope(made["member"]), plain)]),
        (
            "team key, one member",
            [(team, json.dumps({"max_tokens": 4096, "user": names[0]}).encode())],
        ),
        (
            f"members' own tokens, {len(made['tokens'])} in turn",
            [(_scope(token), plain) for token in made["tokens"]],
        ),
        (
            f"team key, {len(names)} members in turn",
            [(team, json.dumps({"max_tokens": 4096, "user": name}).encode()) for name in names],
        ),
    ]
    # Warm every row (each member named once) before measuring.
    for _label, calls in rows:
        await _row(application, calls, len(calls))
    times: dict[str, list[float]] = {label: [] for label, *_ in rows}
    for _ in range(args.rounds):
        for label, calls in rows:
            times[label].append(await _row(application, calls, args.requests))
    reference = statistics.median(times["personal token of a member"])
    print(
        f"warm POST /api/v1/verdict in-process, {len(names)} members, {args.rounds} rounds of "
        f"{args.requests} requests a row; medians (µs per verdict), x = against a member's "
        "own token:"
    )
    print(f"  {'row':<36} {'µs':>8} {'x':>6}   rounds")
    for label, *_ in rows:
        mine = times[label]
        median = statistics.median(mine)
        shown = " ".join(f"{value:.0f}" for value in mine)
        print(f"  {label:<36} {median:>8.1f} {median / reference:>6.2f}   {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=5000)
    args, _ = parser.parse_known_args()
    made = _setup(args.members)
    asyncio.run(_run(args, made))


if __name__ == "__main__":
    main()
