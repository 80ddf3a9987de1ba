"""The team services (issue 26): invites, release night, a member's overtime
against the team's night, and bad input that changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from curfew_core.models import AuditEntry, Team, TeamMembership
from curfew_core.schedules import override_commands
from curfew_core.schedules.config import ConfigError
from curfew_core.selectors.verdicts import verdict_for
from curfew_core.services.overrides import override_apply
from curfew_core.services.teams import (
    NotTeamAdmin,
    TeamError,
    invite_accept,
    invite_create,
    member_add,
    team_create,
    team_overtime_set,
    team_schedule_update,
)
from tests.api.conftest import FrozenClock

pytestmark = pytest.mark.django_db(transaction=True)

#: The frozen clock reads 20:00: the team's night (lights-out from 19:30) has begun.
NIGHT = {
    "curfew_start": "19:00",
    "lights_out": "19:30",
    "wake_up": "07:00",
    "anchors": [["19:00", 1024], ["19:30", 64]],
}


@pytest.fixture
def acme(transactional_db: None, clock: FrozenClock) -> Team:
    boss = User.objects.create_user("boss")
    alice = User.objects.create_user("alice")
    team = team_create(name="acme", admin=boss)
    member_add(team=team, user=alice)
    return team_schedule_update(team=team, changes=NIGHT)


def _state(name: str, clock: FrozenClock) -> str:
    user = User.objects.get(username=name)
    return verdict_for(user_id=user.pk, now=clock.now)[0].state.value


def _overtime(name: str, clock: FrozenClock) -> None:
    user = User.objects.get(username=name)
    command = override_commands.from_json({"overtime": "2h"})
    override_apply(user=user, command=command, now=clock.now)


def test_a_members_overtime_lifts_the_team_only_as_the_team_allows(
    acme: Team, clock: FrozenClock
) -> None:
    assert _state("alice", clock) == "lights-out"
    _overtime("alice", clock)
    # Her own night has not begun: her overtime lifts nothing of the team's.
    assert _state("alice", clock) == "lights-out"
    team_schedule_update(team=acme, changes={"member_overtime_minutes": 30})
    assert _state("alice", clock) == "on-duty"
    clock.advance(timedelta(minutes=31))
    assert _state("alice", clock) == "lights-out"


def test_release_night_lifts_the_team_for_everyone_and_is_audited(
    acme: Team, clock: FrozenClock
) -> None:
    assert _state("boss", clock) == _state("alice", clock) == "lights-out"
    boss = User.objects.get(username="boss")
    team_overtime_set(team=acme, now=clock.now, duration=timedelta(hours=2), actor=boss)
    assert _state("boss", clock) == _state("alice", clock) == "on-duty"
    assert AuditEntry.objects.filter(team=acme, action="overtime", actor=boss).exists()
    team_overtime_set(team=acme, now=clock.now, duration=None, actor=boss)
    assert _state("alice", clock) == "lights-out"
    alice = User.objects.get(username="alice")
    with pytest.raises(NotTeamAdmin):
        team_overtime_set(team=acme, now=clock.now, duration=timedelta(hours=1), actor=alice)
    assert Team.objects.get(pk=acme.pk).overtime_until is None


def test_an_invite_link_works_once(acme: Team, clock: FrozenClock) -> None:
    invite, raw = invite_create(team=acme, now=clock.now)
    assert raw.startswith("cfi_")
    assert invite.digest != raw
    carol = User.objects.create_user("carol")
    invite_accept(raw=raw, user=carol, now=clock.now)
    assert TeamMembership.objects.get(user=carol).team == acme
    dave = User.objects.create_user("dave")
    with pytest.raises(TeamError, match="not valid"):
        invite_accept(raw=raw, user=dave, now=clock.now)
    _, expired = invite_create(team=acme, now=clock.now - timedelta(days=8))
    with pytest.raises(TeamError, match="not valid"):
        invite_accept(raw=expired, user=dave, now=clock.now)
    assert not TeamMembership.objects.filter(user=dave).exists()


def test_bad_input_changes_nothing(acme: Team) -> None:
    before = Team.objects.get(pk=acme.pk)
    with pytest.raises(ConfigError):
        team_schedule_update(team=acme, changes={"lights_out": "25:00"})
    with pytest.raises(TeamError, match="member_overtime_minutes"):
        team_schedule_update(team=acme, changes={"member_overtime_minutes": 5000})
    with pytest.raises(TeamError, match="members_may_exempt"):
        team_schedule_update(team=acme, changes={"members_may_exempt": "yes"})
    with pytest.raises(TeamError, match="role"):
        member_add(team=acme, user=User.objects.create_user("erin"), role="owner")
    after = Team.objects.get(pk=acme.pk)
    assert (after.config, after.version, after.member_overtime_minutes) == (
        before.config,
        before.version,
        before.member_overtime_minutes,
    )
    assert not TeamMembership.objects.filter(user__username="erin").exists()
