"""``steady``'s promise: inside the stretch it names, ``decide`` at any later
instant is the verdict it was given with only ``at`` moved, and winding's
progress with it (``Stretch.verdict_at``), until the percent moves on.
Checked against ``decide`` itself, every field spelled out, over any schedule
and instant, through offset changes and nights, and walked the way the
selectors' memo walks a gateway's calls; and the stretch is really there
where it should be (a promise never made is kept too).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

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

from curfew_core.engine import Overrides, RequestContext, Schedule, State, Verdict, decide
from curfew_core.engine.steady import Stretch, steady


def steps(*, apart: int, most: int) -> st.SearchStrategy[list[timedelta]]:
    """Gaps between a gateway's calls: up to ``apart`` seconds, 20 to ``most`` of them."""
    gap = st.timedeltas(min_value=timedelta(0), max_value=timedelta(seconds=apart))
    return st.lists(gap, min_size=20, max_size=most)


#: Any day's instant, in UTC: a night is sought from it.
NIGHTS = st.datetimes(
    min_value=datetime(1971, 1, 1),  # noqa: DTZ001 - bounds of an aware strategy
    max_value=datetime(2099, 12, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)
FRACTIONS = st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=6)


def again(stretch: Stretch, verdict: Verdict, later: datetime) -> None:
    """``decide`` at ``later`` is what the stretch answers, or the stretch
    declines (winding's percent moved on) and the reason says a new percent."""
    answered = stretch.verdict_at(verdict, later)
    truth = decide(later, *ASKED[id(stretch)])
    if answered is None:
        assert verdict.state is State.WINDING
        assert truth.reason != verdict.reason, later
        return
    assert fields(truth) == fields(answered), later


#: What each stretch under test was found for (its schedule, request, overrides).
ASKED: dict[int, tuple[Any, ...]] = {}


def check_stretch(
    now: datetime,
    schedule: Schedule,
    request: RequestContext,
    overrides: Overrides,
    fractions: list[float],
) -> Stretch | None:
    verdict = decide(now, schedule, request, overrides)
    stretch = steady(verdict, now, schedule, overrides)
    if stretch is None:
        return None
    ASKED[id(stretch)] = (schedule, request, overrides)
    try:
        assert stretch.since == now < stretch.until <= verdict.valid_until
        span = stretch.until - now
        # ``span * f`` rounds to whole microseconds: up to ``until`` itself.
        inside = (min(now + span * f, stretch.until - TICK) for f in fractions)
        for later in {now, stretch.until - TICK, *inside}:
            again(stretch, verdict, later)
    finally:
        del ASKED[id(stretch)]
    return stretch


def walk(
    schedule: Schedule, request: RequestContext, now: datetime, steps: list[timedelta]
) -> None:
    """The selectors' memo in miniature: the last verdict and its stretch,
    answered from while an instant falls inside it (and the stretch does not
    decline), decided anew otherwise; every answer held to ``decide``'s."""
    memo: tuple[Stretch, Verdict] | None = None
    for step in steps:
        now += step
        truth = decide(now, schedule, request)
        if memo is not None and memo[0].since <= now < memo[0].until:
            answered = memo[0].verdict_at(memo[1], now)
            if answered is not None:
                assert fields(answered) == fields(truth), now
                continue
        found = steady(truth, now, schedule, Overrides())
        memo = None if found is None else (found, truth)


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
    steps=steps(apart=50, most=120),
)
def test_a_memo_walked_like_a_gateway_answers_as_decide(
    case: tuple[Schedule, datetime], request: RequestContext, steps: list[timedelta]
) -> None:
    schedule, now = case
    walk(schedule, request, now, steps)


@PROPERTY
@given(
    schedule=schedules(),
    night=NIGHTS,
    request=REQUESTS,
    steps=steps(apart=9, most=80),
)
def test_a_memo_walked_through_a_night_answers_as_decide(
    schedule: Schedule,
    night: datetime,
    request: RequestContext,
    steps: list[timedelta],
) -> None:
    # Uniform instants seldom fall in a window: from just before this night's
    # curfew on, through its first percents and budget steps.
    curfew = schedule.night.curfew_start
    local = night.astimezone(schedule.timezone).replace(
        hour=curfew // 60, minute=curfew % 60, second=0, microsecond=0
    )
    walk(schedule, request, local.astimezone(UTC) - timedelta(seconds=30), steps)


# -- where the stretch is, and where it is not ---------------------------------------


def _until(verdict: Verdict, now: datetime, schedule: Schedule, overrides: Overrides) -> Any:
    found = steady(verdict, now, schedule, overrides)
    return None if found is None else found.until


OFF_DUTY = datetime(2026, 12, 1, 10, 0, 20, 500, tzinfo=SHANGHAI).astimezone(
    UTC
)  # a Tuesday's peak


