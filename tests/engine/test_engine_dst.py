"""DST days: gaps and repeated hours, including half-hour and midnight shifts.

The schedule is wall clock in its zone: at every real instant the verdict is
what the wall clock reads then (checked against a twin schedule in UTC read at
that wall time), it never raises, and ``valid_until`` always moves forward.
The curfew, lights-out, wake-up and a peak edge are placed inside the gap or
the repeated stretch itself.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from engine_support import TICK, Transition, decision, hm, transitions

from curfew_core.engine import (
    Anchor,
    NightTimes,
    Overrides,
    Schedule,
    Segment,
    State,
    Verdict,
    decide,
    parse_debug_moment,
    segments,
)

DAY = 24 * 60


def transition(zone: str, gap: bool) -> Transition:
    return next(t for t in transitions(zone, 2026) if t.gap == gap)


ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",  # half-hour shift
    "America/Santiago",  # shifts at midnight
    "Asia/Beirut",  # shifts at midnight
]
CASES = [
    pytest.param(zone, gap, id=f"{zone}-{'gap' if gap else 'repeat'}")
    for zone in ZONES
    for gap in (True, False)
]
PLACEMENTS = ["wake_up", "lights_out", "curfew_start", "peak"]


def schedule_for(t: Transition, placement: str) -> Schedule:
    """A schedule with one of its edges at a wall minute inside the transition."""
    m = t.middle

    def at(offset: int) -> int:
        return (m + offset) % DAY

    if placement == "wake_up":
        night = NightTimes(at(-180), at(-90), m)
    elif placement == "lights_out":
        night = NightTimes(at(-90), m, at(240))
    elif placement == "curfew_start":
        night = NightTimes(m, at(120), at(360))
    else:
        night = NightTimes(at(-600), at(-500), at(-400))
    span = night.winding_minutes
    # Few tokens, so that stepping through a night takes a few hundred verdicts.
    anchors = (
        Anchor(night.curfew_start, 300),
        Anchor((night.curfew_start + span // 3) % DAY, 150),
        Anchor(night.lights_out, 20),
    )
    peaks = ((m, at(120)),) if placement == "peak" else ((at(300), at(330)),)
    return Schedule(
        timezone=t.tz,
        night=night,
        anchors=anchors,
        peak_windows=peaks,
        weekend_valley=False,  # transitions fall on weekends: keep the peak gate live
    )


def twin_of(schedule: Schedule) -> Schedule:
    return dataclasses.replace(schedule, timezone=UTC)


def wall_reading(verdict: Verdict) -> tuple[object, ...]:
    return (verdict.state, verdict.peak, verdict.budget, verdict.persona, verdict.reply)


def check_instant(
    now: datetime, schedule: Schedule, twin: Schedule, *, spellings: bool = True
) -> Verdict:
    verdict = decide(now, schedule)
    assert verdict.valid_until > now
    # Wall-clock semantics: the same as a zone without DST showing that wall time.
    wall = now.astimezone(schedule.timezone).replace(tzinfo=None)
    assert wall_reading(verdict) == wall_reading(decide(wall.replace(tzinfo=UTC), twin)), now
    if not spellings:
        return verdict
    # Written in the schedule's own zone (fold and all) it is the same instant.
    local = decide(now.astimezone(schedule.timezone), schedule)
    assert decision(local) == decision(verdict), now
    # (``==`` across zones is always False inside a repeated hour: compare in UTC.)
    assert local.valid_until.astimezone(UTC) == verdict.valid_until.astimezone(UTC), now
    return verdict


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize(("zone", "gap"), CASES)
def test_minute_by_minute_through_the_transition(zone: str, gap: bool, placement: str) -> None:
    t = transition(zone, gap)
    schedule = schedule_for(t, placement)
    twin = twin_of(schedule)
    start = t.instant - timedelta(hours=12)
    for minute in range(24 * 60):
        now = start + timedelta(minutes=minute)
        # Every minute: never raises, valid_until ahead. The wall-clock twin and
        # the zone-local spelling densely near the jump only (speed).
        distance = abs(now - t.instant)
        if distance > timedelta(hours=6) and minute % 10:
            assert decide(now, schedule).valid_until > now
            continue
        spellings = distance <= timedelta(minutes=90) or minute % 20 == 0
        check_instant(now, schedule, twin, spellings=spellings)
    # Both sides of the jump itself.
    check_instant(t.instant - TICK, schedule, twin)
    check_instant(t.instant, schedule, twin)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize(("zone", "gap"), CASES)
def test_stepping_to_valid_until_through_the_transition(
    zone: str, gap: bool, placement: str
) -> None:
    t = transition(zone, gap)
    schedule = schedule_for(t, placement)
    now = t.instant - timedelta(hours=20)
    end = t.instant + timedelta(hours=20)
    crossed = False
    while now < end:
        verdict = decide(now, schedule)
        assert verdict.valid_until > now
        assert decision(decide(verdict.valid_until - TICK, schedule)) == decision(verdict), now
        crossed = crossed or now <= t.instant < verdict.valid_until or now == t.instant
        now = verdict.valid_until
    assert crossed


def as_utc(part: Segment) -> tuple[object, ...]:
    return (part.start.astimezone(UTC), part.end.astimezone(UTC), part.state, part.peak)


@pytest.mark.parametrize(("zone", "gap"), CASES)
def test_segments_of_the_transition_day_agree_with_decide(zone: str, gap: bool) -> None:
    t = transition(zone, gap)
    for placement in PLACEMENTS:
        schedule = schedule_for(t, placement)
        start, end = t.instant - timedelta(hours=14), t.instant + timedelta(hours=14)
        in_utc = segments(start, end, schedule)
        # The day-plan way: bounds written in the schedule's own zone.
        in_zone = segments(start.astimezone(t.tz), end.astimezone(t.tz), schedule)
        assert [as_utc(s) for s in in_zone] == [as_utc(s) for s in in_utc]
        for part in in_utc:
            for probe in (part.start, part.end - TICK):
                assert decide(probe, schedule).schedule_state is part.state, (placement, probe)


# -- what the states look like, spelled out -------------------------------------------

NY = ZoneInfo("America/New_York")


def ny(*args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=NY, fold=fold)  # type: ignore[misc]


def test_wake_up_inside_a_gap_still_wakes_up() -> None:
    # 2026-03-08: 02:00 EST jumps to 03:00 EDT; wake-up 02:30 never shows on the clock.
    schedule = Schedule(
        timezone=NY, night=NightTimes(hm("23:00"), hm("01:00"), hm("02:30")), peak_shift=False
    )
    before = decide(ny(2026, 3, 8, 1, 59), schedule)
    assert before.state is State.LIGHTS_OUT
    # The next change is the jump itself (07:00 UTC), not an hour later.
    assert before.valid_until == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    assert decide(ny(2026, 3, 8, 3, 0), schedule).state is State.ON_DUTY


def test_lights_out_inside_a_gap_falls_at_the_jump() -> None:
    schedule = Schedule(
        timezone=NY, night=NightTimes(hm("00:00"), hm("02:30"), hm("09:00")), peak_shift=False
    )
    assert decide(ny(2026, 3, 8, 1, 59), schedule).state is State.WINDING
    assert decide(ny(2026, 3, 8, 3, 0), schedule).state is State.LIGHTS_OUT


def test_curfew_inside_a_gap_starts_part_way_through_the_curve() -> None:
    schedule = Schedule(
        timezone=NY,
        night=NightTimes(hm("02:15"), hm("04:15"), hm("09:00")),
        anchors=(Anchor(hm("02:15"), 1200), Anchor(hm("04:15"), 0)),
        peak_shift=False,
    )
    assert decide(ny(2026, 3, 8, 1, 59), schedule).state is State.ON_DUTY
    at_jump = decide(ny(2026, 3, 8, 3, 0), schedule)
    assert at_jump.state is State.WINDING
    # 03:00 on the wall is 45 of the window's 120 wall minutes in: 1200 * 75/120.
    assert at_jump.budget == 750


def test_repeated_hour_is_read_on_the_wall_clock() -> None:
    # 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:00-02:00 shows twice.
    schedule = Schedule(
        timezone=NY,
        night=NightTimes(hm("23:00"), hm("01:30"), hm("09:00")),
        anchors=(Anchor(hm("23:00"), 500),),  # a flat budget: no steps to wait for
        peak_shift=False,
    )
    first = decide(ny(2026, 11, 1, 1, 45), schedule)
    assert first.state is State.LIGHTS_OUT
    # The clock going back is a change of reading: valid_until stops there.
    assert first.valid_until.astimezone(UTC) == datetime(2026, 11, 1, 6, 0, tzinfo=UTC)
    second = decide(ny(2026, 11, 1, 1, 15, fold=1), schedule)
    assert second.state is State.WINDING  # the clock reads 01:15 again
    assert second.valid_until.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    assert decide(ny(2026, 11, 1, 1, 45, fold=1), schedule).state is State.LIGHTS_OUT


def test_repeated_hour_in_the_zone_itself_is_the_real_instant() -> None:
    # The second 01:45 (EST, fold=1) is an hour after the first one.
    schedule = Schedule(
        timezone=NY, night=NightTimes(hm("23:00"), hm("01:30"), hm("09:00")), peak_shift=False
    )
    first = decide(ny(2026, 11, 1, 1, 45), schedule)
    assert first.valid_until.astimezone(UTC) == datetime(2026, 11, 1, 6, 0, tzinfo=UTC)
    second = decide(ny(2026, 11, 1, 1, 45, fold=1), schedule)
    assert second.state is State.LIGHTS_OUT
    assert second.valid_until.astimezone(UTC) == datetime(2026, 11, 1, 14, 0, tzinfo=UTC)


# -- the time machine's HH:MM on DST days -----------------------------------------------


def test_debug_hh_mm_in_the_repeated_hour_is_the_next_reading() -> None:
    # 01:10 EDT (first pass): the clock reads 01:05 again at 01:05 EST, 55 minutes on.
    first_pass = ny(2026, 11, 1, 1, 10)
    got = parse_debug_moment("01:05", now=first_pass, tz=NY)
    assert got.astimezone(UTC) == datetime(2026, 11, 1, 6, 5, tzinfo=UTC)
    # 01:10 EST (second pass): 01:30 next reads at 01:30 EST, not the EDT one behind us.
    second_pass = ny(2026, 11, 1, 1, 10, fold=1)
    got = parse_debug_moment("01:30", now=second_pass, tz=NY)
    assert got.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    # Same minute still counts as "now", in either pass.
    got = parse_debug_moment("01:10", now=second_pass.replace(second=30), tz=NY)
    assert got.astimezone(UTC) == datetime(2026, 11, 1, 6, 10, tzinfo=UTC)


def test_debug_hh_mm_in_a_gap_is_the_next_day_that_shows_it() -> None:
    # 2026-03-08 02:30 never shows in New York; the next 02:30 is on the 9th.
    got = parse_debug_moment("02:30", now=ny(2026, 3, 8, 0, 30), tz=NY)
    assert got.astimezone(UTC) == datetime(2026, 3, 9, 6, 30, tzinfo=UTC)
    assert got.replace(tzinfo=None) == datetime(2026, 3, 9, 2, 30)  # noqa: DTZ001
    # The time machine reads the schedule there: Sunday night's 02:30, winding.
    overrides = Overrides(debug_at=got)
    verdict = decide(ny(2026, 3, 8, 0, 30), Schedule(timezone=NY), overrides=overrides)
    assert verdict.state is State.WINDING
    assert verdict.budget == 192  # half-way from 320 (02:00) to 64 (03:00)


def test_debug_hh_mm_is_never_in_the_past() -> None:
    zone = ZoneInfo("Australia/Lord_Howe")
    for t in transitions("Australia/Lord_Howe", 2026):
        for minutes in range(-180, 180, 7):
            now = t.instant + timedelta(minutes=minutes, seconds=13)
            for text in ("01:00", "01:40", "01:59", "02:00", "02:15", "02:30", "03:00"):
                got = parse_debug_moment(text, now=now, tz=zone)
                # Never before the current minute, and it reads as asked.
                minute_start = now - timedelta(seconds=13)
                assert got.astimezone(UTC) >= minute_start, (now, text)
                assert got.astimezone(UTC).astimezone(zone).strftime("%H:%M") == text, (now, text)
