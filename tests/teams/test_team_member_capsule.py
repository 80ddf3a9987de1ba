"""A team member's capsule tells what the engine does (issue 39): its state is
``decide_member``'s, every cell of its band is the effective plan's, its
heads-up is the engine's next change (ten minutes ahead), and its timer wakes
no later than that change. A property test draws team and member schedules
(per-day nights, peak hours, zones), the member's overrides and instants; a
socket test shows a member's capsule pushed at the team's boundary, and an
outsider on the same own schedule not (the control)."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curfew_core.engine import Overrides, State
from curfew_core.engine.clock import to_wall, wall_midnight
from curfew_core.engine.effective import PLAIN_CALL, next_change
from curfew_core.engine.team import TeamSide, decide_member
from curfew_core.models import Team
from curfew_core.realtime import states, timers
from curfew_core.schedules.override_commands import OverrideCommand
from curfew_core.selectors import bundles
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.heads_up import LEAD
from curfew_core.services import teams as team_services
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from tests.realtime.conftest import band_cells, embed_token, local, next_state, open_live, socket
from tests.realtime.conftest import set_clock as set_clock
from tests.teams.test_team_policy_card import _committed, _night, _save, configs

__all__ = ["set_clock"]

INSTANTS = st.datetimes(
    min_value=dt.datetime(2026, 1, 1),  # noqa: DTZ001 - bounds of an aware strategy
    max_value=dt.datetime(2027, 12, 31),  # noqa: DTZ001
    timezones=st.just(dt.UTC),
)
#: The member's override, taken this long before the instant (or none).
OVERRIDES = st.one_of(
    st.none(),
    st.tuples(st.just(OverrideCommand("off")), st.integers(0, 600)),
    st.tuples(
        st.builds(
            OverrideCommand,
            st.just("overtime"),
            st.integers(1, 240).map(lambda m: dt.timedelta(minutes=m)),
        ),
        st.integers(0, 300),
    ),
)


def _pair() -> tuple[Team, User]:
    bundles._teams_built.clear()  # ids come again after a rollback: no team of before
    boss = User.objects.create_user("boss")
    team: Team = team_services.team_create(name="owls", admin=boss)
    bob = User.objects.create_user("bob")
    team_services.member_add(team=team, user=bob)
    return team, bob


@pytest.fixture
def pair(db: None) -> tuple[Team, User]:
    return _pair()


def _capsule(user: User, now: dt.datetime) -> dict[str, Any]:
    """What a capsule showing the band is sent at ``now`` (``realtime.states``)."""
    [read] = states.read_states([states.Ask(user.pk, band=True)], now=now)
    assert not isinstance(read, Exception)
    payload: dict[str, Any] = json.loads(read.text_for(band=True))
    return payload


def _wall_cells(day: dt.date, zone: zoneinfo.ZoneInfo) -> list[dt.datetime | None]:
    """Each quarter-hour cell's midpoint on ``day``'s clock, as the band places
    it (``None`` where the clock skips it: a DST gap)."""
    out: list[dt.datetime | None] = []
    for index in range(96):
        wall = wall_midnight(day) + dt.timedelta(minutes=index * 15 + 7.5)
        instant = wall.replace(tzinfo=zone)
        out.append(instant if to_wall(instant, zone) == wall else None)
    return out


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), instant=INSTANTS)
def test_a_members_capsule_is_the_engines(
    pair: tuple[Team, User], data: st.DataObject, instant: dt.datetime
) -> None:
    team, bob = pair
    theirs = {
        **data.draw(configs()),
        "member_overtime_minutes": data.draw(st.sampled_from([0, 30])),
    }
    _save(team, bob, theirs, data.draw(configs()))
    with _committed():
        override_apply(user=bob, command=OverrideCommand("auto"), now=instant)
        taken = data.draw(OVERRIDES)
        if taken is not None:
            command, ago = taken
            override_apply(user=bob, command=command, now=instant - dt.timedelta(minutes=ago))
    bundle = bundle_for(bob.pk)
    assert bundle.team is not None
    inputs: dict[str, Any] = {"member_overtime_from": bundle.overtime_from}

    payload = _capsule(bob, instant)

    # The state: decide_member's, with every override and the team.
    verdict = decide_member(
        instant, bundle.schedule, PLAIN_CALL, bundle.overrides, bundle.team, **inputs
    )
    assert payload["state"] == verdict.state.value

    # The band: the plan of the standing schedules (no override), cell by cell.
    zone = bundle.schedule.timezone
    assert isinstance(zone, zoneinfo.ZoneInfo)
    standing = TeamSide(bundle.team.schedule, bundle.team.policy)
    day = dt.date.fromisoformat(payload["band"]["date"])
    assert day == to_wall(verdict.at, zone).date()
    cells = band_cells(payload["band"])
    for index, middle in enumerate(_wall_cells(day, zone)):
        if middle is None:
            continue
        expected = decide_member(middle, bundle.schedule, PLAIN_CALL, Overrides(), standing)
        assert cells[index] == expected.state.value, (index, middle)

    # The heads-up: the engine's next change, ten minutes ahead.
    change = next_change(instant, bundle.schedule, bundle.overrides, bundle.team, **inputs)
    if change is None or verdict.dry_run:
        assert payload["next"] is None
    else:
        assert payload["next"] is not None, change
        at = dt.datetime.fromisoformat(payload["next"]["at"])
        assert (at, payload["next"]["state"]) == (change.at, change.state.value)
        assert dt.datetime.fromisoformat(payload["next"]["heads_up_at"]) == change.at - LEAD

    # The timer: the socket looks again no later than the change.
    wake = timers.next_wake(payload, instant)
    assert wake > instant
    if change is not None:
        assert wake <= change.at, (wake, change)


# -- through a socket ----------------------------------------------------------------------

db = sync_to_async

WORKDAY_MORNINGS = {day: {"wake_up": "08:00"} for day in ("sun", "mon", "tue", "wed", "thu")}


def _issue_team() -> tuple[User, User]:
    """The issue's team (sleepy 21:00, asleep 22:00, awake 09:00) with bob in
    it (23:00, 03:00, awake 08:00 after weekday evenings), and eve, outside
    it, on bob's own schedule."""
    team, bob = _pair()
    _save(team, bob, _night("21:00", "22:00", "09:00"), {"weekdays": WORKDAY_MORNINGS})
    eve = User.objects.create_user("eve")
    with _committed():
        schedule_update(user=eve, changes={"weekdays": WORKDAY_MORNINGS}, source="test")
    return bob, eve


