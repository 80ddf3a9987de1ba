"""Make-up workdays (调休): a weekend or holiday date the calendar says is worked.

China moves weekend days to workdays around its holidays; 2026's are 01-04,
02-14, 02-28, 05-09, 09-20 and 10-10 (all Saturdays or Sundays). On them the
weekday peak hours apply. The engine's rule: a date is valley all day if it is
a weekend (with ``weekend_valley``) or a holiday, and the lookup does not name
it a workday. Which of a user's and the public calendar's dates wins is the
lookup's business (see ``curfew_core.schedules.calendars``); the engine only asks.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from engine_support import TICK, CNHolidays, cn_schedule, decision, hm, local

from curfew_core.engine import NoHolidays, Schedule, State, day_kind, decide, segments

MAKE_UP_2026 = [
    (2026, 1, 4),
    (2026, 2, 14),
    (2026, 2, 28),
    (2026, 5, 9),
    (2026, 9, 20),
    (2026, 10, 10),
]


class Dates:
    """A lookup from two explicit tables, to state the engine's rule alone."""

    def __init__(self, holidays: dict[date, str], workdays: dict[date, str]) -> None:
        self.holidays, self.workdays = holidays, workdays

    def holiday_name(self, day: date) -> str | None:
        return self.holidays.get(day)

    def workday_name(self, day: date) -> str | None:
        return self.workdays.get(day)


@pytest.mark.parametrize("ymd", MAKE_UP_2026, ids=lambda d: date(*d).isoformat())
def test_make_up_workdays_have_the_weekday_peak_hours(ymd: tuple[int, int, int]) -> None:
    assert date(*ymd).weekday() >= 5  # every one is a Saturday or a Sunday
    schedule = cn_schedule()
    peak = decide(local(*ymd, 10, 0), schedule)
    assert peak.state is State.OFF_DUTY
    assert peak.peak
    assert "make-up workday" in peak.reason
    assert decide(local(*ymd, 12, 30), schedule).state is State.ON_DUTY  # the lunch valley
    assert decide(local(*ymd, 15, 0), schedule).state is State.OFF_DUTY


def test_the_weekend_around_a_make_up_day_stays_valley() -> None:
    # Control group: the same hour on the Sunday after 2026-10-10 and the Saturday before.
    schedule = cn_schedule()
    assert decide(local(2026, 10, 11, 10, 0), schedule).state is State.ON_DUTY
    assert decide(local(2026, 10, 3, 10, 0), schedule).state is State.ON_DUTY  # National Day
    assert decide(local(2026, 10, 17, 10, 0), schedule).state is State.ON_DUTY


def test_a_lookup_without_workdays_keeps_the_weekend_valley() -> None:
    # The same Saturday with a lookup that knows the holidays but no workdays.
    holidays_only = Dates({date(2026, 10, 1): "National Day"}, {})
    assert decide(local(2026, 10, 10, 10, 0), Schedule(holidays=holidays_only)).peak is False
    assert decide(local(2026, 10, 10, 10, 0), Schedule(holidays=NoHolidays())).peak is False


def test_a_workday_beats_a_holiday_in_the_engine() -> None:
    national = date(2026, 10, 1)
    worked = Schedule(holidays=Dates({national: "National Day"}, {national: "personal workday"}))
    rested = Schedule(holidays=Dates({national: "National Day"}, {}))
    assert decide(local(2026, 10, 1, 10, 0), worked).state is State.OFF_DUTY
    assert decide(local(2026, 10, 1, 10, 0), rested).state is State.ON_DUTY


def test_a_workday_on_an_ordinary_weekday_changes_nothing() -> None:
    tuesday = date(2026, 9, 29)
    plain = Schedule(holidays=NoHolidays())
    marked = Schedule(holidays=Dates({}, {tuesday: "personal workday"}))
    for minute in range(0, 24 * 60, 30):
        moment = local(2026, 9, 29) + timedelta(minutes=minute)
        assert decision(decide(moment, marked)) == decision(decide(moment, plain))
    assert day_kind(marked, tuesday) == (None, None)


