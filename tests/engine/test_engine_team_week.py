"""The team's share of a member's week (issue 39): every instant of every share
is one where ``decide_member`` follows the team's state and the member's own
is milder (one of the share's ``own``), and every instant of the week where
the team's state is harsher than the member's own is inside a share."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from engine_support import PROPERTY
from hypothesis import given
from hypothesis import strategies as st
from test_engine_properties import schedules
from test_engine_team import POLICIES

from curfew_core.engine import NightTimes, Overrides, Schedule, State
from curfew_core.engine.clock import to_wall, wall_midnight
from curfew_core.engine.decide import decide
from curfew_core.engine.effective import PLAIN_CALL, TeamShare, team_week
from curfew_core.engine.team import TeamPolicy, TeamSide, decide_member
from curfew_core.engine.verdict import SEVERITY

NONE = Overrides()
DAYS = st.dates(min_value=date(1971, 1, 1), max_value=date(2099, 12, 1))


def _states(instant: datetime, own: Schedule, team: TeamSide) -> tuple[State, State, State]:
    """The member's state, their own alone, and the team's alone at ``instant``."""
    member = decide_member(instant, own, PLAIN_CALL, NONE, team).state
    return (
        member,
        decide(instant, own, PLAIN_CALL).state,
        decide(instant, team.schedule, PLAIN_CALL).state,
    )


def _probes(share: TeamShare) -> set[datetime]:
    """A share's first and last instants and its middle, in UTC: the share's
    instants carry the member's zone, and Python adds, subtracts and compares
    two of one zone on the wall clock, so in the hour a clock goes back
    (01:01 to the second 01:00) the end came before the start."""
    start, end = share.start.astimezone(UTC), share.end.astimezone(UTC)
    return {start, end - timedelta(microseconds=1), start + (end - start) / 2}


def _inside(share: TeamShare, data: st.DataObject) -> set[datetime]:
    probes = _probes(share)
    probes.add(
        data.draw(
            st.datetimes(
                min_value=min(probes).replace(tzinfo=None),
                max_value=max(probes).replace(tzinfo=None),
                timezones=st.just(UTC),
            )
        )
    )
    return probes


@PROPERTY
@given(data=st.data(), first=DAYS)
def test_every_share_is_the_teams_alone_and_every_such_instant_is_in_one(
    data: st.DataObject, first: date
) -> None:
    own = data.draw(schedules())
    team = TeamSide(data.draw(schedules()), data.draw(POLICIES))
    week = team_week(first, own, team)
    assert [day.day for day in week] == [first + timedelta(days=n) for n in range(7)]
    shares = [share for day in week for share in day.shares]
    for day in week:
        for share in day.shares:
            # A share belongs to the local day it starts on (the member's clock).
            assert to_wall(share.start, own.timezone).date() == day.day
            for instant in _inside(share, data):
                member, alone, theirs = _states(instant, own, team)
                assert member is share.state is theirs, (instant, share)
                assert SEVERITY[theirs] > SEVERITY[alone], (instant, share)
                assert alone in share.own, (instant, share)
    # Every instant the team is harsher, from the week's start to its end, is
    # in a share of this week or of the days before (a night running into it).
    before = team_week(first - timedelta(days=2), own, team, days=9)
    covering = [share for day in before for share in day.shares]
    assert set(shares) <= set(covering)
    start = wall_midnight(first).replace(tzinfo=own.timezone).astimezone(UTC)
    for _ in range(12):
        instant = data.draw(
            st.datetimes(
                min_value=start.replace(tzinfo=None),
                # The week's end is the next week's first instant (max_value is inclusive).
                max_value=(start + timedelta(days=7, microseconds=-1)).replace(tzinfo=None),
                timezones=st.just(UTC),
            )
        )
        _member, alone, theirs = _states(instant, own, team)
        inside = any(share.start <= instant < share.end for share in covering)
        assert inside == (SEVERITY[theirs] > SEVERITY[alone]), instant


def test_the_issues_team_wakes_its_member_an_hour_later_on_weekdays() -> None:
    """The issue's case: the team sleepy at 21:00, asleep at 22:00, awake at
    09:00; the member 23:00 and 03:00, awake at 08:00 after a weekday evening
    (Sun–Thu) and 09:00 after Fri and Sat. Each day the team's 21:00 and
    22:00 are its share, and on weekday mornings its 09:00 wake-up."""
    workday = NightTimes(23 * 60, 3 * 60, 8 * 60)
    own = Schedule(peak_shift=False, weekdays={day: workday for day in (6, 0, 1, 2, 3)})
    team = TeamSide(Schedule(peak_shift=False, night=NightTimes(21 * 60, 22 * 60, 9 * 60)))
    week = team_week(date(2026, 11, 30), own, team)  # a Monday

    def words(share: TeamShare) -> tuple[str, str, str, tuple[str, ...]]:
        return (
            share.start.strftime("%H:%M"),
            share.end.strftime("%H:%M"),
            share.state.value,
            tuple(state.value for state in share.own),
        )

    evening = [
        ("21:00", "22:00", "winding", ("on-duty",)),
        ("22:00", "03:00", "lights-out", ("on-duty", "winding")),
    ]
    morning = [("08:00", "09:00", "lights-out", ("on-duty",))]
    assert [[words(share) for share in day.shares] for day in week] == [
        *[morning + evening] * 5,
        evening,
        evening,
    ]
    # The control group: a team as lenient as the member everywhere has no share.
    lenient = TeamSide(Schedule(peak_shift=False, night=NightTimes(23 * 60, 3 * 60, 8 * 60)))
    assert all(not day.shares for day in team_week(date(2026, 11, 30), own, lenient))


def test_a_share_in_the_hour_the_clock_goes_back() -> None:
    """Juneau's clocks went back at 02:00 on 2000-10-29: the team's 01:01–02:00
    is two shares (01:01–01:00 of the second pass, 01:01–02:00), each in
    real time from its start to its end, and every instant inside is the team's."""
    zone = ZoneInfo("America/Juneau")
    own = Schedule(timezone=zone, peak_shift=False, enabled=False)
    team = TeamSide(
        Schedule(timezone=zone, peak_shift=False, night=NightTimes(61, 120, 120)),
        TeamPolicy(),
    )
    [day] = [day for day in team_week(date(2000, 10, 23), own, team) if day.day.day == 29]
    spans = [(share.start.astimezone(UTC), share.end.astimezone(UTC)) for share in day.shares]
    assert [(start.strftime("%H:%M"), end.strftime("%H:%M")) for start, end in spans] == [
        ("09:01", "10:00"),
        ("10:01", "11:00"),
    ]
    for share in day.shares:
        for instant in _probes(share):
            member, alone, theirs = _states(instant, own, team)
            assert member is share.state is theirs, instant
            assert SEVERITY[theirs] > SEVERITY[alone], instant
