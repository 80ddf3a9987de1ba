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
    band_cells,
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


def _team_of(count: int) -> tuple[list[User], Team]:
    boss = User.objects.create_user("boss")
    team = team_create(name="acme", admin=boss)
    people = [boss]
    for n in range(count - 1):
        person = User.objects.create_user(f"member{n}")
        member_add(team=team, user=person)
        people.append(person)
    return people, team


async def test_a_team_change_reads_its_members_states_together(set_clock, monkeypatch) -> None:
    """One read for the whole team (their rows, tokens and flags together), not
    one per member; a member's own change is still read for them alone."""
    from curfew_core.realtime import states
    from curfew_core.schedules.override_commands import OverrideCommand
    from curfew_core.services.overrides import override_apply

    set_clock(local("2026-09-29 20:00"))
    people, team = await db(_team_of)(6)
    sockets = []
    for user in people:
        comm = socket(token=await db(embed_token)(user))
        assert (await open_live(comm))["state"] == "on-duty"
        sockets.append(comm)
    reads: list[list[int]] = []
    real = states.read_states

    def recording(asks: list[states.Ask], **kwargs: object) -> object:
        reads.append(sorted(ask.user_id for ask in asks))
        return real(asks, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(states, "read_states", recording)
    await db(team_schedule_update)(team=team, changes=NIGHT)
    for comm in sockets:
        assert (await next_state(comm))["state"] == "lights-out"
    assert reads == [sorted(user.pk for user in people)]

    reads.clear()  # the control: one member's own change
    await db(override_apply)(
        user=people[2], command=OverrideCommand("off", None), now=local("2026-09-29 20:00")
    )
    assert (await next_state(sockets[2]))["state"] == "lights-out"
    assert reads == [[people[2].pk]]
    for comm in sockets:
        await comm.disconnect()


async def test_a_member_whose_state_fails_is_closed_and_the_rest_still_hear(
    set_clock, monkeypatch
) -> None:
    from curfew_core.realtime import states
    from curfew_core.realtime.codes import CLOSE_UNAVAILABLE
    from curfew_core.services.schedules import schedule_update
    from tests.realtime.conftest import closed

    set_clock(local("2026-09-29 20:00"))
    people, team = await db(_team_of)(4)
    broken = people[1].pk
    # Settings of their own: members with the same rows share one payload.
    await db(schedule_update)(user=people[1], changes={"timezone": "Asia/Manila"}, source="t")
    sockets = []
    for user in people:
        comm = socket(token=await db(embed_token)(user))
        await open_live(comm)
        sockets.append(comm)
    real = states.bundle_capsule_payload

    def failing(bundle: object, **kwargs: object) -> object:
        if getattr(bundle, "user_id", None) == broken:
            raise RuntimeError("this member's rows cannot be read")
        return real(bundle, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(states, "bundle_capsule_payload", failing)
    await db(team_schedule_update)(team=team, changes=NIGHT)
    for user, comm in zip(people, sockets, strict=True):
        if user.pk == broken:
            code, reason = await closed(comm)
            assert (code, "retry" in reason) == (CLOSE_UNAVAILABLE, True)
        else:
            assert (await next_state(comm))["state"] == "lights-out"
    for comm in sockets:
        await comm.disconnect()


async def test_a_members_band_draws_the_teams_night_too(set_clock) -> None:
    """A capsule showing the 24-hour band tells a member what their verdicts
    will be: the team's earlier night in it (harsher wins); the outsider's
    band keeps their own evening (the control)."""
    set_clock(local("2026-09-29 10:00"))  # a Tuesday
    members, outsider, team = await db(_team_of_two)()
    await db(team_schedule_update)(team=team, changes=NIGHT)
    at_2000 = 20 * 4  # the band's quarter-hour cell at 20:00
    for user, state in ((members[1], "lights-out"), (outsider, "on-duty")):
        comm = socket(token=await db(embed_token)(user), query="band=24h")
        band = (await open_live(comm))["band"]
        await comm.disconnect()
        assert band_cells(band)[at_2000] == state, user.username
