"""``valid_until``: the decision holds until then, and (without DST or a
horizon in the way) changes right then, not a second later."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
from engine_support import SHANGHAI, TICK, cn_schedule, decision, hm, local

from curfew_core.engine import Anchor, Curve, NightTimes, Schedule, State, decide

STATE_EDGES = [
    # (now, valid_until): the next state edge, exactly.
    (local(2026, 9, 29, 22, 59), local(2026, 9, 29, 23, 0)),  # curfew starts
    (local(2026, 9, 29, 8, 59, 30), local(2026, 9, 29, 9, 0)),  # lights-out -> peak
    (local(2026, 9, 29, 11, 59), local(2026, 9, 29, 12, 0)),  # peak ends
    (local(2026, 9, 29, 12, 0), local(2026, 9, 29, 14, 0)),  # lunch valley
    (local(2026, 9, 29, 18, 0), local(2026, 9, 29, 23, 0)),  # evening on duty
    (local(2026, 9, 30, 3, 10), local(2026, 9, 30, 9, 0)),  # lights-out until wake-up
    (local(2026, 9, 26, 3, 10), local(2026, 9, 26, 9, 0)),  # Saturday: wake to on duty
    (local(2026, 9, 26, 12, 0), local(2026, 9, 26, 23, 0)),  # Saturday: no peak edges
    (local(2026, 9, 30, 0, 59, 59), local(2026, 9, 30, 1, 0)),  # anchor + tier step
    (local(2026, 9, 30, 2, 59, 59), local(2026, 9, 30, 3, 0)),  # lights-out
]


@pytest.mark.parametrize(("now", "edge"), STATE_EDGES, ids=lambda v: f"{v:%a %H:%M:%S}")
def test_valid_until_is_exactly_the_next_edge(now: datetime, edge: datetime) -> None:
    schedule = cn_schedule()
    verdict = decide(now, schedule)
    assert verdict.valid_until == edge
    assert decision(decide(edge - TICK, schedule)) == decision(verdict)
    assert decision(decide(edge, schedule)) != decision(verdict)


def test_valid_until_for_a_utc_instant_is_the_same_instant() -> None:
    verdict = decide(local(2026, 9, 29, 22, 59).astimezone(UTC), cn_schedule())
    assert verdict.valid_until == local(2026, 9, 29, 23, 0)


def test_budget_step_is_exact_to_the_microsecond() -> None:
    # 23:00 -> 00:00 falls 448 tokens in 3600 s. At 23:30 the raw value is 1824
    # and it rounds to 1823 once it drops below 1823.5, i.e. strictly after
    # 0.5 * 3600 / 448 s = 4.017857142... s: the first microsecond is 4.017858.
    now = local(2026, 9, 29, 23, 30)
    verdict = decide(now, cn_schedule())
    assert verdict.max_tokens == 1824
    crossing = Fraction(1, 2) * 3600 / 448
    assert crossing == Fraction(225, 56)
    assert verdict.valid_until == now + timedelta(seconds=4, microseconds=17858)
    assert decide(verdict.valid_until - TICK, cn_schedule()).max_tokens == 1824
    assert decide(verdict.valid_until, cn_schedule()).max_tokens == 1823


def test_budget_step_on_an_increasing_curve() -> None:
    # 100 -> 101 over 4 h: 100.5 (rounds up to 101) exactly at 01:00.
    from curfew_core.engine import Anchor

    schedule = cn_schedule(anchors=(Anchor(hm("23:00"), 100), Anchor(hm("03:00"), 101)))
    verdict = decide(local(2026, 9, 30, 0, 30), schedule)
    assert verdict.budget == 100
    # The persona tier changes at 01:00 too; both land on the same instant.
    assert verdict.valid_until == local(2026, 9, 30, 1, 0)
    assert decide(verdict.valid_until, schedule).budget == 101


def test_tier_step_bounds_valid_until() -> None:
    schedule = cn_schedule(tier_texts=("a", "b", "c"), curve=Curve.STEP)
    # STEP holds 2048 until 00:00, but the second of three tiers starts at 00:20.
    verdict = decide(local(2026, 9, 29, 23, 5), schedule)
    assert verdict.valid_until == local(2026, 9, 30, 0, 0)
    verdict = decide(local(2026, 9, 30, 0, 5), schedule)
    assert verdict.valid_until == local(2026, 9, 30, 0, 20)
    assert decide(local(2026, 9, 30, 0, 20), schedule).persona != verdict.persona


def test_time_machine_horizon() -> None:
    from curfew_core.engine import Overrides

    now = local(2026, 9, 29, 22, 59)
    verdict = decide(now, cn_schedule(), overrides=Overrides(debug_at=now))
    assert verdict.valid_until == now + timedelta(hours=24)


SCHEDULES = {
    "default": cn_schedule(),
    "step": cn_schedule(curve=Curve.STEP),
    "ease-in": cn_schedule(curve=Curve.EASE_IN),
    "friday-late": cn_schedule(weekdays={4: NightTimes(hm("01:00"), hm("03:00"), hm("10:00"))}),
    "wrapping-peak": cn_schedule(
        peak_windows=((hm("22:00"), hm("02:00")), (hm("09:30"), hm("11:00")))
    ),
    "odd-tiers": cn_schedule(tier_texts=("a", "b", "c", "d", "e", "f"), curve=Curve.EASE_IN),
    "zero-window": cn_schedule(night=NightTimes(hm("23:00"), hm("23:00"), hm("07:00"))),
}


def walk(schedule: Schedule, start: datetime, end: datetime, *, exact: bool = True) -> int:
    """Step from verdict to verdict; every step must be safe (and exact)."""
    now = start
    steps = 0
    while now < end:
        verdict = decide(now, schedule)
        until = verdict.valid_until
        assert until > now
        assert decision(decide(until - TICK, schedule)) == decision(verdict), (now, until)
        if exact and until - now < timedelta(hours=24):
            # Shanghai has no DST: nothing but a change of decision ends a verdict.
            assert decision(decide(until, schedule)) != decision(verdict), (now, until)
        now = until
        steps += 1
    return steps


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_walking_valid_until_through_a_night_is_safe_and_exact(name: str) -> None:
    # Friday 2026-10-09 20:00 to Saturday noon: the Friday night into a weekend day.
    # A peak window over the curfew start hides that edge: safe, not exact there.
    exact = name != "wrapping-peak"
    steps = walk(
        SCHEDULES[name], local(2026, 10, 9, 20, 0), local(2026, 10, 10, 12, 0), exact=exact
    )
    assert steps >= 3


def test_walking_a_weekend_into_the_week_of_the_default_schedule() -> None:
    # Friday 12:00 (a holiday) to Tuesday 12:00: four nights, valley and peak days.
    steps = walk(cn_schedule(), local(2026, 9, 25, 12, 0), local(2026, 9, 29, 12, 0))
    # Every night has 1984 one-token steps (2048 -> 64) plus a few state edges.
    assert 4 * 1984 < steps < 4 * 1984 + 40


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_decision_holds_on_samples_inside_the_validity(name: str) -> None:
    schedule = SCHEDULES[name]
    rng = random.Random(f"valid-until-{name}")
    base = local(2026, 1, 1)
    for _ in range(150):
        now = base + timedelta(
            seconds=rng.randrange(365 * 86400), microseconds=rng.randrange(10**6)
        )
        verdict = decide(now, schedule)
        assert verdict.valid_until > now
        span = verdict.valid_until - now
        probes = [verdict.valid_until - TICK] + [now + span * rng.random() for _ in range(3)]
        for probe in probes:
            assert decision(decide(probe, schedule)) == decision(verdict), (now, probe)


def test_valid_until_never_in_the_past_across_a_dense_day() -> None:
    schedule = cn_schedule()
    start = datetime(2026, 9, 29, tzinfo=SHANGHAI)
    for second in range(0, 86400, 37):
        now = start + timedelta(seconds=second)
        verdict = decide(now, schedule)
        assert verdict.valid_until > now
        if verdict.state is State.WINDING:
            # A budget step is at most 1 token away in this curve (>= 3.5 s apart).
            assert verdict.valid_until - now <= timedelta(seconds=15)


def test_overlapping_windows_bound_valid_until_by_either_window() -> None:
    # V-shaped anchors: 500 at 23:00, 100 at 01:00, 500 at 03:00. Sunday's night
    # (the default) runs 23:00-03:00; Monday evening's own night starts 02:00 the
    # same Monday and spans 02:00-04:00, the same V stretched onto two hours.
    # They overlap 02:00-03:00, where the tighter budget wins: Sunday's (rising
    # 300 -> 500) until Monday's (falling 500 -> 100) drops below it at 02:20.
    schedule = cn_schedule(
        night=NightTimes(hm("23:00"), hm("03:00"), hm("03:00")),
        weekdays={0: NightTimes(hm("02:00"), hm("04:00"), hm("01:00"))},
        anchors=(Anchor(hm("23:00"), 500), Anchor(hm("01:00"), 100), Anchor(hm("03:00"), 500)),
        peak_shift=False,
    )
    assert decide(local(2026, 9, 28, 2, 0), schedule).budget == 300  # Sunday's
    assert decide(local(2026, 9, 28, 2, 40), schedule).budget == 233  # Monday's: 500 - 400 * 2/3
    # The hidden window's steps end a verdict early (safe); missing them is not.
    steps = walk(schedule, local(2026, 9, 28, 2, 0), local(2026, 9, 28, 2, 59), exact=False)
    assert steps > 100