def test_workdays_do_nothing_without_weekend_valley_or_peak_shift() -> None:
    saturday = local(2026, 10, 10, 10, 0)
    # Without weekend valley every Saturday already has its peak hours.
    assert decide(saturday, cn_schedule(weekend_valley=False)).state is State.OFF_DUTY
    assert decide(local(2026, 10, 17, 10, 0), cn_schedule(weekend_valley=False)).peak
    assert day_kind(cn_schedule(weekend_valley=False), date(2026, 10, 10)) == (None, None)
    # Without the peak shift no day has peak hours.
    assert decide(saturday, cn_schedule(peak_shift=False)).state is State.ON_DUTY


def test_day_kind_names_the_valley_or_the_workday() -> None:
    schedule = cn_schedule()
    assert day_kind(schedule, date(2026, 10, 10)) == (None, "make-up workday")
    assert day_kind(schedule, date(2026, 10, 11)) == ("weekend", None)
    assert day_kind(schedule, date(2026, 10, 1)) == ("holiday: National Day", None)
    assert day_kind(schedule, date(2026, 10, 9)) == (None, None)


def test_a_peak_window_wraps_from_a_make_up_saturday_into_sunday() -> None:
    # The window belongs to the day it starts on: Saturday 10-10 is worked, so
    # its 22:00-02:00 window runs into Sunday; Sunday's own window does not exist.
    schedule = cn_schedule(peak_windows=((hm("22:00"), hm("02:00")),))
    assert decide(local(2026, 10, 10, 22, 30), schedule).state is State.OFF_DUTY
    assert decide(local(2026, 10, 11, 1, 30), schedule).state is State.OFF_DUTY
    assert decide(local(2026, 10, 11, 22, 30), schedule).state is State.ON_DUTY
    # Control: the Saturday a week later is a weekend valley.
    assert decide(local(2026, 10, 17, 22, 30), schedule).state is State.ON_DUTY


def test_valid_until_is_exact_across_a_make_up_day() -> None:
    # Friday evening to Sunday noon: every verdict holds to its valid_until and
    # changes right then, with Saturday's peak edges in the walk.
    schedule = cn_schedule()
    now, end, edges = local(2026, 10, 9, 20, 0), local(2026, 10, 11, 12, 0), []
    while now < end:
        verdict = decide(now, schedule)
        assert decision(decide(verdict.valid_until - TICK, schedule)) == decision(verdict)
        assert decision(decide(verdict.valid_until, schedule)) != decision(verdict)
        if verdict.state is not decide(verdict.valid_until, schedule).state:
            edges.append(verdict.valid_until)
        now = verdict.valid_until
    # Lights-out runs straight into peak, then the weekday's peak edges.
    assert decide(local(2026, 10, 10, 9, 0), schedule).state is State.OFF_DUTY
    for edge in ((9, 0), (12, 0), (14, 0), (18, 0)):
        assert local(2026, 10, 10, *edge) in edges
    # Sunday is a weekend: lights-out and wake-up are its only edges before noon.
    sunday = [e for e in edges if local(2026, 10, 11) <= e < end]
    assert sunday == [local(2026, 10, 11, 3, 0), local(2026, 10, 11, 9, 0)]


def test_segments_show_the_make_up_day_as_a_weekday() -> None:
    schedule = cn_schedule()
    saturday = segments(local(2026, 10, 10), local(2026, 10, 11), schedule)
    friday = segments(local(2026, 10, 9), local(2026, 10, 10), schedule)
    shape = [(s.start.time(), s.end.time(), s.state, s.peak) for s in saturday]
    assert shape == [(s.start.time(), s.end.time(), s.state, s.peak) for s in friday]


def test_the_lookup_decides_between_the_users_dates_and_the_public_ones() -> None:
    # engine_support's adapter in miniature, like the app's: the user's own
    # holiday wins over a public make-up workday, the user's own workday over a
    # public holiday.
    saturday, national = date(2026, 10, 10), date(2026, 10, 1)
    mine = cn_schedule(holidays=CNHolidays(extra=[saturday], workdays=[national]))
    assert decide(local(2026, 10, 10, 10, 0), mine).state is State.ON_DUTY
    assert decide(local(2026, 10, 1, 10, 0), mine).state is State.OFF_DUTY
    assert day_kind(mine, national) == (None, "personal workday")
    assert day_kind(mine, saturday) == ("holiday: personal holiday", None)
