"""Public holidays from the ``holidays`` package (never a hand-kept table),
plus a user's own extra dates, behind the engine's ``HolidayLookup``."""

from __future__ import annotations

import datetime as dt
import functools
import threading
from typing import Any

import holidays


@functools.cache
def _supported() -> dict[str, list[str]]:
    return dict(holidays.list_supported_countries())


def is_known(code: str) -> bool:
    """``"CN"`` or a subdivision like ``"US-CA"`` that the package knows."""
    country, _, subdivision = code.partition("-")
    subdivisions = _supported().get(country)
    if subdivisions is None:
        return False
    return not subdivision or subdivision in subdivisions


def known_calendars() -> list[str]:
    return sorted(_supported())


@functools.cache
def _calendar(code: str) -> Any:
    country, _, subdivision = code.partition("-")
    # Years are filled in lazily by the package as dates are asked about.
    return holidays.country_holidays(country, subdiv=subdivision or None)


class CalendarHolidays:
    """Holiday names for one calendar and a set of extra dates."""

    __slots__ = ("_calendar", "_extra", "_lock")

    def __init__(self, code: str | None, extra: tuple[str, ...]) -> None:
        self._calendar = _calendar(code) if code else None
        self._extra = frozenset(dt.date.fromisoformat(day) for day in extra)
        # The package grows its table on first sight of a year; serialise that.
        self._lock = threading.Lock()

    def holiday_name(self, day: dt.date) -> str | None:
        if day in self._extra:
            return "personal holiday"
        if self._calendar is None:
            return None
        with self._lock:
            name = self._calendar.get(day)
        return None if name is None else str(name)


def lookup(code: str | None, extra: tuple[str, ...]) -> CalendarHolidays:
    return CalendarHolidays(code, extra)
