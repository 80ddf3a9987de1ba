"""The options the running site knows for two settings: the time zones that
are places, grouped by region, and the countries the holidays package has a
calendar of, each by name in the reader's language."""

from __future__ import annotations

import functools
import zoneinfo
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy

from curfew_core.schedules import calendars

#: The zone database's regions that are places (``Etc/GMT+3``, ``SystemV/...``,
#: ``US/Eastern`` and the bare ``Factory``, ``localtime`` or ``EST5EDT`` are
#: not: links and leftovers a person would never pick), in words.
ZONE_REGIONS: dict[str, Any] = {
    "Africa": gettext_lazy("Africa"),
    "America": gettext_lazy("America"),
    "Antarctica": gettext_lazy("Antarctica"),
    "Arctic": gettext_lazy("Arctic"),
    "Asia": gettext_lazy("Asia"),
    "Atlantic": gettext_lazy("Atlantic"),
    "Australia": gettext_lazy("Australia"),
    "Europe": gettext_lazy("Europe"),
    "Indian": gettext_lazy("Indian Ocean"),
    "Pacific": gettext_lazy("Pacific"),
}


#: The one zone outside a region worth offering: the world's reference clock.
ZONE_UTC = "UTC"


#: Places with a name of their own in the reader's language (上海 on a Chinese
#: page): the zones a Curfew user is likeliest to live in. Every other zone is
#: named by its id's place in Latin script, as before; a full table is CLDR's
#: (babel), not installed, and not worth a dependency for a label.
ZONE_PLACES: dict[str, Any] = {
    name: pgettext_lazy("time zone place", place)
    for name, place in (
        ("Asia/Shanghai", "Shanghai"),
        ("Asia/Urumqi", "Urumqi"),
        ("Asia/Hong_Kong", "Hong Kong"),
        ("Asia/Macau", "Macau"),
        ("Asia/Taipei", "Taipei"),
        ("Asia/Tokyo", "Tokyo"),
        ("Asia/Seoul", "Seoul"),
        ("Asia/Singapore", "Singapore"),
        ("Asia/Kuala_Lumpur", "Kuala Lumpur"),
        ("Asia/Bangkok", "Bangkok"),
        ("Asia/Ho_Chi_Minh", "Ho Chi Minh City"),
        ("Asia/Jakarta", "Jakarta"),
        ("Asia/Manila", "Manila"),
        ("Asia/Kolkata", "Kolkata"),
        ("Asia/Dubai", "Dubai"),
        ("Europe/London", "London"),
        ("Europe/Paris", "Paris"),
        ("Europe/Berlin", "Berlin"),
        ("Europe/Amsterdam", "Amsterdam"),
        ("Europe/Madrid", "Madrid"),
        ("Europe/Rome", "Rome"),
        ("Europe/Zurich", "Zurich"),
        ("Europe/Moscow", "Moscow"),
        ("America/New_York", "New York"),
        ("America/Chicago", "Chicago"),
        ("America/Denver", "Denver"),
        ("America/Los_Angeles", "Los Angeles"),
        ("America/Toronto", "Toronto"),
        ("America/Vancouver", "Vancouver"),
        ("America/Mexico_City", "Mexico City"),
        ("America/Sao_Paulo", "São Paulo"),
        ("Australia/Sydney", "Sydney"),
        ("Australia/Melbourne", "Melbourne"),
        ("Australia/Perth", "Perth"),
        ("Pacific/Auckland", "Auckland"),
        ("Africa/Cairo", "Cairo"),
        ("Africa/Johannesburg", "Johannesburg"),
        ("Africa/Nairobi", "Nairobi"),
    )
}


def zone_label(name: str) -> str:
    """``Buenos Aires (Argentina)`` for ``America/Argentina/Buenos_Aires``,
    ``Shanghai`` for ``Asia/Shanghai`` (上海 on a Chinese page,
    ``ZONE_PLACES``): the place, as the picker names it."""
    named = ZONE_PLACES.get(name)
    if named is not None:
        return str(named)
    parts = name.replace("_", " ").split("/")
    if len(parts) == 1:
        return parts[0]
    if len(parts) > 2:
        return f"{parts[-1]} ({' / '.join(parts[1:-1])})"
    return parts[-1]


@functools.cache
def _zone_names() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name in sorted(zoneinfo.available_timezones()):
        region = name.split("/", 1)[0]
        if "/" in name and region in ZONE_REGIONS:
            groups.setdefault(region, []).append(name)
    return groups


def timezone_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    """The zones that are places, grouped by region (named in the active
    language), each ``(zone id, place)``, places in order; then UTC."""
    groups = [
        (
            str(ZONE_REGIONS[region]),
            sorted(((name, zone_label(name)) for name in names), key=lambda item: item[1]),
        )
        for region, names in sorted(_zone_names().items())
    ]
    groups.append((_("Other"), [(ZONE_UTC, _("UTC (the world's reference clock)"))]))
    return groups


def timezone_offered() -> frozenset[str]:
    return frozenset({ZONE_UTC, *(name for names in _zone_names().values() for name in names)})


#: Country names the package's module names spell poorly once titled.
_COUNTRY_SPELLING = {
    "Hongkong": "Hong Kong",
    "Dr Congo": "DR Congo",
    "Guinea Bissau": "Guinea-Bissau",
    "Timor Leste": "Timor-Leste",
    "Syrian Arab Republic": "Syria",
    "Bonaire Sint Eustatius and Saba": "Bonaire, Sint Eustatius and Saba",
    "Saint Helena Ascension and Tristan Da Cunha": "Saint Helena, Ascension and Tristan da Cunha",
    "Heard Island and Mcdonald Islands": "Heard Island and McDonald Islands",
}


def _country_name(module: str) -> str:
    """``Antigua and Barbuda`` from the package's ``antigua_and_barbuda``: the
    English name, the catalogue's msgid for the Chinese one."""
    name = module.replace("_", " ").title()
    for word in ("And", "Of", "The"):
        name = name.replace(f" {word} ", f" {word.lower()} ")
    return _COUNTRY_SPELLING.get(name, name)


@functools.cache
def _country_names() -> dict[str, str]:
    from holidays.registry import COUNTRIES

    # ``codes``: the class name, the alpha-2 code, the alpha-3 code...
    return {codes[1]: _country_name(module) for module, codes in COUNTRIES.items()}


def calendar_name(code: str) -> str:
    """A holiday calendar by its country's name in the reader's language
    (``中国`` for ``CN``), as the Schedule page's picker names it; a code
    the picker has no name for (a sub-region, ``US-CA``) as it is."""
    name = _country_names().get(code)
    return _(name) if name is not None else code


def calendar_choices() -> list[tuple[str, str]]:
    """``(code, "China")`` for every country the holidays package has a
    calendar of, by name (translated where the catalogue has it), in order.
    Its three-letter codes are the same calendars again: not offered (a
    stored one is still shown, see ``section.with_choices``)."""
    names = _country_names()
    # ``UK`` is the package's second spelling of GB: the registry names GB only.
    offered = [(code, _(names[code])) for code in calendars.known_calendars() if code in names]
    return sorted(offered, key=lambda item: item[1])
