"""A team schedule change reaching every member's open capsule (issue 26), in one run.

    python -m bench.team_fanout [--members 5000]

One process: the site's ASGI app as ``bin/serve`` starts it (``curfew_site.serve``, with its
garbage-collector settings), driven in-process through Channels'
``WebsocketCommunicator`` (no server, no socket), SQLite in a temporary file,
the in-memory channel layer. A team of ``--members`` members, each with an
embed token and one open capsule. Two changes, timed from the moment the
change is made until each capsule has read its new state:

- the baseline: one member's own override (``overrides.override_set``), which
  only that member's capsule hears, among all the others open;
- the team: an admin's change of the team's schedule
  (``teams.team_schedule_update``), one message to the team's group, which
  every member's capsule hears and answers with that member's new state.

Printed: p50, p99 and the last arrival (ms). Issue 26's target: the team's
change reaches every member's open capsules within a second. The in-process
driver shares the loop with the app, so what is timed includes the reading.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

HOST = "127.0.0.1:8000"
NIGHT = {
    "curfew_start": "19:00",
    "lights_out": "19:30",
    "wake_up": "07:00",
    "anchors": [["19:00", 1024], ["19:30", 64]],
}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _state(comm: Any, timeout: float = 120) -> dict[str, Any]:
    # The message as the app sent it, from the communicator's queue: its
    # ``receive_output`` patches ``close_old_connections`` on every call, which
    # at thousands of sockets was most of the driver's time, not the app's.
    async with asyncio.timeout(timeout):
        message = await comm.output_queue.get()
    assert message["type"] == "websocket.send", message
    payload: dict[str, Any] = json.loads(message["text"])
    return payload


async def _run(members: int) -> None:
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.utils import timezone

    from curfew_core.models import ApiToken, TeamMembership
    from curfew_core.schedules.override_commands import OverrideCommand
    from curfew_core.services.overrides import override_apply
    from curfew_core.services.teams import team_create, team_schedule_update
    from curfew_core.services.tokens import token_create
    from curfew_site.serve import application as serving

    def make() -> tuple[Any, Any, list[str]]:
        with transaction.atomic():
            admin = User.objects.create_user("bench-admin")
            team = team_create(name="bench", admin=admin)
            people = User.objects.bulk_create(
                [User(username=f"m{n:05d}", password="!") for n in range(members - 1)]  # noqa: S106
            )
            TeamMembership.objects.bulk_create(
                [TeamMembership(team=team, user=person, role="member") for person in people]
            )
            tokens = [
                token_create(user=person, name="capsule", kind=ApiToken.Kind.EMBED)[1]
                for person in [admin, *people]
            ]
        return admin, team, tokens

    # The app as ``bin/serve`` starts it (the garbage collector's settings too).
    application = serving()
    started = time.perf_counter()
    admin, team, tokens = await sync_to_async(make)()
    print(
        f"{members:,} members and their embed tokens made in {time.perf_counter() - started:.1f} s"
    )
    headers = [(b"host", HOST.encode()), (b"origin", f"http://{HOST}".encode())]
    sockets = [
        WebsocketCommunicator(application, f"/ws/capsule/?token={token}", headers=headers)
        for token in tokens
    ]
    started = time.perf_counter()
    for batch in range(0, len(sockets), 250):
        group = sockets[batch : batch + 250]
        opened = await asyncio.gather(*(comm.connect(timeout=30) for comm in group))
        assert all(ok for ok, _ in opened)
        await asyncio.gather(*(_state(comm) for comm in group))
    print(f"{len(sockets):,} capsules open in {time.perf_counter() - started:.1f} s")

    async def timed(comms: list[Any], change: Any, shows: Any) -> list[float]:
        """Milliseconds from ``change`` to each capsule's next state, each checked
        with ``shows`` (a push that said the old thing would time nothing)."""
        began = time.perf_counter()

        async def arrival(comm: Any) -> tuple[float, dict[str, Any]]:
            payload = await _state(comm)
            return (time.perf_counter() - began) * 1000, payload

        waiting = [asyncio.ensure_future(arrival(comm)) for comm in comms]
        await sync_to_async(change)()
        arrived = await asyncio.gather(*waiting)
        wrong = sum(1 for _, payload in arrived if not shows(payload))
        assert not wrong, f"{wrong} capsules were sent a state without the change"
        return [ms for ms, _ in arrived]

    rows = []
    own = await timed(
        [sockets[0]],
        lambda: override_apply(
            user=admin,
            command=OverrideCommand("overtime", timedelta(minutes=30)),
            now=timezone.now(),
        ),
        lambda payload: payload["override"] == "overtime",
    )
    rows.append(("one member's own override (1 capsule hears)", own))
    team_push = await timed(
        sockets,
        lambda: team_schedule_update(team=team, changes=NIGHT),
        # The day each capsule draws now has the team's night in it.
        lambda payload: (
            {"start": "19:00", "end": "19:30"}.items()
            <= next((seg for seg in payload["day"] if seg["state"] == "winding"), {}).items()
        ),
    )
    rows.append((f"team schedule change ({len(sockets):,} capsules hear)", team_push))
    print("  change                                              p50 ms    p99 ms   last ms")
    for label, arrivals in rows:
        print(
            f"  {label:<48} {_quantile(arrivals, 0.5):9.1f} {_quantile(arrivals, 0.99):9.1f}"
            f" {max(arrivals):9.1f}"
        )
    last = max(team_push)
    verdict = "met" if last <= 1000 else "not met"
    print(
        f"  every member's capsule had the team's change within {last:.0f} ms "
        f"(issue 26's target: 1 s: {verdict})"
    )
    await asyncio.gather(*(comm.disconnect() for comm in sockets))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--members", type=int, default=5000)
    args, _ = parser.parse_known_args()
    workdir = Path(tempfile.mkdtemp(prefix="curfew-team-fanout-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)
    asyncio.run(_run(args.members))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
