"""Public holidays and make-up workdays (调休) from the ``holidays`` package
(never a hand-kept table), plus a user's own extra holidays and workdays,
behind the engine's ``HolidayLookup``."""

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


def known_calendars() -> list[str]:
    return sorted(_supported())


#: What a workday is called in verdict reasons (the page translates the label).
MAKE_UP_WORKDAY = "make-up workday"
PERSONAL_WORKDAY = "personal workday"
PERSONAL_HOLIDAY = "personal holiday"


class _Year:
    """One calendar's holidays (by name) and make-up workdays in one year."""

    __slots__ = ("names", "workdays")

    def __init__(self, names: dict[dt.date, str], workdays: frozenset[dt.date]) -> None:
        self.names = names
        self.workdays = workdays


#: One table per (calendar, year), built on first sight of that year and then
#: read without locking: the verdict hot path asks up to three dates a call.
_tables: dict[tuple[str, int], _Year] = {}
_tables_lock = threading.Lock()


def _table(code: str, year: int) -> _Year:
    table = _tables.get((code, year))
    if table is None:
        with _tables_lock:
            table = _tables.get((code, year))
            if table is None:
                country, _, subdivision = code.partition("-")
                # The next year too: a make-up workday in late December may
                # serve the next New Year, and the package lists it there.
                years = (year, year + 1) if year < dt.MAXYEAR else (year,)
                found = holidays.country_holidays(country, subdiv=subdivision or None, years=years)
                table = _Year(
                    names={day: str(name) for day, name in found.items() if day.year == year},
                    workdays=frozenset(
                        day for day in getattr(found, "weekend_workdays", ()) if day.year == year
                    ),
                )
                _tables[(code, year)] = table
    return table


class CalendarHolidays:
    """Holiday and workday names for one calendar and the user's own dates.

    The user's own dates win over the public calendar's: an extra holiday on a
    public make-up workday is a holiday, and an extra workday on a public
    holiday is a workday (the engine never makes a workday valley). A date in
    both of the user's lists is refused by ``curfew_core.schedule_config``.
    """

    __slots__ = ("_code", "_extra", "_workdays")

    def __init__(self, code: str | None, extra: tuple[str, ...], workdays: tuple[str, ...]) -> None:
        self._code = code
        self._extra = frozenset(dt.date.fromisoformat(day) for day in extra)
        self._workdays = frozenset(dt.date.fromisoformat(day) for day in workdays)

    def holiday_name(self, day: dt.date) -> str | None:
        if day in self._extra:
            return PERSONAL_HOLIDAY
        if self._code is None:
            return None
        return _table(self._code, day.year).names.get(day)

    def workday_name(self, day: dt.date) -> str | None:
        if day in self._workdays:
            return PERSONAL_WORKDAY
        if self._code is None or day in self._extra:
            return None
        return MAKE_UP_WORKDAY if day in _table(self._code, day.year).workdays else None


def lookup(
    code: str | None, extra: tuple[str, ...], workdays: tuple[str, ...] = ()
) -> CalendarHolidays:
    return CalendarHolidays(code, extra, workdays)
