"""A team schedule change reaches every member's open capsule (issue 26): one
message to the team's group, which each member's capsule joins; a capsule of
someone outside the team hears nothing (the control)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.models import Team
from curfew_core.services.teams import member_add, team_create, team_schedule_update
from tests.realtime.conftest import (
    _fresh_channel_layer,
    embed_token,
    local,
    next_state,
    open_live,
    socket,
)
from tests.realtime.conftest import set_clock as set_clock

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["_fresh_channel_layer", "set_clock"]
db = sync_to_async

#: 20:00 on a Tuesday: the team's night below has begun (lights-out), its members' own have not.
NIGHT = {
    "curfew_start": "19:00",
    "lights_out": "19:30",
    "wake_up": "07:00",
    "anchors": [["19:00", 1024], ["19:30", 64]],
}


def _team_of_two() -> tuple[list[User], User, Team]:
    boss, alice, bob = (User.objects.create_user(name) for name in ("boss", "alice", "bob"))
    team = team_create(name="acme", admin=boss)
    member_add(team=team, user=alice)
    return [boss, alice], bob, team


async def test_a_team_schedule_change_reaches_every_members_capsule(set_clock) -> None:
    set_clock(local("2026-09-29 20:00"))
    members, outsider, team = await db(_team_of_two)()
    sockets = []
    for user in members:
        comm = socket(token=await db(embed_token)(user))
        assert (await open_live(comm))["state"] == "on-duty"
        sockets.append(comm)
    control = socket(token=await db(embed_token)(outsider))
    assert (await open_live(control))["state"] == "on-duty"

    await db(team_schedule_update)(team=team, changes=NIGHT)

    for comm in sockets:
        pushed = await next_state(comm)
        assert pushed["state"] == "lights-out"
    assert await control.receive_nothing(timeout=0.3)
    for comm in (*sockets, control):
        await comm.disconnect()