@pytest.mark.django_db(transaction=True)
async def test_a_members_capsule_wakes_at_the_teams_boundary(set_clock) -> None:
    """At 21:59:59 on a Wednesday bob is sleepy by the team's rule; his
    capsule says he falls asleep at 22:00 (the team's lights-out, not his own
    03:00) and is pushed then. Eve's own evening has no edge at 22:00: her
    capsule hears nothing (the control).

    The clock stands at 21:59:59 until both capsules have told their first
    state, then a millisecond before 22:00 for longer than bob's timer (a
    second of real time) takes to come due: a timer set for an earlier instant
    would push "winding" then. Then it stands at 22:00: the sockets' timers
    wake to the boundary whatever the setup cost. A clock running from
    21:59:59 before the setup made the first state "lights-out" whenever the
    setup and the two connects took more than that second (under ``-n 2``)."""
    boundary = local("2026-12-02 22:00")
    set_clock(boundary - dt.timedelta(seconds=1))
    bob, eve = await db(_issue_team)()
    member = socket(token=await db(embed_token)(bob), query="band=24h")
    outsider = socket(token=await db(embed_token)(eve))
    first = await open_live(member)
    assert first["state"] == "winding"
    assert (first["next"]["state"], first["next"]["at"]) == (
        "lights-out",
        boundary.astimezone(dt.UTC).isoformat(),
    )
    assert first["next"]["side"] == "team"
    assert first["valid_until"] == boundary.isoformat()
    assert (await open_live(outsider))["state"] == "on-duty"
    set_clock(boundary - dt.timedelta(milliseconds=1))
    assert await member.receive_nothing(timeout=1.5)
    set_clock(boundary)
    pushed = await next_state(member, timeout=5)
    assert pushed["state"] == "lights-out"
    # Next: the team's wake-up at 09:00 (into Thursday's peak hours), not bob's 08:00.
    assert (pushed["next"]["state"], pushed["next"]["local"]) == (State.OFF_DUTY.value, "09:00")
    assert await outsider.receive_nothing(timeout=0.3)
    for comm in (member, outsider):
        await comm.disconnect()


def test_the_issues_pretend_capsule_agrees_with_the_state_api(pair: tuple[Team, User]) -> None:
    """The issue's case, pretending 22:30 on a Wednesday: the capsule says
    asleep, its band is the state API's day cell for cell (24 cells used to
    differ), and its heads-up is the engine's next change from the pretended
    moment (the team's 09:00 wake-up into peak hours), never bob's own 23:00."""
    from curfew_core.selectors.verdicts import state_payload

    team, bob = pair
    _save(team, bob, _night("21:00", "22:00", "09:00"), {"weekdays": WORKDAY_MORNINGS})
    now = local("2026-12-02 15:00")
    pretend = local("2026-12-02 22:30")
    with _committed():
        override_apply(
            user=bob,
            command=OverrideCommand("debug", dt.timedelta(hours=1), "2026-12-02 22:30"),
            now=now,
        )
    payload = _capsule(bob, now)
    assert payload["state"] == "lights-out"
    api_day = state_payload(user_id=bob.pk, now=now)["day"]
    minutes = [
        next(seg["state"] for seg in api_day if _minute(seg["start"]) <= m < _minute(seg["end"]))
        for m in (index * 15 + 7.5 for index in range(96))
    ]
    assert band_cells(payload["band"]) == minutes
    bundle = bundle_for(bob.pk)
    change = next_change(
        pretend,
        bundle.schedule,
        Overrides(bundle.overrides.overtime_until, bundle.overrides.forced_off_until),
        bundle.team,
    )
    assert change is not None
    assert (payload["next"]["state"], payload["next"]["local"]) == (change.state.value, "09:00")
    assert payload["next"]["at"] == change.at.astimezone(dt.UTC).isoformat()


def _minute(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def test_the_admins_members_card_says_the_engines_next_change(
    pair: tuple[Team, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 21:30 bob is sleepy by the team's rule: his row says he falls asleep
    at 22:00 (the engine's next change). It used to say when his verdict
    might next change ("Shorter answers from" the curve's next step)."""
    from django.utils import timezone

    from tests.web.conftest import PageClient

    team, bob = pair
    _save(team, bob, _night("21:00", "22:00", "09:00"), {"weekdays": WORKDAY_MORNINGS})
    monkeypatch.setattr(timezone, "now", lambda: local("2026-12-02 21:30"))
    boss = User.objects.get(username="boss")
    html = PageClient(boss).get("/team/").content.decode()
    row = html.split('data-member="bob"')[1].split("</tr>")[0]
    assert 'data-state="winding"' in row
    nxt = row.split('class="team-next">')[1].split("</td>")[0]
    assert nxt.startswith("Asleep at "), nxt
    assert nxt.endswith("22:00"), nxt
