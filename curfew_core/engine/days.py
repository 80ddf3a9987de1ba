"""What a local date is: its night window and whether it is a valley day.

These are the schedule's rules about dates, apart from any instant: ``decide``
reads them, and so do the day plan, the band and the curve chart, so none of
them keeps a second copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from curfew_core.engine.clock import wall_midnight
from curfew_core.engine.schedule import Schedule


@dataclass(frozen=True, slots=True)
class Night:
    """The night that starts on one evening, as naive local wall times.

    Winding runs from ``start`` to ``lights_out``, lights-out from there to
    ``wake_up``. A curfew start after midnight (``starts_next_day``) puts
    ``start`` on the next calendar date; the night still belongs to its evening.
    """

    start: datetime
    lights_out: datetime
    wake_up: datetime

    @property
    def minutes(self) -> int:
        """Length of the winding window in whole minutes."""
        return int((self.lights_out - self.start).total_seconds() // 60)


def night_window(schedule: Schedule, evening: date) -> Night:
    """The night whose evening is the local date ``evening`` (that weekday's times)."""
    night = schedule.night_for(evening.weekday())
    start = wall_midnight(evening) + timedelta(
        days=1 if night.starts_next_day else 0, minutes=night.curfew_start
    )
    lights_out = start + timedelta(minutes=night.winding_minutes)
    return Night(start, lights_out, lights_out + timedelta(minutes=night.dark_minutes))


def day_kind(schedule: Schedule, day: date) -> tuple[str | None, str | None]:
    """``(valley, workday)`` for a local date, whatever ``peak_shift`` says.

    ``valley`` is why peak hours are off all day (``"weekend"``,
    ``"holiday: <name>"``). ``workday`` names the workday (``"make-up
    workday"``) that keeps them on although the date is a weekend or holiday:
    a date is valley if it is a weekend or a holiday and not a workday.
    """
    lookup = schedule.holidays
    holiday = lookup.holiday_name(day)
    weekend = schedule.weekend_valley and day.weekday() >= 5
    if holiday is None and not weekend:
        return None, None
    workday = lookup.workday_name(day)
    if workday is not None:
        return None, workday
    return (f"holiday: {holiday}" if holiday is not None else "weekend"), None
