"""Reads for the settings page: the saved row, the day band and week, tokens.

The band is drawn by ``engine.day_band`` on whatever schedule it is given
(saved or candidate), so the page never has a second copy of a rule: what the
band shows is what gateways get.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.utils import translation
from django.utils.translation import gettext

from curfew_core import models
from curfew_core.engine import Schedule, day_band, format_wall
from curfew_core.engine.clock import to_wall
from curfew_core.models import UNSAVED_VERSION, ApiToken, ScheduleRevision
from curfew_core.schedules import calendars
from curfew_core.schedules import config as schedule_config

#: The band's resolution: 96 cells of 15 minutes of wall-clock time.
CELL_MINUTES = 15
CELLS_PER_DAY = 24 * 60 // CELL_MINUTES


@dataclass(frozen=True, slots=True)
class SavedSchedule:
    config: dict[str, Any]
    version: int


def saved_schedule(user: User) -> SavedSchedule:
    """The user's schedule as stored right now (not the cache: the form's
    version must be the row's, or the stale check would be a guess)."""
    row = models.Schedule.objects.filter(user=user).only("config", "version").first()
    if row is None:
        return SavedSchedule(schedule_config.default_config(), UNSAVED_VERSION)
    return SavedSchedule(schedule_config.with_defaults(row.config), row.version)


def fields_changed_since(user: User, version: int) -> list[str] | None:
    """Settings that differ between ``version`` and the current row (for the
    stale-form message); None when that version is not on record (a form
    without a version, or one older than the records): then nobody can say
    what changed, and a save must not assume that nothing did."""
    row = models.Schedule.objects.filter(user=user).first()
    if row is None:
        return None
    old = ScheduleRevision.objects.filter(schedule=row, version=version).first()
    if old is None:
        return None
    before = schedule_config.with_defaults(old.config)
    after = schedule_config.with_defaults(row.config)
    return [key for key in schedule_config.FIELDS if before.get(key) != after.get(key)]


@dataclass(frozen=True, slots=True)
class BandCell:
    index: int
    start: str
    end: str
    state: str
    peak: bool
    now: bool


@dataclass(frozen=True, slots=True)
class PlanRow:
    start: str
    end: str
    state: str
    peak: bool


@dataclass(frozen=True, slots=True)
class BandDay:
    day: dt.date
    cells: tuple[BandCell, ...]
    plan: tuple[PlanRow, ...]
    #: ``"weekend"`` or ``"holiday: <name>"`` when peak hours are off all day.
    valley: str | None
    #: The holiday's name for the reader (``holiday_display_name``).
    holiday: str | None
    #: ``"make-up workday"`` (调休) or ``"personal workday"``: a weekend or
    #: holiday that keeps its peak hours.
    workday: str | None
    weekend: bool
    today: bool


def holiday_display_name(schedule: Schedule, day: dt.date, language: str | None) -> str | None:
    """The holiday on ``day`` named for a reader of the Django language
    ``language``: the calendar's own name in it where the calendar has one
    (国庆节 on a Chinese page, National Day on an English one), otherwise in
    the calendar's default language; the user's own holidays translated.
    Display only: the engine and its reasons keep the calendar's fixed names."""
    lookup = schedule.holidays
    if isinstance(lookup, calendars.CalendarHolidays):
        name = lookup.display_name(day, language)
    else:
        name = lookup.holiday_name(day)
    if name == calendars.PERSONAL_HOLIDAY:
        return gettext("personal holiday")
    return name


def band_day(
    schedule: Schedule,
    day: dt.date,
    *,
    now: dt.datetime | None = None,
    language: str | None = None,
    team: Schedule | None = None,
) -> BandDay:
    """One local day as 96 quarter-hour cells plus its exact segment plan.

    The engine draws the day (``engine.day_band``: cells, plan, valley
    reasons); this only writes its wall times for the page, marks ``now`` and
    names the holiday in ``language`` (default: the active language).
    With ``team``, a member's day as both schedules draw it (harsher wins).
    """
    band = day_band(schedule, day, CELL_MINUTES, team=team)
    holiday = None
    if band.holiday is not None:
        holiday = holiday_display_name(schedule, day, language or translation.get_language())
    now_cell = None
    if now is not None:
        wall_now = to_wall(now, schedule.timezone)
        if wall_now.date() == day:
            now_cell = (wall_now.hour * 60 + wall_now.minute) // CELL_MINUTES
    return BandDay(
        day=day,
        cells=tuple(
            BandCell(
                index=cell.index,
                start=format_wall(cell.start),
                end=format_wall(cell.end),
                state=cell.state.value,
                peak=cell.peak,
                now=cell.index == now_cell,
            )
            for cell in band.cells
        ),
        plan=tuple(
            PlanRow(
                start=format_wall(seg.start),
                end=format_wall(seg.end),
                state=seg.state.value,
                peak=seg.peak,
            )
            for seg in band.plan
        ),
        valley=band.valley,
        holiday=holiday,
        workday=band.workday,
        weekend=band.weekend,
        today=now_cell is not None,
    )


def week_of(day: dt.date) -> list[dt.date]:
    """Monday to Sunday of the week holding ``day``."""
    monday = day - dt.timedelta(days=day.weekday())
    return [monday + dt.timedelta(days=offset) for offset in range(7)]


def band_week(
    schedule: Schedule,
    day: dt.date,
    *,
    now: dt.datetime | None = None,
    language: str | None = None,
    team: Schedule | None = None,
) -> list[BandDay]:
    """The week holding ``day``, a ``band_day`` each (with ``team``: a member's)."""
    return [
        band_day(schedule, each, now=now, language=language, team=team) for each in week_of(day)
    ]


@dataclass(frozen=True, slots=True)
class TokenRow:
    id: int
    kind: str
    name: str
    prefix: str
    created_at: dt.datetime
    last_used_at: dt.datetime | None


def live_tokens(user: User) -> dict[str, list[TokenRow]]:
    """The user's unrevoked tokens by kind; never the digest, never a raw value."""
    rows: dict[str, list[TokenRow]] = {kind: [] for kind in ApiToken.Kind.values}
    query = ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at")
    for token in query:
        rows[token.kind].append(
            TokenRow(
                id=token.id,
                kind=token.kind,
                name=token.name,
                prefix=token.prefix,
                created_at=token.created_at,
                last_used_at=token.last_used_at,
            )
        )
    return rows


def access_keys(user: User) -> list[TokenRow]:
    """Every live key of the user in one list, newest first: gateways' keys
    and the capsule's read-only ones side by side, so no panel shows half."""
    return sorted(
        (row for rows in live_tokens(user).values() for row in rows),
        key=lambda row: row.created_at,
        reverse=True,
    )


def live_token(user: User, token_id: int) -> TokenRow | None:
    """One live key of the user's, or None (someone else's, revoked, unknown)."""
    return next((row for row in access_keys(user) if row.id == token_id), None)
