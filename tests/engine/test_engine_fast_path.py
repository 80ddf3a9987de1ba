"""The fast path (per-date plans in wall microseconds, issue 13) decides exactly
as the engine did before it: every field of every verdict, every segment and
every day band, against the old implementation kept as the oracle
(``curfew_testkit.engine_reference``), over any schedule, zone and instant.
"""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from engine_support import PROPERTY, TICK, cn_schedule, hm, local, transitions
from hypothesis import given
from hypothesis import strategies as st
from test_engine_properties import (
    INSTANTS,
    REQUESTS,
    ZONES,
    near_an_offset_change,
    overrides_for,
    representations,
    schedules,
)

from curfew_core.engine import (
    Anchor,
    Curve,
    NightTimes,
    Overrides,
    RequestContext,
    Schedule,
    Segment,
    Verdict,
    day_band,
    decide,
    segments,
)
from curfew_core.engine import plan as plan_module
from curfew_testkit.engine_reference import reference_decide, reference_segments


def exactly(value: Any) -> Any:
    """A value with every datetime spelled out: ``==`` on aware datetimes of
    one zone compares wall readings and ignores ``fold``, so it would call two
    instants of a repeated hour equal."""
    if isinstance(value, datetime):
        return (value.astimezone(UTC), value.replace(tzinfo=None), value.fold, value.tzinfo)
    if isinstance(value, dict):
        return {key: exactly(item) for key, item in value.items()}
    return value


def fields(verdict: Verdict) -> dict[str, Any]:
    return {f.name: exactly(getattr(verdict, f.name)) for f in dataclasses.fields(verdict)}


PLAIN = RequestContext()
NONE = Overrides()


def same_verdict(
    now: datetime,
    schedule: Schedule,
    request: RequestContext = PLAIN,
    overrides: Overrides = NONE,
) -> Verdict:
    fast = decide(now, schedule, request, overrides)
    assert fields(fast) == fields(reference_decide(now, schedule, request, overrides)), now
    return fast


def spelled(parts: list[Segment]) -> list[tuple[Any, ...]]:
    return [(exactly(p.start), exactly(p.end), p.state, p.peak) for p in parts]


@PROPERTY
@given(
    schedule=schedules(),
    now=INSTANTS,
    request=REQUESTS,
    other=ZONES,
    data=st.data(),
)
def test_any_instant_decides_as_before(
    schedule: Schedule, now: datetime, request: RequestContext, other: tzinfo, data: st.DataObject
) -> None:
    overrides = data.draw(st.one_of(st.just(Overrides()), overrides_for(now)))
    # "Pretend it is ..." ends: before, at or after now, or not at all.
    ends = st.timedeltas(min_value=timedelta(hours=-2), max_value=timedelta(hours=26))
    until = data.draw(st.one_of(st.none(), st.just(now), ends.map(lambda d: now + d)))
    overrides = dataclasses.replace(overrides, debug_until=until)
    for spelling in representations(now, schedule, other):
        same_verdict(spelling, schedule, request, overrides)


@PROPERTY
@given(case=near_an_offset_change(), request=REQUESTS, other=ZONES)
def test_around_offset_changes_decides_as_before(
    case: tuple[Schedule, datetime], request: RequestContext, other: tzinfo
) -> None:
    schedule, now = case
    for spelling in representations(now, schedule, other):
        same_verdict(spelling, schedule, request)
    # Walk on through valid_until (each edge, budget step and the change itself).
    moment = now
    for _ in range(12):
        verdict = same_verdict(moment, schedule)
        same_verdict(verdict.valid_until - TICK, schedule)
        moment = verdict.valid_until


@PROPERTY
@given(
    schedule=schedules(),
    now=INSTANTS,
    offsets=st.lists(
        st.timedeltas(min_value=timedelta(hours=-3), max_value=timedelta(hours=3)), max_size=12
    ),
)
def test_moments_in_any_order_decide_as_before(
    schedule: Schedule, now: datetime, offsets: list[timedelta]
) -> None:
    # The day plans keep what they worked out (the last budget step of each
    # night, the instants of edges): later calls, earlier ones and repeats
    # must still get the answer of the first principles.
    for offset in [timedelta(0), *offsets, timedelta(0)]:
        same_verdict(now + offset, schedule)


@pytest.mark.parametrize("curve", list(Curve))
@pytest.mark.parametrize("tiers", [1, 4])
def test_every_budget_step_of_a_night_as_before(curve: Curve, tiers: int) -> None:
    # Walking valid_until through a whole night meets every budget and tier
    # step, each read at its last microsecond, at it and just after it (the
    # remembered step is used only within its plateau, before the step).
    schedule = cn_schedule(curve=curve, tier_texts=tuple(f"tier {n}" for n in range(tiers)))
    moment = local(2026, 9, 29, 22, 59)
    steps = 0
    while moment < local(2026, 9, 30, 3, 1):
        verdict = same_verdict(moment, schedule)
        for probe in (verdict.valid_until - TICK, verdict.valid_until + TICK, moment + TICK):
            same_verdict(probe, schedule)
        moment = verdict.valid_until
        steps += 1
    assert steps > (5 if curve is Curve.STEP else 100)


