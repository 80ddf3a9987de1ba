"""``steady_until``'s promise: inside the stretch it names, ``decide`` at any
later instant is the verdict it was given with only ``at`` moved
(``verdict_at``). Checked against ``decide`` itself, every field spelled out,
over any schedule and instant, through offset changes, and walked the way the
selectors' memo walks a gateway's calls; and the stretch is really there
where it should be (a promise never made is kept too).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from engine_support import PROPERTY, SHANGHAI, TICK, cn_schedule
from hypothesis import given
from hypothesis import strategies as st
from test_engine_fast_path import fields
from test_engine_properties import (
    INSTANTS,
    REQUESTS,
    near_an_offset_change,
    overrides_for,
    schedules,
)

from curfew_core.engine import Overrides, RequestContext, Schedule, State, decide
from curfew_core.engine.steady import steady_until, verdict_at

FRACTIONS = st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=6)


def check_stretch(
    now: datetime,
    schedule: Schedule,
    request: RequestContext,
    overrides: Overrides,
    fractions: list[float],
) -> datetime | None:
    verdict = decide(now, schedule, request, overrides)
    until = steady_until(verdict, now, schedule, overrides)
    if until is None:
        return None
    assert now < until <= verdict.valid_until
    span = until - now
    # ``span * f`` rounds to whole microseconds: up to ``until`` itself.
    inside = (min(now + span * f, until - TICK) for f in fractions)
    for later in {now, until - TICK, *inside}:
        again = decide(later, schedule, request, overrides)
        assert fields(again) == fields(verdict_at(verdict, later)), later
    return until


@PROPERTY
@given(schedule=schedules(), now=INSTANTS, request=REQUESTS, data=st.data())
def test_any_later_instant_of_the_stretch_decides_the_same(
    schedule: Schedule, now: datetime, request: RequestContext, data: st.DataObject
) -> None:
    overrides = data.draw(st.one_of(st.just(Overrides()), overrides_for(now)))
    check_stretch(now, schedule, request, overrides, data.draw(FRACTIONS))


@PROPERTY
@given(case=near_an_offset_change(), request=REQUESTS, fractions=FRACTIONS)
def test_around_offset_changes_the_stretch_decides_the_same(
    case: tuple[Schedule, datetime], request: RequestContext, fractions: list[float]
) -> None:
    schedule, now = case
    check_stretch(now, schedule, request, Overrides(), fractions)


@PROPERTY
@given(
    case=near_an_offset_change(),
    request=REQUESTS,
    steps=st.lists(
        st.timedeltas(min_value=timedelta(0), max_value=timedelta(seconds=50)),
        min_size=20,
        max_size=120,
    ),
)
def test_a_memo_walked_like_a_gateway_answers_as_decide(
    case: tuple[Schedule, datetime], request: RequestContext, steps: list[timedelta]
) -> None:
    # The selectors' memo in miniature: the last verdict and its stretch,
    # answered from while an instant falls inside it, decided anew otherwise.
    schedule, now = case
    memo: tuple[datetime, datetime, object] | None = None
    for step in steps:
        now += step
        truth = decide(now, schedule, request)
        if memo is not None and memo[0] <= now < memo[1]:
            assert fields(verdict_at(memo[2], now)) == fields(truth), now  # type: ignore[arg-type]
            continue
        until = steady_until(truth, now, schedule, Overrides())
        memo = None if until is None else (now, until, truth)


# -- where the stretch is, and where it is not ---------------------------------------

OFF_DUTY = datetime(2026, 12, 1, 10, 0, 20, 500, tzinfo=SHANGHAI).astimezone(
    UTC
)  # a Tuesday's peak


def test_an_off_duty_stretch_runs_to_the_end_of_its_minute() -> None:
    schedule = cn_schedule()
    verdict = decide(OFF_DUTY, schedule)
    assert verdict.state is State.OFF_DUTY
    until = steady_until(verdict, OFF_DUTY, schedule, Overrides())
    assert until == datetime(2026, 12, 1, 10, 1, tzinfo=SHANGHAI)
    assert until is not None
    assert until.tzinfo is UTC


def test_an_edge_inside_the_minute_ends_the_stretch_there() -> None:
    schedule = cn_schedule()
    before_noon = datetime(2026, 12, 1, 11, 59, 59, 999_000, tzinfo=SHANGHAI).astimezone(UTC)
    verdict = decide(before_noon - timedelta(seconds=30), schedule)
    until = steady_until(verdict, before_noon - timedelta(seconds=30), schedule, Overrides())
    assert until == verdict.valid_until == datetime(2026, 12, 1, 12, 0, tzinfo=SHANGHAI)


def test_winding_is_never_steady() -> None:
    schedule = cn_schedule()
    night = datetime(2026, 12, 1, 23, 30, tzinfo=SHANGHAI).astimezone(UTC)
    verdict = decide(night, schedule)
    assert verdict.state is State.WINDING
    assert steady_until(verdict, night, schedule, Overrides()) is None
    # Forced off, the reason still reads the night's percent.
    forced = Overrides(forced_off_until=night + timedelta(hours=1))
    verdict = decide(night, schedule, overrides=forced)
    assert verdict.state is State.LIGHTS_OUT
    assert verdict.schedule_state is State.WINDING
    assert steady_until(verdict, night, schedule, forced) is None


def test_the_time_machine_another_zone_and_a_moving_end_are_never_steady() -> None:
    schedule = cn_schedule()
    pretend = Overrides(debug_at=OFF_DUTY, debug_until=OFF_DUTY + timedelta(hours=1))
    assert (
        steady_until(decide(OFF_DUTY, schedule, overrides=pretend), OFF_DUTY, schedule, pretend)
        is None
    )
    local = OFF_DUTY.astimezone(SHANGHAI)
    assert steady_until(decide(local, schedule), local, schedule, Overrides()) is None
    # A valid_until that moves with the instant: the 24-hour horizon, and
    # the engine's "look again in a second".
    verdict = decide(OFF_DUTY, schedule)
    for moving in (OFF_DUTY + timedelta(hours=24), OFF_DUTY + timedelta(seconds=1)):
        moved = dataclasses.replace(verdict, valid_until=moving)
        assert steady_until(moved, OFF_DUTY, schedule, Overrides()) is None


def test_a_verdict_of_another_instant_is_not_vouched_for() -> None:
    schedule = cn_schedule()
    verdict = decide(OFF_DUTY, schedule)
    assert steady_until(verdict, OFF_DUTY + TICK, schedule, Overrides()) is None


def test_verdict_at_gives_each_dry_run_its_own_would() -> None:
    schedule = dataclasses.replace(cn_schedule(), dry_run=True)
    verdict = decide(OFF_DUTY, schedule)
    assert verdict.would is not None
    later = verdict_at(verdict, OFF_DUTY + timedelta(seconds=1))
    assert later.would == verdict.would
    assert later.would is not verdict.would
    assert later.at == OFF_DUTY + timedelta(seconds=1)
