"""Public holidays and make-up workdays (调休) from the ``holidays`` package
(never a hand-kept table), plus a user's own extra holidays and workdays,
behind the engine's ``HolidayLookup``.

The engine's names (in verdict reasons) are in one fixed language,
``REASON_LANGUAGE`` where the calendar has it: the package would otherwise pick
the server's locale from the environment, so a reason would depend on ``LANG``.
Pages show names in the reader's language (``display_name``), only for display:
the engine never sees a language.
"""

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


#: The language of the names the engine sees (``holiday_name``: verdict reasons).
REASON_LANGUAGE = "en_US"

#: Django language codes whose calendar locale is not spelled after the language:
#: Simplified Chinese is mainland China's (then Singapore's), Traditional Taiwan's
#: or Hong Kong's; each falls back to the other script before the calendar's default.
_LOCALE_PREFERENCES = {
    "zh-hans": ("zh_CN", "zh_SG", "zh_TW", "zh_HK"),
    "zh-hant": ("zh_TW", "zh_HK", "zh_CN"),
}


@functools.cache
def _languages(country: str) -> tuple[str | None, tuple[str, ...]]:
    """The calendar's own language and the languages it has names in."""
    entity = holidays.country_holidays(country)
    return entity.default_language, tuple(entity.supported_languages)


def _reason_language(country: str) -> str | None:
    default, supported = _languages(country)
    return REASON_LANGUAGE if REASON_LANGUAGE in supported else default


@functools.cache
def display_language(code: str, language: str | None) -> str | None:
    """The calendar's locale for the Django language ``language`` (``"zh-hans"``,
    ``"en"``): its own spelling, a preferred neighbour (``zh_CN`` then ``zh_TW``
    for ``zh-hans``), the country's variant (``en_GB`` for GB), any variant of
    the language; otherwise the calendar's default language."""
    country = code.partition("-")[0]
    default, supported = _languages(country)
    if not language:
        return default
    wanted = language.lower().replace("_", "-")
    base = wanted.partition("-")[0]
    by_lower = {locale.lower().replace("_", "-"): locale for locale in supported}
    candidates = [
        wanted,
        *(locale.lower().replace("_", "-") for locale in _LOCALE_PREFERENCES.get(wanted, ())),
        base,
        f"{base}-{country.lower()}",
    ]
    for candidate in candidates:
        if candidate in by_lower:
            return by_lower[candidate]
    for locale in supported:
        if locale.lower().partition("_")[0] == base:
            return locale
    return default


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
                found = holidays.country_holidays(
                    country,
                    subdiv=subdivision or None,
                    years=years,
                    language=_reason_language(country),
                )
                table = _Year(
                    names={day: str(name) for day, name in found.items() if day.year == year},
                    workdays=frozenset(
                        day for day in getattr(found, "weekend_workdays", ()) if day.year == year
                    ),
                )
                _tables[(code, year)] = table
    return table


#: Holiday names per (calendar, year, locale) for pages: filled on first sight,
#: like ``_tables``, and never on the verdict's path.
_display: dict[tuple[str, int, str | None], dict[dt.date, str]] = {}


def _display_names(code: str, year: int, locale: str | None) -> dict[dt.date, str]:
    country, _, subdivision = code.partition("-")
    if locale == _reason_language(country):
        return _table(code, year).names
    names = _display.get((code, year, locale))
    if names is None:
        with _tables_lock:
            names = _display.get((code, year, locale))
            if names is None:
                years = (year, year + 1) if year < dt.MAXYEAR else (year,)
                found = holidays.country_holidays(
                    country, subdiv=subdivision or None, years=years, language=locale
                )
                names = {day: str(name) for day, name in found.items() if day.year == year}
                _display[(code, year, locale)] = names
    return names


class CalendarHolidays:
    """Holiday and workday names for one calendar and the user's own dates.

    The user's own dates win over the public calendar's: an extra holiday on a
    public make-up workday is a holiday, and an extra workday on a public
    holiday is a workday (the engine never makes a workday valley). A date in
    both of the user's lists is refused by ``curfew_core.schedules.config``.
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

    def display_name(self, day: dt.date, language: str | None) -> str | None:
        """``holiday_name`` for a reader of the Django language ``language``:
        the calendar's name in that language where it has one (else in its
        default language); ``PERSONAL_HOLIDAY`` for the user's own dates."""
        name = self.holiday_name(day)
        if name is None or name == PERSONAL_HOLIDAY or self._code is None:
            return name
        locale = display_language(self._code, language)
        return _display_names(self._code, day.year, locale).get(day, name)

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
