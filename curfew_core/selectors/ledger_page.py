"""Reads for the Activity section's ledger: the chosen period in the user's
local days, the hourly totals to chart, the sessions to filter by, the recent
decisions on the user's clock, and the rows of the CSV export.

What was saved is not computed here: the page asks
``selectors.ledger.savings_between`` (``curfew_core.ledger.savings``), the one
arithmetic the API uses too.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, Q

from curfew_core import schedule_config
from curfew_core.models import Decision, DecisionHour

#: The periods the page offers, in local days (today included).
PERIODS = (7, 30)
#: The most sessions the filter offers (the most recently active first).
MAX_SESSIONS = 50
#: Rows the export reads per query (keyset pages: no OFFSET scan).
EXPORT_CHUNK = 1_000


def zone_of(tz_name: str | None) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(tz_name or schedule_config.DEFAULTS["timezone"])
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo(schedule_config.DEFAULTS["timezone"])


@dataclass(frozen=True, slots=True)
class Period:
    """The last ``days`` local days, today included: ``[since, until)`` in UTC
    from the local midnight ``days - 1`` days ago to the next local midnight."""

    days: int
    first_day: dt.date
    last_day: dt.date
    since: dt.datetime
    until: dt.datetime
    zone: zoneinfo.ZoneInfo


def _local_midnight(day: dt.date, zone: zoneinfo.ZoneInfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(0), tzinfo=zone).astimezone(dt.UTC)


def period_of(days: int, *, now: dt.datetime, tz_name: str | None) -> Period:
    zone = zone_of(tz_name)
    today = now.astimezone(zone).date()
    first = today - dt.timedelta(days=days - 1)
    return Period(
        days=days,
        first_day=first,
        last_day=today,
        since=_local_midnight(first, zone),
        until=_local_midnight(today + dt.timedelta(days=1), zone),
        zone=zone,
    )


@dataclass(frozen=True, slots=True)
class ChartCell:
    """One hourly aggregate as the chart draws it: its local day and hour."""

    local_date: dt.date
    local_hour: int
    state: str
    action: str
    count: int
    #: Of ``count``, decided in a dry run (nothing was done).
    dry_run: int = 0


def chart_cells(*, user_id: int, period: Period) -> list[ChartCell]:
    """The user's hourly totals in ``period``, oldest first."""
    rows = (
        DecisionHour.objects.filter(
            user_id=user_id, hour_start__gte=period.since, hour_start__lt=period.until
        )
        .order_by("hour_start", "state", "action")
        .values_list("local_date", "local_hour", "state", "action", "count", "dry_run")
    )
    return [ChartCell(*row) for row in rows]


def session_choices(*, user_id: int, period: Period) -> list[str]:
    """Sessions with a decision in ``period``, the most recently active first."""
    rows = (
        Decision.objects.filter(user_id=user_id, at__gte=period.since, at__lt=period.until)
        .exclude(session="")
        .values("session")
        .annotate(last=Max("at"))
        .order_by("-last")
        .values_list("session", flat=True)[:MAX_SESSIONS]
    )
    return list(rows)


@dataclass(frozen=True, slots=True)
class DecisionLine:
    """One decision as a person reads it (the time on their clock)."""

    id: int
    at: dt.datetime
    session: str
    purpose: str
    state: str
    action: str
    reason: str
    budget_before: int | None
    budget_after: int | None
    door: str
    exempt: bool
    dry_run: bool
    input_tokens: int | None
    output_tokens: int | None


_LINE_FIELDS = (
    "id",
    "at",
    "session",
    "purpose",
    "state",
    "action",
    "reason",
    "budget_before",
    "budget_after",
    "door",
    "exempt",
    "dry_run",
    "input_tokens",
    "output_tokens",
)


def _filtered(*, user_id: int, period: Period, session: str | None, action: str | None) -> Any:
    rows = Decision.objects.filter(user_id=user_id, at__gte=period.since, at__lt=period.until)
    if session:
        rows = rows.filter(session=session)
    if action:
        rows = rows.filter(action=action)
    return rows


def _line(values: tuple[Any, ...], zone: zoneinfo.ZoneInfo) -> DecisionLine:
    row_id, at, *rest = values
    return DecisionLine(row_id, at.astimezone(zone), *rest)


@dataclass(frozen=True, slots=True)
class LinePage:
    lines: list[DecisionLine]
    page: int
    #: The next page's number, or None on the last page.
    next_page: int | None


def recent_decisions(
    *,
    user_id: int,
    period: Period,
    session: str | None = None,
    action: str | None = None,
    page: int = 1,
    per_page: int = 25,
) -> LinePage:
    """The user's decisions in ``period`` (and filter), newest first."""
    first = (page - 1) * per_page
    found = list(
        _filtered(user_id=user_id, period=period, session=session, action=action)
        .order_by("-at", "-id")
        .values_list(*_LINE_FIELDS)[first : first + per_page + 1]
    )
    return LinePage(
        lines=[_line(row, period.zone) for row in found[:per_page]],
        page=page,
        next_page=page + 1 if len(found) > per_page else None,
    )


def export_chunk(
    *,
    user_id: int,
    period: Period,
    session: str | None = None,
    action: str | None = None,
    after: tuple[dt.datetime, int] | None = None,
    size: int = EXPORT_CHUNK,
) -> list[DecisionLine]:
    """The next ``size`` decisions for the export, newest first, after the
    row ``after`` (its ``at`` and id) of the previous chunk: a keyset page, so
    a long export never rescans what it has sent."""
    rows = _filtered(user_id=user_id, period=period, session=session, action=action)
    if after is not None:
        at, row_id = after
        rows = rows.filter(Q(at__lt=at) | Q(at=at, id__lt=row_id))
    found = rows.order_by("-at", "-id").values_list(*_LINE_FIELDS)[:size]
    return [_line(row, period.zone) for row in found]