def test_overlapping_windows_as_before() -> None:
    # Per-weekday nights that overlap the next evening's: two windows wind at once.
    schedule = cn_schedule(
        night=NightTimes(hm("23:00"), hm("03:00"), hm("09:00")),
        weekdays={1: NightTimes(hm("20:00"), hm("08:00"), hm("09:00"))},
        anchors=(Anchor(hm("20:00"), 3000), Anchor(hm("23:00"), 900), Anchor(hm("03:00"), 10)),
    )
    moment = local(2026, 9, 29, 19, 0)
    for _ in range(400):
        verdict = same_verdict(moment, schedule)
        moment = verdict.valid_until
    assert moment > local(2026, 9, 30, 9, 0)


@PROPERTY
@given(
    schedule=schedules(),
    start=INSTANTS,
    length=st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=72)),
    other=ZONES,
    spelling=st.integers(0, 2),
)
def test_segments_as_before(
    schedule: Schedule, start: datetime, length: timedelta, other: tzinfo, spelling: int
) -> None:
    end = start + length
    first = representations(start, schedule, other)[spelling]
    last = representations(end, schedule, other)[spelling]
    assert spelled(segments(first, last, schedule)) == spelled(
        reference_segments(first, last, schedule)
    )


def bands(schedule: Schedule, day: date, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = day_band(schedule, day)
    with monkeypatch.context() as patched:
        patched.setattr(plan_module, "segments", reference_segments)
        before = day_band(schedule, day)
    return fast, before


@pytest.mark.parametrize(("zone", "gap"), [("America/New_York", True), ("Europe/Berlin", False)])
def test_day_bands_of_dst_days_as_before(
    zone: str, gap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    change = next(t for t in transitions(zone, 2026) if t.gap is gap)
    middle = change.middle
    schedule = cn_schedule(
        timezone=ZoneInfo(zone),
        night=NightTimes((middle - 60) % 1440, middle, (middle + 6 * 60) % 1440),
        peak_windows=(((middle - 30) % 1440, (middle + 30) % 1440),),
        weekend_valley=False,
    )
    for offset in (-1, 0, 1):
        day = change.start_wall.date() + timedelta(days=offset)
        fast, before = bands(schedule, day, monkeypatch)
        assert fast == before


def test_day_bands_of_a_year_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    schedule = cn_schedule()
    day = date(2026, 1, 1)
    while day.year == 2026:
        fast, before = bands(schedule, day, monkeypatch)
        assert fast == before, day
        day += timedelta(days=9)


# -- what is kept, counted (not timed) ---------------------------------------------


class CountingHolidays:
    def __init__(self) -> None:
        self.asked = 0

    def holiday_name(self, day: date) -> str | None:
        self.asked += 1
        return None

    def workday_name(self, day: date) -> str | None:
        self.asked += 1
        return None


def test_a_date_is_worked_out_once_per_schedule() -> None:
    calendar = CountingHolidays()
    schedule = Schedule(holidays=calendar)
    decide(local(2026, 9, 29, 20, 0), schedule)
    assert calendar.asked > 0
    calendar.asked = 0
    # On duty, peak, winding and the next edges of the same local date: no
    # holiday lookup again (the day plan holds the day kinds).
    for hour, minute in [(10, 0), (13, 0), (20, 30), (23, 30), (23, 59)]:
        decide(local(2026, 9, 29, hour, minute), schedule)
    assert calendar.asked == 0
    # A new schedule object is a new plan.
    decide(local(2026, 9, 29, 10, 0), Schedule(holidays=calendar))
    assert calendar.asked > 0


def test_a_winding_plateau_finds_its_budget_step_once(monkeypatch: pytest.MonkeyPatch) -> None:
    decide_module = sys.modules["curfew_core.engine.decide"]
    real = decide_module.next_budget_change
    calls: list[float] = []

    def counting(*args: Any) -> float | None:
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(decide_module, "next_budget_change", counting)
    schedule = Schedule()
    first = decide(local(2026, 9, 29, 23, 30), schedule)
    assert len(calls) == 1
    # Later moments of the same budget plateau, before its step: the step is kept.
    for micros in (1, 500, 1_000_000):
        later = decide(local(2026, 9, 29, 23, 30) + timedelta(microseconds=micros), schedule)
        assert (later.budget, later.valid_until) == (first.budget, first.valid_until)
    assert len(calls) == 1
    # Past the step, a new plateau: worked out again.
    after = decide(first.valid_until, schedule)
    assert after.budget != first.budget
    assert len(calls) == 2
