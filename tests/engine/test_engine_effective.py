"""The effective plan (issue 39): every instant of every stretch is in the
state ``decide_member`` gives it, for one person and for a team member, with
overrides, the time machine and the team's own overtime; the next change is
the first instant the verdict's state differs."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from engine_support import PROPERTY
from hypothesis import given
from hypothesis import strategies as st
from test_engine_properties import INSTANTS, overrides_for, schedules
from test_engine_team import POLICIES

from curfew_core.engine import NightTimes, Overrides, Schedule, State
from curfew_core.engine.effective import PLAIN_CALL, effective_plan, next_change
from curfew_core.engine.team import TeamPolicy, TeamSide, decide_member

SHANGHAI = Schedule().timezone

#: A user's verdict inputs: own schedule, overrides, team side, overtime taken.
Member = tuple[Schedule, Overrides, TeamSide | None, datetime | None]


@st.composite
def members(
    draw: st.DrawFn, now: datetime
) -> tuple[Schedule, Overrides, TeamSide | None, datetime | None]:
    schedule = draw(schedules())
    overrides = draw(overrides_for(now))
    if overrides.debug_at is not None:
        ends = st.timedeltas(min_value=timedelta(minutes=1), max_value=timedelta(hours=20))
        overrides = Overrides(
            overrides.overtime_until,
            overrides.forced_off_until,
            overrides.debug_at,
            draw(st.one_of(st.none(), ends.map(lambda d: now + d))),
        )
    if not draw(st.booleans()):
        return schedule, overrides, None, None
    offset = st.timedeltas(min_value=timedelta(hours=-3), max_value=timedelta(hours=20))
    team = TeamSide(
        schedule=draw(schedules()),
        policy=draw(POLICIES),
        overtime_until=draw(st.one_of(st.none(), offset.map(lambda d: now + d))),
    )
    taken = draw(st.one_of(st.none(), offset.map(lambda d: now - abs(d))))
    return schedule, overrides, team, taken


@PROPERTY
@given(data=st.data(), now=INSTANTS)
def test_every_instant_of_a_stretch_is_in_the_verdicts_state(
    data: st.DataObject, now: datetime
) -> None:
    schedule, overrides, team, taken = data.draw(members(now))
    end = now + timedelta(hours=30)
    plan = effective_plan(now, end, schedule, overrides, team, member_overtime_from=taken)
    assert plan[0].start == now
    assert plan[-1].end == end
    for before, after in itertools.pairwise(plan):
        assert before.end == after.start
    for stretch in plan:
        probes = {stretch.start, stretch.end - timedelta(microseconds=1)}
        probes.add(stretch.start + (stretch.end - stretch.start) / 2)
        probes.add(
            data.draw(
                st.datetimes(
                    min_value=stretch.start.replace(tzinfo=None),
                    max_value=(stretch.end - timedelta(microseconds=1)).replace(tzinfo=None),
                    timezones=st.just(UTC),
                )
            )
        )
        for instant in probes:
            verdict = decide_member(
                instant, schedule, PLAIN_CALL, overrides, team, member_overtime_from=taken
            )
            assert verdict.state is stretch.state, (instant, stretch)
            assert verdict.peak == stretch.peak, (instant, stretch)


@PROPERTY
@given(data=st.data(), now=INSTANTS)
def test_the_next_change_is_the_first_instant_the_state_differs(
    data: st.DataObject, now: datetime
) -> None:
    schedule, overrides, team, taken = data.draw(members(now))
    change = next_change(now, schedule, overrides, team, member_overtime_from=taken)
    state_now = decide_member(
        now, schedule, PLAIN_CALL, overrides, team, member_overtime_from=taken
    )
    if change is None:
        return
    at_change = decide_member(
        change.at, schedule, PLAIN_CALL, overrides, team, member_overtime_from=taken
    )
    assert at_change.state is change.state is not state_now.state
    just_before = change.at - timedelta(microseconds=1)
    assert (
        decide_member(
            just_before, schedule, PLAIN_CALL, overrides, team, member_overtime_from=taken
        )
    ).state is state_now.state


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)


def test_a_members_night_is_the_teams_when_the_team_sleeps_first() -> None:
    """The issue's case: the team sleepy at 21:00, asleep at 22:00; the member
    23:00 and 03:00. At 22:30 the member is asleep by the team's rule, and
    what comes next is the team's wake-up, not the member's sleepy hour."""
    own = Schedule(peak_shift=False)
    team = TeamSide(
        Schedule(peak_shift=False, night=NightTimes(21 * 60, 22 * 60, 9 * 60)), TeamPolicy()
    )
    now = _at("2026-12-02T22:30")
    plan = effective_plan(now, now + timedelta(hours=12), own, Overrides(), team)
    assert [(s.start.strftime("%H:%M"), s.state, s.side) for s in plan] == [
        ("22:30", State.LIGHTS_OUT, "team"),
        ("03:00", State.LIGHTS_OUT, "both"),
        ("09:00", State.ON_DUTY, "both"),
    ]
    change = next_change(now, own, Overrides(), team)
    assert change is not None
    assert (change.at, change.state) == (_at("2026-12-03T09:00"), State.ON_DUTY)
    # The control group: alone, the member is working and gets sleepy at 23:00.
    alone = next_change(now, own)
    assert alone is not None
    assert (alone.at, alone.state, alone.side) == (_at("2026-12-02T23:00"), State.WINDING, "own")


def test_overtime_and_pretend_are_in_the_plan() -> None:
    own = Schedule(peak_shift=False)
    now = _at("2026-12-02T23:30")
    overtime = Overrides(overtime_until=_at("2026-12-03T00:15"))
    plan = effective_plan(now, now + timedelta(hours=2), own, overtime)
    assert [(s.start.strftime("%H:%M"), s.state, s.override) for s in plan] == [
        ("23:30", State.ON_DUTY, "overtime"),
        ("00:15", State.WINDING, None),
    ]
    pretend = Overrides(debug_at=_at("2026-12-03T04:00"), debug_until=_at("2026-12-02T23:45"))
    plan = effective_plan(now, now + timedelta(hours=1), own, pretend)
    assert [(s.start.strftime("%H:%M"), s.state, s.override) for s in plan] == [
        ("23:30", State.LIGHTS_OUT, "pretend"),
        ("23:45", State.WINDING, None),
    ]
