"""Public holidays from the ``holidays`` package (never a hand-kept table),
plus a user's own extra dates, behind the engine's ``HolidayLookup``."""

from __future__ import annotations

import datetime as dt
import functools
import threading

import holidays


@functools.cache
def _supported() -> dict[str, list[str]]:
    return dict(holidays.list_supported_countries())


def canonical(code: str) -> str | None:
    """The package's own spelling of ``"cn"``, ``"US-CA"`` or ``"be-flemish"``, or ``None``.

    Subdivisions are matched without regard to case: most are upper-case
    codes, but some are names (``BE-Flemish``, ``IT-Andria``).
    """
    country, _, subdivision = code.strip().partition("-")
    country = country.upper()
    subdivisions = _supported().get(country)
    if subdivisions is None:
        return None
    if not subdivision:
        return country
    for known in subdivisions:
        if known.casefold() == subdivision.casefold():
            return f"{country}-{known}"
    return None


def is_known(code: str) -> bool:
    """``"CN"`` or a subdivision like ``"US-CA"`` that the package knows."""
    return canonical(code) == code


def known_calendars() -> list[str]:
    return sorted(_supported())


#: One table per (calendar, year), built on first sight of that year and then
#: read without locking: the verdict hot path asks up to three dates a call.
_tables: dict[tuple[str, int], dict[dt.date, str]] = {}
_tables_lock = threading.Lock()


def _table(code: str, year: int) -> dict[dt.date, str]:
    table = _tables.get((code, year))
    if table is None:
        with _tables_lock:
            table = _tables.get((code, year))
            if table is None:
                country, _, subdivision = code.partition("-")
                found = holidays.country_holidays(country, subdiv=subdivision or None, years=year)
                table = {day: str(name) for day, name in found.items()}
                _tables[(code, year)] = table
    return table


class CalendarHolidays:
    """Holiday names for one calendar and a set of extra dates."""

    __slots__ = ("_code", "_extra")

    def __init__(self, code: str | None, extra: tuple[str, ...]) -> None:
        self._code = code
        self._extra = frozenset(dt.date.fromisoformat(day) for day in extra)

    def holiday_name(self, day: dt.date) -> str | None:
        if day in self._extra:
            return "personal holiday"
        if self._code is None:
            return None
        return _table(self._code, day.year).get(day)


def lookup(code: str | None, extra: tuple[str, ...]) -> CalendarHolidays:
    return CalendarHolidays(code, extra)
