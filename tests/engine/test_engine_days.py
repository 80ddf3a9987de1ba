"""The engine's public rules about local dates: night window, day plan, band.

The settings page, the curve chart and the status capsule draw from these;
each is checked here against ``decide`` itself, on ordinary days, on DST days
in zones with DST, and on a make-up workday.
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from engine_support import cn_schedule, hm, local

from curfew_core.engine import (
    END_OF_DAY,
    NightTimes,
    PlanSegment,
    Schedule,
    State,
    day_band,
    day_plan,
    decide,
    format_wall,
    night_window,
)

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
TUESDAY = date(2026, 9, 15)
MAKE_UP_SATURDAY = date(2026, 10, 10)


def wall(*fields: int) -> datetime:
    """A naive wall-clock reading (what ``night_window`` answers in)."""
    return datetime(*fields)  # noqa: DTZ001


def rows(plan: tuple[PlanSegment, ...]) -> list[tuple[str, str, str, bool]]:
    return [(format_wall(s.start), format_wall(s.end), s.state.value, s.peak) for s in plan]


def dst_schedule(tz: ZoneInfo, curfew_start: str, lights_out: str) -> Schedule:
    night = NightTimes(hm(curfew_start), hm(lights_out), hm("09:00"))
    return Schedule(timezone=tz, night=night, weekend_valley=False)


# -- night_window ---------------------------------------------------------------


def test_night_window_of_an_evening() -> None:
    night = night_window(Schedule(), TUESDAY)
    assert night.start == wall(2026, 9, 15, 23, 0)
    assert night.lights_out == wall(2026, 9, 16, 3, 0)
    assert night.wake_up == wall(2026, 9, 16, 9, 0)
    assert night.minutes == 4 * 60


def test_night_window_after_midnight_belongs_to_its_evening() -> None:
    # 00:30 is before the 09:00 wake-up on the dial: the night starts the next date.
    schedule = Schedule(night=NightTimes(hm("00:30"), hm("02:00"), hm("09:00")))
    night = night_window(schedule, TUESDAY)
    assert night.start == wall(2026, 9, 16, 0, 30)
    assert night.minutes == 90


def test_night_window_uses_the_weekday_times() -> None:
    friday = date(2026, 9, 18)
    schedule = Schedule(weekdays={4: NightTimes(hm("01:00"), hm("04:00"), hm("11:00"))})
    assert night_window(schedule, friday).start == wall(2026, 9, 19, 1, 0)
    assert night_window(schedule, friday).wake_up == wall(2026, 9, 19, 11, 0)
    assert night_window(schedule, TUESDAY).start == wall(2026, 9, 15, 23, 0)


def test_night_window_is_what_decide_reads() -> None:
    schedule = Schedule(weekdays={4: NightTimes(hm("01:00"), hm("04:00"), hm("11:00"))})
    for evening in (TUESDAY, date(2026, 9, 18)):
        night = night_window(schedule, evening)

        def at(wall: datetime, shift: timedelta = timedelta(0)) -> State:
            return decide((wall + shift).replace(tzinfo=schedule.timezone), schedule).state

        assert at(night.start, -timedelta(minutes=1)) is not State.WINDING
        assert at(night.start) is State.WINDING
        assert at(night.lights_out, -timedelta(minutes=1)) is State.WINDING
        assert at(night.lights_out) is State.LIGHTS_OUT
        assert at(night.wake_up, -timedelta(minutes=1)) is State.LIGHTS_OUT
        assert at(night.wake_up) is not State.LIGHTS_OUT


# -- day_plan -------------------------------------------------------------------


def test_day_plan_of_an_ordinary_weekday() -> None:
    assert rows(day_plan(Schedule(), TUESDAY)) == [
        ("00:00", "03:00", "winding", False),
        ("03:00", "09:00", "lights-out", False),
        ("09:00", "12:00", "off-duty", True),
        ("12:00", "14:00", "on-duty", False),
        ("14:00", "18:00", "off-duty", True),
        ("18:00", "23:00", "on-duty", False),
        ("23:00", "24:00", "winding", False),
    ]
    assert day_plan(Schedule(), TUESDAY)[-1].end == END_OF_DAY


def test_day_plan_states_are_decides() -> None:
    schedule = cn_schedule()
    for day in (TUESDAY, MAKE_UP_SATURDAY, date(2026, 10, 11)):
        for segment in day_plan(schedule, day):
            moment = local(day.year, day.month, day.day, *divmod(segment.start, 60))
            verdict = decide(moment, schedule)
            assert (verdict.state, verdict.peak) == (segment.state, segment.peak)


def test_day_plan_of_a_make_up_workday_keeps_the_peak_hours() -> None:
    schedule = cn_schedule()
    saturday = rows(day_plan(schedule, MAKE_UP_SATURDAY))
    assert ("09:00", "12:00", "off-duty", True) in saturday
    # Control group: the Sunday after is a valley day, no peak hours at all.
    sunday = day_plan(schedule, date(2026, 10, 11))
    assert not any(segment.peak for segment in sunday)


def test_day_plan_on_the_new_york_spring_forward_day() -> None:
    # 2026-03-08: 02:00 EST jumps to 03:00 EDT; lights-out at 02:30 never shows
    # on the clock, so winding runs until the clock reads 03:00.
    schedule = dst_schedule(NY, "01:00", "02:30")
    assert rows(day_plan(schedule, date(2026, 3, 8)))[:3] == [
        ("00:00", "01:00", "on-duty", False),
        ("01:00", "03:00", "winding", False),
        ("03:00", "09:00", "lights-out", False),
    ]
    # Control group: the Monday after has no gap.
    assert rows(day_plan(schedule, date(2026, 3, 9)))[1] == ("01:00", "02:30", "winding", False)


def test_day_plan_on_the_berlin_fall_back_day() -> None:
    # 2026-10-25: 03:00 CEST falls back to 02:00 CET; the clock reads 02:00-03:00
    # twice, so the half hour before lights-out comes round again.
    schedule = dst_schedule(BERLIN, "01:30", "02:30")
    assert rows(day_plan(schedule, date(2026, 10, 25)))[:5] == [
        ("00:00", "01:30", "on-duty", False),
        ("01:30", "02:30", "winding", False),
        ("02:30", "02:00", "lights-out", False),
        ("02:00", "02:30", "winding", False),
        ("02:30", "09:00", "lights-out", False),
    ]
    # Control group: the day before reads every wall time once.
    assert rows(day_plan(schedule, date(2026, 10, 24)))[2] == (
        "02:30",
        "09:00",
        "lights-out",
        False,
    )


# -- day_band -------------------------------------------------------------------


def test_day_band_cells_take_the_state_at_their_midpoint() -> None:
    schedule = Schedule(night=NightTimes(hm("23:10"), hm("03:00"), hm("09:00")))
    band = day_band(schedule, TUESDAY, 15)
    assert len(band.cells) == 96
    assert (band.cells[0].start, band.cells[-1].end) == (0, END_OF_DAY)
    by_start = {format_wall(cell.start): cell for cell in band.cells}
    # 23:00-23:15 is mostly before the 23:10 start: on duty; the plan has the exact edge.
    assert by_start["23:00"].state is State.ON_DUTY
    assert by_start["23:15"].state is State.WINDING
    assert by_start["09:00"].state is State.OFF_DUTY
    assert by_start["09:00"].peak
    assert ("18:00", "23:10", "on-duty", False) in rows(band.plan)
    assert band.plan == day_plan(schedule, TUESDAY)


def test_day_band_step_sets_the_cells() -> None:
    band = day_band(Schedule(), TUESDAY, 60)
    assert [cell.start for cell in band.cells] == [hour * 60 for hour in range(24)]
    with pytest.raises(ValueError, match="divide a day"):
        day_band(Schedule(), TUESDAY, 7)
    with pytest.raises(ValueError, match="divide a day"):
        day_band(Schedule(), TUESDAY, 0)


def test_day_band_names_a_make_up_workday_and_a_valley() -> None:
    schedule = cn_schedule()
    saturday = day_band(schedule, MAKE_UP_SATURDAY)
    assert (saturday.valley, saturday.workday, saturday.weekend) == (
        None,
        "make-up workday",
        True,
    )
    assert saturday.cells[10 * 4].state is State.OFF_DUTY  # 10:00, peak hours
    sunday = day_band(schedule, date(2026, 10, 11))
    assert (sunday.valley, sunday.workday) == ("weekend", None)
    assert sunday.cells[10 * 4].state is State.ON_DUTY
    national = day_band(schedule, date(2026, 10, 1))
    assert national.valley == "holiday: National Day"
    assert national.holiday == "National Day"


def test_day_band_has_no_valley_reasons_without_peak_hours() -> None:
    for schedule in (cn_schedule(peak_shift=False), cn_schedule(enabled=False)):
        band = day_band(schedule, MAKE_UP_SATURDAY)
        assert (band.valley, band.workday) == (None, None)
        # The calendar still says what the date is.
        assert band.weekend
    assert day_band(cn_schedule(enabled=False), date(2026, 10, 1)).holiday == "National Day"


def test_day_band_on_the_new_york_fall_back_day() -> None:
    # 2026-11-01: 02:00 EDT falls back to 01:00 EST. Hourly cells are placed by
    # their wall midpoint: the 02:00 cell's is 02:30, the lights-out edge itself.
    schedule = dst_schedule(NY, "01:00", "02:30")
    band = day_band(schedule, date(2026, 11, 1), 60)
    assert [cell.state for cell in band.cells[:4]] == [
        State.ON_DUTY,
        State.WINDING,
        State.LIGHTS_OUT,
        State.LIGHTS_OUT,
    ]
    spring = day_band(schedule, date(2026, 3, 8), 60)
    # Spring forward: the 02:00 cell is a wall hour that never happens; it
    # shows what the clock reads around it (winding until 03:00).
    assert [cell.state for cell in spring.cells[:4]] == [
        State.ON_DUTY,
        State.WINDING,
        State.WINDING,
        State.LIGHTS_OUT,
    ]


# -- per-date frames (decide's memo of what does not depend on the instant) ------


def test_a_new_schedule_on_the_same_date_is_read_afresh() -> None:
    # The memo is per schedule object: a schedule built after an edit (a new
    # object) must not be answered from the frame of the one before.
    moment = local(2026, 9, 15, 10, 0)
    before = cn_schedule()
    assert decide(moment, before).state is State.OFF_DUTY
    after = cn_schedule(peak_shift=False)
    assert decide(moment, after).state is State.ON_DUTY
    later = cn_schedule(peak_windows=((hm("11:00"), hm("12:00")),))
    assert decide(moment, later).state is State.ON_DUTY
    assert decide(moment, before).state is State.OFF_DUTY


def test_the_frame_memo_stays_bounded() -> None:
    # The package's ``decide`` is the function; the module holds the memo.
    decide_module = sys.modules["curfew_core.engine.decide"]
    schedule = Schedule()
    first = date(2000, 1, 1)
    for offset in range(decide_module._FRAME_MEMO_SIZE + 10):
        day = first + timedelta(days=offset)
        decide(local(day.year, day.month, day.day, 12, 0), schedule)
    # ``_frames`` is an ``lru_cache`` (issue 40): dropped one at a time.
    assert decide_module._frames.cache_info().currsize <= decide_module._FRAME_MEMO_SIZE
