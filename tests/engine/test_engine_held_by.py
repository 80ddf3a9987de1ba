"""Whose rule makes the plan change when it does (``Stretch.held_by``,
``Change.held_by``): the engine says it, so no surface re-derives it.

A member whose own wake-up is 09:00 and whose team wakes at 09:30 is asleep
by the team's night alone from 09:00; at 09:30 both sides agree they are
awake (the stretch that starts is ``both``), yet it is the team that held them
until then, and every surface says so ("by your team's schedule"). When the
member's own rule ends the night, the change is not the team's."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from engine_support import PROPERTY
from hypothesis import given
from hypothesis import strategies as st
from test_engine_effective import members
from test_engine_properties import INSTANTS

from curfew_core.engine import NightTimes, Overrides, Schedule, State
from curfew_core.engine.effective import effective_plan, next_change
from curfew_core.engine.team import TeamPolicy, TeamSide

SHANGHAI = Schedule().timezone


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)


def _night(wake: str) -> Schedule:
    hours, minutes = map(int, wake.split(":"))
    return Schedule(peak_shift=False, night=NightTimes(22 * 60, 60, hours * 60 + minutes))


def test_the_teams_later_wake_up_is_held_by_the_team() -> None:
    own, team = _night("09:00"), TeamSide(_night("09:30"), TeamPolicy())
    now = _at("2026-12-06T09:15")
    change = next_change(now, own, Overrides(), team)
    assert change is not None
    # The stretch that starts is both sides' (both awake), the team held it.
    assert (change.at, change.state, change.side, change.held_by) == (
        _at("2026-12-06T09:30"),
        State.ON_DUTY,
        "both",
        "team",
    )
    plan = effective_plan(_at("2026-12-06T08:00"), _at("2026-12-06T12:00"), own, Overrides(), team)
    assert [(s.start.strftime("%H:%M"), s.side, s.held_by) for s in plan] == [
        ("08:00", "both", "both"),
        ("09:00", "team", "team"),
        ("09:30", "both", "team"),
    ]


def test_the_members_own_later_wake_up_is_not_the_teams() -> None:
    """The control: the member wakes at 09:30 by their own rule, the team at
    09:00. The change at 09:30 is not the team's (the rule as the page has
    always told it: the stretch's own side)."""
    own, team = _night("09:30"), TeamSide(_night("09:00"), TeamPolicy())
    now = _at("2026-12-06T09:15")
    change = next_change(now, own, Overrides(), team)
    assert change is not None
    assert (change.at, change.state, change.side, change.held_by) == (
        _at("2026-12-06T09:30"),
        State.ON_DUTY,
        "both",
        "both",
    )


def test_without_a_team_every_change_is_the_members_own() -> None:
    own = _night("09:00")
    change = next_change(_at("2026-12-06T08:15"), own)
    assert change is not None
    assert (change.at, change.side, change.held_by) == (_at("2026-12-06T09:00"), "own", "own")
    plan = effective_plan(_at("2026-12-05T20:00"), _at("2026-12-06T20:00"), own)
    assert {stretch.held_by for stretch in plan} == {"own"}


@PROPERTY
@given(data=st.data(), now=INSTANTS)
def test_held_by_is_the_team_after_the_teams_own_stretch(
    data: st.DataObject, now: datetime
) -> None:
    """Every stretch after the team's alone is held by the team, every other
    by its own side; the next change carries its stretch's."""
    schedule, overrides, team, taken = data.draw(members(now))
    horizon = timedelta(hours=30)
    plan = effective_plan(now, now + horizon, schedule, overrides, team, member_overtime_from=taken)
    assert plan[0].held_by == plan[0].side
    for before, after in itertools.pairwise(plan):
        assert after.held_by == ("team" if before.side == "team" else after.side)
    change = next_change(now, schedule, overrides, team, member_overtime_from=taken)
    if change is None:
        return
    [starting] = [stretch for stretch in plan if stretch.start == change.at]
    assert (change.side, change.held_by, change.override) == (
        starting.side,
        starting.held_by,
        starting.override,
    )
    if team is None:
        assert change.held_by == "own"