def test_an_off_duty_stretch_runs_to_the_end_of_its_minute() -> None:
    schedule = cn_schedule()
    verdict = decide(OFF_DUTY, schedule)
    assert verdict.state is State.OFF_DUTY
    until = _until(verdict, OFF_DUTY, schedule, Overrides())
    assert until == datetime(2026, 12, 1, 10, 1, tzinfo=SHANGHAI)
    assert until is not None
    assert until.tzinfo is UTC


def test_an_edge_inside_the_minute_ends_the_stretch_there() -> None:
    schedule = cn_schedule()
    before_noon = datetime(2026, 12, 1, 11, 59, 59, 999_000, tzinfo=SHANGHAI).astimezone(UTC)
    verdict = decide(before_noon - timedelta(seconds=30), schedule)
    until = _until(verdict, before_noon - timedelta(seconds=30), schedule, Overrides())
    assert until == verdict.valid_until == datetime(2026, 12, 1, 12, 0, tzinfo=SHANGHAI)


def test_winding_follows_its_progress_until_the_percent_moves_on() -> None:
    schedule = cn_schedule()
    night = datetime(2026, 12, 1, 23, 30, 1, tzinfo=SHANGHAI).astimezone(UTC)
    verdict = decide(night, schedule)
    assert verdict.state is State.WINDING
    assert verdict.progress is not None
    stretch = steady(verdict, night, schedule, Overrides())
    assert stretch is not None
    assert stretch.until <= datetime(2026, 12, 1, 23, 31, tzinfo=SHANGHAI)
    later = night + timedelta(seconds=2, microseconds=345)
    moved = stretch.verdict_at(verdict, later)
    assert moved is not None
    assert moved.progress is not None
    assert moved.progress > verdict.progress
    assert fields(moved) == fields(decide(later, schedule))
    # A whole percent of 4 hours is 144 s: some instant of the minute has the next.
    answers = [
        stretch.verdict_at(verdict, night + timedelta(seconds=n))
        for n in range(int((stretch.until - night).total_seconds()))
    ]
    declined = [n for n, answer in enumerate(answers) if answer is None]
    truth = decide(night + timedelta(seconds=declined[0]), schedule) if declined else None
    assert truth is None or truth.reason != verdict.reason


def test_winding_under_an_override_is_never_steady() -> None:
    schedule = cn_schedule()
    night = datetime(2026, 12, 1, 23, 30, tzinfo=SHANGHAI).astimezone(UTC)
    # Forced off (or in overtime), the reason still reads the night's percent,
    # and the verdict has no progress to follow it by.
    for overrides in (
        Overrides(forced_off_until=night + timedelta(hours=1)),
        Overrides(overtime_until=night + timedelta(hours=1)),
    ):
        verdict = decide(night, schedule, overrides=overrides)
        assert verdict.schedule_state is State.WINDING
        assert verdict.state is not State.WINDING
        assert _until(verdict, night, schedule, overrides) is None


def test_the_time_machine_another_zone_and_a_moving_end_are_never_steady() -> None:
    schedule = cn_schedule()
    pretend = Overrides(debug_at=OFF_DUTY, debug_until=OFF_DUTY + timedelta(hours=1))
    assert (
        _until(decide(OFF_DUTY, schedule, overrides=pretend), OFF_DUTY, schedule, pretend) is None
    )
    local = OFF_DUTY.astimezone(SHANGHAI)
    assert _until(decide(local, schedule), local, schedule, Overrides()) is None
    # A valid_until that moves with the instant: the 24-hour horizon, and
    # the engine's "look again in a second".
    verdict = decide(OFF_DUTY, schedule)
    for moving in (OFF_DUTY + timedelta(hours=24), OFF_DUTY + timedelta(seconds=1)):
        moved = dataclasses.replace(verdict, valid_until=moving)
        assert _until(moved, OFF_DUTY, schedule, Overrides()) is None


def test_a_verdict_of_another_instant_is_not_vouched_for() -> None:
    schedule = cn_schedule()
    verdict = decide(OFF_DUTY, schedule)
    assert _until(verdict, OFF_DUTY + TICK, schedule, Overrides()) is None


def test_verdict_at_gives_each_dry_run_its_own_would() -> None:
    schedule = dataclasses.replace(cn_schedule(), dry_run=True)
    verdict = decide(OFF_DUTY, schedule)
    assert verdict.would is not None
    stretch = steady(verdict, OFF_DUTY, schedule, Overrides())
    assert stretch is not None
    later = stretch.verdict_at(verdict, OFF_DUTY + timedelta(seconds=1))
    assert later is not None
    assert later.would == verdict.would
    assert later.would is not verdict.would
    assert later.at == OFF_DUTY + timedelta(seconds=1)
