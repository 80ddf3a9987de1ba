"""``steady_member``'s promise: inside the stretch it names, ``decide_member``
at any later instant is the member's verdict it was given with only ``at``
moved. Checked against ``decide_member`` itself, every field spelled out, over
any two schedules, policy, overrides (the member's overtime lifting the
team's night included) and instant; walked the way the selectors' memo walks
a gateway's calls; and the stretch is really there where it should be.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine_support import PROPERTY, SHANGHAI, TICK
from hypothesis import given
from hypothesis import strategies as st
from test_engine_fast_path import fields
from test_engine_properties import INSTANTS, REQUESTS, overrides_for, schedules
from test_engine_steady import FRACTIONS, NIGHTS, steps
from test_engine_team import NIGHT_EARLY, NIGHT_LATE, POLICIES

from curfew_core.engine import Overrides, RequestContext, Schedule, State, Verdict
from curfew_core.engine.steady import Stretch, steady_member
from curfew_core.engine.team import TeamSide, decide_member, member_sides, member_verdict

TEAMS = st.builds(
    TeamSide,
    schedule=schedules(),
    policy=POLICIES,
    overtime_until=st.none(),
)


def stretch_of(
    now: datetime,
    schedule: Schedule,
    request: RequestContext,
    overrides: Overrides,
    team: TeamSide,
    taken: datetime | None,
) -> tuple[Verdict, Stretch | None]:
    """The member's verdict at ``now`` and its stretch, as the selectors find them."""
    own, theirs = member_sides(now, schedule, request, overrides, team, member_overtime_from=taken)
    verdict = member_verdict(own, theirs, schedule, request, team)
    assert fields(verdict) == fields(
        decide_member(now, schedule, request, overrides, team, member_overtime_from=taken)
    ), "the two halves are decide_member"
    found = steady_member(own, theirs, now, schedule, overrides, team, member_overtime_from=taken)
    return verdict, found


@PROPERTY
@given(
    schedule=schedules(),
    team=TEAMS,
    now=INSTANTS,
    request=REQUESTS,
    data=st.data(),
)
def test_any_later_instant_of_a_members_stretch_decides_the_same(
    schedule: Schedule,
    team: TeamSide,
    now: datetime,
    request: RequestContext,
    data: st.DataObject,
) -> None:
    overrides = data.draw(st.one_of(st.just(Overrides()), overrides_for(now)))
    taken = data.draw(st.one_of(st.none(), st.just(now - timedelta(minutes=20))))
    if data.draw(st.booleans()):
        team = TeamSide(
            team.schedule,
            team.policy,
            now
            + data.draw(
                st.timedeltas(min_value=timedelta(seconds=-60), max_value=timedelta(hours=2))
            ),
        )
    verdict, stretch = stretch_of(now, schedule, request, overrides, team, taken)
    if stretch is None:
        return
    assert stretch.since == now < stretch.until <= verdict.valid_until
    span = stretch.until - now
    inside = (min(now + span * f, stretch.until - TICK) for f in data.draw(FRACTIONS))
    for later in {now, stretch.until - TICK, *inside}:
        truth = decide_member(later, schedule, request, overrides, team, member_overtime_from=taken)
        answered = stretch.verdict_at(verdict, later)
        assert answered is not None, "no member's stretch follows a progress"
        assert fields(answered) == fields(truth), later


@PROPERTY
@given(
    schedule=schedules(),
    team=TEAMS,
    night=NIGHTS,
    request=REQUESTS,
    steps=steps(apart=40, most=80),
)
def test_a_memo_walked_like_a_gateway_answers_as_decide_member(
    schedule: Schedule,
    team: TeamSide,
    night: datetime,
    request: RequestContext,
    steps: list[timedelta],
) -> None:
    # From just before the team's curfew on: its edges, and the member's.
    curfew = team.schedule.night.curfew_start
    now = night.astimezone(team.schedule.timezone).replace(
        hour=curfew // 60, minute=curfew % 60, second=0, microsecond=0
    ).astimezone(UTC) - timedelta(minutes=2)
    memo: tuple[Stretch, Verdict] | None = None
    for step in steps:
        now += step
        truth = decide_member(now, schedule, request, Overrides(), team)
        if memo is not None and memo[0].since <= now < memo[0].until:
            answered = memo[0].verdict_at(memo[1], now)
            assert answered is not None
            assert fields(answered) == fields(truth), now
            continue
        verdict, found = stretch_of(now, schedule, request, Overrides(), team, None)
        memo = None if found is None else (found, verdict)


# -- where the stretch is, and where it is not ---------------------------------------

#: A Tuesday's peak (off duty on both sides), twenty seconds into its minute.
PEAK = datetime(2026, 12, 1, 10, 0, 20, 500, tzinfo=SHANGHAI).astimezone(UTC)
#: 23:30 on a Tuesday: the early team's night is dark, the late member is winding.
LATE = datetime(2026, 12, 1, 23, 30, 20, tzinfo=SHANGHAI).astimezone(UTC)


def test_a_members_off_duty_stretch_runs_to_the_end_of_its_minute() -> None:
    team = TeamSide(Schedule())
    verdict, stretch = stretch_of(PEAK, Schedule(), RequestContext(), Overrides(), team, None)
    assert verdict.state is State.OFF_DUTY
    assert stretch is not None
    assert stretch.until == PEAK + timedelta(seconds=39, microseconds=999_500)


def test_a_winding_side_is_never_steady() -> None:
    # The member winds (23:00-03:00) under the team's lights-out (22:00 on).
    own, theirs = member_sides(
        LATE, NIGHT_LATE, RequestContext(), Overrides(), TeamSide(NIGHT_EARLY)
    )
    assert own.state is State.WINDING
    assert theirs.state is State.LIGHTS_OUT
    verdict, stretch = stretch_of(
        LATE, NIGHT_LATE, RequestContext(), Overrides(), TeamSide(NIGHT_EARLY), None
    )
    assert verdict.state is State.LIGHTS_OUT
    assert stretch is None


def test_the_members_lift_of_the_team_night_ends_the_stretch_where_it_ends() -> None:
    from test_engine_team import TeamPolicy  # the policy letting members lift the team

    team = TeamSide(NIGHT_EARLY, TeamPolicy(member_overtime=timedelta(minutes=30)))
    at = datetime(2026, 12, 1, 22, 30, 10, tzinfo=SHANGHAI).astimezone(UTC)
    taken = at - timedelta(minutes=29, seconds=30)  # the lift ends 20 s from now
    overrides = Overrides(at + timedelta(hours=2), None, None)
    verdict, stretch = stretch_of(at, NIGHT_LATE, RequestContext(), overrides, team, taken)
    assert verdict.state is State.ON_DUTY, verdict.reason
    assert stretch is not None
    assert stretch.until == taken + timedelta(minutes=30)
    after = decide_member(
        stretch.until, NIGHT_LATE, RequestContext(), overrides, team, member_overtime_from=taken
    )
    assert after.state is not State.ON_DUTY, "the team's night is back once the lift ends"
