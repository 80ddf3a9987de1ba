"""A team member's verdict (issue 26): the team's schedule and the member's,
harsher wins, never looser than either side, the member's own without a team."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from engine_support import PROPERTY, hm, local
from hypothesis import given
from hypothesis import strategies as st
from test_engine_properties import INSTANTS, REQUESTS, overrides_for, schedules

from curfew_core.engine import (
    Action,
    NightTimes,
    Overrides,
    RequestContext,
    Schedule,
    State,
    decide,
)
from curfew_core.engine.team import (
    ACTION_SEVERITY,
    TeamPolicy,
    TeamSide,
    combine,
    decide_member,
    scope_exempts,
)
from curfew_core.engine.verdict import SEVERITY

POLICIES = st.builds(
    TeamPolicy,
    members_may_exempt=st.booleans(),
    member_overtime=st.sampled_from([timedelta(0), timedelta(minutes=30), timedelta(hours=3)]),
)


def _acted(verdict_action: Action) -> int:
    return ACTION_SEVERITY[verdict_action]


def _gate(a: object) -> tuple[object, ...]:
    """What a gateway acts on, and how long it may keep it."""
    from curfew_core.engine import Verdict

    assert isinstance(a, Verdict)
    return (a.state, a.action, a.max_tokens, a.tools, a.peak, a.valid_until, a.budget)


@PROPERTY
@given(data=st.data(), now=INSTANTS, request=REQUESTS)
def test_no_team_is_the_members_own_verdict(
    data: st.DataObject, now: datetime, request: RequestContext
) -> None:
    schedule = data.draw(schedules())
    overrides = data.draw(overrides_for(now))
    assert decide_member(now, schedule, request, overrides, None) == decide(
        now, schedule, request, overrides
    )


@PROPERTY
@given(data=st.data(), now=INSTANTS, request=REQUESTS)
def test_combine_is_commutative_in_what_a_gateway_acts_on(
    data: st.DataObject, now: datetime, request: RequestContext
) -> None:
    a = decide(now, data.draw(schedules()), request, data.draw(overrides_for(now)))
    b = decide(now, data.draw(schedules()), request)
    assert _gate(combine(a, b)) == _gate(combine(b, a))


@PROPERTY
@given(data=st.data(), now=INSTANTS, request=REQUESTS, policy=POLICIES)
def test_never_looser_than_either_side(
    data: st.DataObject, now: datetime, request: RequestContext, policy: TeamPolicy
) -> None:
    mine = data.draw(schedules())
    theirs = data.draw(schedules())
    overrides = data.draw(overrides_for(now))
    team = TeamSide(theirs, policy)
    got = decide_member(now, mine, request, overrides, team)
    plain = RequestContext(max_tokens=request.max_tokens)
    own = decide(now, mine, plain, overrides)
    # The team side without any overtime of the member's: the harshest it can be.
    team_alone = decide(
        now,
        theirs,
        plain,
        Overrides(debug_at=overrides.debug_at, debug_until=overrides.debug_until),
    )
    assert SEVERITY[got.state] >= SEVERITY[own.state]
    assert got.valid_until <= own.valid_until
    if not got.exempt:
        assert _acted(got.action) >= _acted(own.action)
        if policy.member_overtime == timedelta(0):
            assert SEVERITY[got.state] >= SEVERITY[team_alone.state]
            assert _acted(got.action) >= _acted(team_alone.action)
        for side in (own, team_alone):
            if got.action is side.action is Action.CLAMP:
                assert got.max_tokens is not None
                assert side.max_tokens is not None
                assert got.max_tokens <= side.max_tokens
            if side.tools == "deny" and got.action is side.action:
                assert got.tools == "deny"
    else:
        # Counted only because both sides allow it.
        assert scope_exempts(mine, request)
        assert policy.members_may_exempt or scope_exempts(theirs, request)


NIGHT_EARLY = Schedule(night=NightTimes(hm("21:00"), hm("22:00"), hm("07:00")), peak_shift=False)
NIGHT_LATE = Schedule(night=NightTimes(hm("23:00"), hm("03:00"), hm("09:00")), peak_shift=False)


def test_team_night_earlier_than_the_members_gives_the_teams_night() -> None:
    now = local(2026, 9, 29, 22, 30)
    own = decide(now, NIGHT_LATE)
    assert own.state is State.ON_DUTY  # control: alone, the member still works
    got = decide_member(now, NIGHT_LATE, RequestContext(), Overrides(), TeamSide(NIGHT_EARLY))
    assert got.state is State.LIGHTS_OUT
    assert got.action is Action.SHORT_CIRCUIT
    assert "team: lights out until 07:00" in got.reason


def test_smaller_budget_and_earlier_valid_until_win() -> None:
    now = local(2026, 9, 29, 23, 30)
    early = Schedule(night=NightTimes(hm("21:00"), hm("23:59"), hm("07:00")), peak_shift=False)
    a = decide(now, NIGHT_LATE, RequestContext(max_tokens=4096))
    b = decide(now, early, RequestContext(max_tokens=4096))
    assert a.state is b.state is State.WINDING
    got = combine(a, b)
    assert got.max_tokens == min(a.max_tokens or 0, b.max_tokens or 0)
    assert got.valid_until == min(a.valid_until, b.valid_until)


def test_members_overtime_does_not_lift_the_team_unless_allowed() -> None:
    now = local(2026, 9, 29, 22, 30)
    overtime = Overrides(overtime_until=now + timedelta(hours=2))
    taken = now - timedelta(minutes=10)
    locked = decide_member(
        now,
        NIGHT_LATE,
        RequestContext(),
        overtime,
        TeamSide(NIGHT_EARLY),
        member_overtime_from=taken,
    )
    assert locked.state is State.LIGHTS_OUT
    allowed = TeamSide(NIGHT_EARLY, TeamPolicy(member_overtime=timedelta(minutes=30)))
    lifted = decide_member(
        now, NIGHT_LATE, RequestContext(), overtime, allowed, member_overtime_from=taken
    )
    assert lifted.state is State.ON_DUTY
    # Only for as long as the team allows: 30 minutes from when it was taken.
    assert lifted.valid_until == taken + timedelta(minutes=30)
    later = decide_member(
        taken + timedelta(minutes=31),
        NIGHT_LATE,
        RequestContext(),
        overtime,
        allowed,
        member_overtime_from=taken,
    )
    assert later.state is State.LIGHTS_OUT


def test_release_night_lifts_the_team_side_only() -> None:
    now = local(2026, 9, 29, 22, 30)
    team = TeamSide(NIGHT_EARLY, overtime_until=now + timedelta(hours=1))
    got = decide_member(now, NIGHT_LATE, RequestContext(), Overrides(), team)
    assert got.state is State.ON_DUTY
    assert got.override == "overtime"
    # The member's own night still holds: the team's overtime is no raise over it.
    at_midnight = local(2026, 9, 30, 0, 0)
    team = TeamSide(NIGHT_EARLY, overtime_until=at_midnight + timedelta(hours=5))
    assert decide_member(at_midnight, NIGHT_LATE, RequestContext(), Overrides(), team).state is (
        State.WINDING
    )


def test_an_exemption_counts_only_if_both_allow_it() -> None:
    now = local(2026, 9, 29, 22, 30)
    mine = Schedule(night=NIGHT_LATE.night, peak_shift=False, exempt_sessions=frozenset({"s"}))
    request = RequestContext(session_id="s")
    refused = decide_member(now, mine, request, Overrides(), TeamSide(NIGHT_EARLY))
    assert refused.action is Action.SHORT_CIRCUIT
    assert not refused.exempt
    allowed = TeamSide(NIGHT_EARLY, TeamPolicy(members_may_exempt=True))
    passed = decide_member(now, mine, request, Overrides(), allowed)
    assert passed.action is Action.PASS
    assert passed.exempt
    assert passed.state is State.LIGHTS_OUT
    # The team listing the session alone is not enough: the member must too.
    team_lists = Schedule(
        night=NIGHT_EARLY.night, peak_shift=False, exempt_sessions=frozenset({"t"})
    )
    other = decide_member(
        now, NIGHT_LATE, RequestContext(session_id="t"), Overrides(), TeamSide(team_lists)
    )
    assert other.action is Action.SHORT_CIRCUIT


def test_team_peak_hours_apply_to_a_member_without_any() -> None:
    now = datetime(2026, 9, 29, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai, a Tuesday
    mine = Schedule(peak_shift=False)
    team = Schedule()
    assert decide(now, mine).state is State.ON_DUTY
    assert decide_member(now, mine, RequestContext(), Overrides(), TeamSide(team)).state is (
        State.OFF_DUTY
    )


# -- the member's day plan ------------------------------------------------------------


@PROPERTY
@given(data=st.data(), now=INSTANTS)
def test_a_members_day_plan_is_the_harsher_of_both_at_every_instant(
    data: st.DataObject, now: datetime
) -> None:
    """What ``GET /api/v1/state``'s ``day`` shows a member: at every minute of
    their day, never looser than either schedule, and always one of the two
    (harsher wins); commutative in the states it draws."""
    from curfew_core.engine import member_day_plan
    from curfew_core.engine.decide import segments
    from curfew_core.engine.plan import END_OF_DAY

    own, team = data.draw(schedules()), data.draw(schedules())
    day = now.astimezone(own.timezone).date()
    plan = member_day_plan(own, team, day)
    assert plan[0].start == 0
    assert plan[-1].end == END_OF_DAY
    assert all(a.end == b.start for a, b in itertools.pairwise(plan))
    midnight = datetime(day.year, day.month, day.day, tzinfo=own.timezone)
    after = datetime.combine(day + timedelta(days=1), datetime.min.time(), own.timezone)
    sides = [segments(midnight, after, own), segments(midnight, after, team)]
    for seg in plan:
        if seg.end <= seg.start:
            continue  # a DST day's repeated wall minutes
        at = midnight.replace(hour=seg.start // 60, minute=seg.start % 60)
        states = [next(s.state for s in side if s.start <= at < s.end) for side in sides]
        assert seg.state in states
        assert all(SEVERITY[seg.state] >= SEVERITY[state] for state in states)
    assert [s.state for s in plan] == [s.state for s in member_day_plan(team, own, day)] or (
        own.timezone != team.timezone
    )


def test_a_team_night_earlier_than_the_members_shows_in_their_day() -> None:
    """In the plan their state shows and in the band their capsule draws."""
    from curfew_core.engine import day_band, day_plan, member_day_plan

    own = Schedule(timezone=local(2026, 9, 29, 0).tzinfo)  # the defaults: 23:00 to 03:00
    team = Schedule(
        timezone=own.timezone,
        night=NightTimes(hm("20:00"), hm("21:00"), hm("07:00")),
    )
    day = local(2026, 9, 29, 0).date()  # a Tuesday
    alone = {(s.start, s.state) for s in day_plan(own, day)}
    together = member_day_plan(own, team, day)
    assert (hm("20:00"), State.WINDING) in {(s.start, s.state) for s in together}
    assert (hm("21:00"), State.LIGHTS_OUT) in {(s.start, s.state) for s in together}
    assert (hm("20:00"), State.WINDING) not in alone  # the control: the member's own
    at_2130 = hm("21:30") // 15
    assert day_band(own, day, team=team).cells[at_2130].state is State.LIGHTS_OUT
    assert day_band(own, day).cells[at_2130].state is State.ON_DUTY  # the control


@PROPERTY
@given(data=st.data(), now=INSTANTS)
def test_a_members_band_is_their_day_plan_in_cells(data: st.DataObject, now: datetime) -> None:
    """The capsule's band of a member says what their state's ``day`` says:
    each cell is in the state of the plan at its midpoint (``day_band`` with
    the team), and without a team it is the member's own band."""
    from curfew_core.engine import day_band, member_day_plan

    own, team = data.draw(schedules()), data.draw(schedules())
    day = now.astimezone(own.timezone).date()
    band = day_band(own, day, 60, team=team)
    plan = member_day_plan(own, team, day)
    assert band.plan == plan
    for cell in band.cells:
        middle = cell.start + 30
        covering = [s for s in plan if s.start <= middle < s.end]
        if len(covering) == 1:  # a DST day's wall minutes may repeat or skip
            assert cell.state is covering[0].state
    assert day_band(own, day, 60, team=None) == day_band(own, day, 60)


def test_a_team_with_peak_hours_takes_the_valley_away() -> None:
    from curfew_core.engine import day_band

    own = Schedule(timezone=local(2026, 10, 3, 0).tzinfo)
    day = local(2026, 10, 3, 0).date()  # a Saturday: a valley for the defaults
    everyday = Schedule(timezone=own.timezone, weekend_valley=False)
    assert day_band(own, day).valley == "weekend"
    assert day_band(own, day, team=own).valley == "weekend"
    assert day_band(own, day, team=everyday).valley is None
