"""Reads for the Activity section's ledger: the chosen period in the user's
local days, the hourly totals to chart, the sessions to filter by, the recent
decisions on the user's clock, and the rows of the CSV export.

What was saved is not computed here: the page hands the hours it read to
``selectors.ledger.savings_of`` (``curfew_core.ledger.savings``), the one
arithmetic the API uses too.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from django.db.models import (
    BigIntegerField,
    BooleanField,
    Case,
    CharField,
    Count,
    DateTimeField,
    Expression,
    F,
    Max,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest, Trunc

from curfew_core.ledger.hours import local_hour
from curfew_core.ledger.savings import OFF_STATES, REFUSED, Bucket, held_minutes
from curfew_core.ledger.why import led_by_state, own_side_marked
from curfew_core.models import Decision, DecisionHour
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.ledger import BUCKET_SUMS, of_session

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


def period_before(period: Period) -> Period:
    """The ``period.days`` local days just before ``period`` (the week before)."""
    last = period.first_day - dt.timedelta(days=1)
    first = last - dt.timedelta(days=period.days - 1)
    return Period(
        days=period.days,
        first_day=first,
        last_day=last,
        since=_local_midnight(first, period.zone),
        until=period.since,
        zone=period.zone,
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


@dataclass(frozen=True, slots=True)
class Hours:
    """The hourly totals the Activity card draws and adds up: the chart's
    cells and the buckets the savings arithmetic reads, for one filter."""

    cells: list[ChartCell]
    buckets: list[Bucket]
    #: Read from the raw decisions (a session filter): only as far back as they are kept.
    from_decisions: bool


def hours(*, user_id: int, period: Period, session: str | None = None) -> Hours:
    """The user's hourly totals in ``period``, oldest first, of every session or one.

    Without a session they are the stored aggregates (kept indefinitely). The
    aggregates have no session, so for one session they are summed here from
    its raw decisions, grouped in SQL by UTC hour (by minute in a zone whose
    offset is not whole hours) and put in local hours by the aggregator's own
    ``local_hour``: the same hours, DST included, as the stored ones."""
    if session:
        return _session_hours(user_id=user_id, period=period, session=session)
    rows = DecisionHour.objects.filter(
        user_id=user_id, hour_start__gte=period.since, hour_start__lt=period.until
    )
    cells = []
    buckets = []
    for start, day, hour, state, act, count, dry_run, *sums in rows.order_by(
        "hour_start", "state", "action"
    ).values_list(
        "hour_start",
        "local_date",
        "local_hour",
        "state",
        "action",
        "count",
        "dry_run",
        *BUCKET_SUMS,
    ):
        cells.append(ChartCell(day, hour, state, act, count, dry_run))
        buckets.append(_bucket(start, act, count, sums, state))
    return Hours(cells, buckets, from_decisions=False)


def _bucket(start: dt.datetime, action: str, count: int, sums: Any, state: str) -> Bucket:
    """A savings ``Bucket`` of an hour's count, its ``BUCKET_SUMS`` in order, and its state."""
    not_sent, kept, known, used_in, used_out = sums
    return Bucket(start, action, count, not_sent, kept, known, used_in, used_out, state)


def _whole_hours(period: Period) -> bool:
    """The zone's offset is whole hours all through ``period`` (sampled daily:
    an offset lasts months), so a UTC hour lies inside one local hour."""
    day = dt.timedelta(days=1)
    hour = dt.timedelta(hours=1)
    return all(
        ((period.since + k * day).astimezone(period.zone).utcoffset() or hour) % hour
        == dt.timedelta(0)
        for k in range(period.days + 1)
    )


def _session_hours(*, user_id: int, period: Period, session: str) -> Hours:
    rows = Decision.objects.filter(
        of_session(session), user_id=user_id, at__gte=period.since, at__lt=period.until
    )
    acted = Q(dry_run=False)
    # The aggregator's rules (``ledger.entry.not_sent``, ``saving``,
    # ``ledger.batch.tally_action``) in SQL.
    grouped = (
        rows.annotate(
            bucket=Trunc("at", "hour" if _whole_hours(period) else "minute", tzinfo=dt.UTC),
            kind=Case(
                When(action="short-circuit", origin="embeddings", then=Value(REFUSED)),
                default=F("action"),
                output_field=CharField(),
            ),
        )
        .values("bucket", "state", "kind")
        .annotate(
            n=Count("id"),
            dry=Count("id", filter=Q(dry_run=True)),
            not_sent=Count("id", filter=acted & Q(action="short-circuit")),
            kept=Coalesce(
                Sum(
                    Greatest(F("budget_before") - F("budget_after"), Value(0)),
                    filter=acted
                    & Q(action="clamp", budget_before__isnull=False, budget_after__isnull=False),
                ),
                0,
            ),
            known=Count(
                "id", filter=Q(input_tokens__isnull=False) | Q(output_tokens__isnull=False)
            ),
            used_in=Coalesce(Sum("input_tokens"), 0),
            used_out=Coalesce(Sum("output_tokens"), 0),
        )
        .order_by()
        .values_list(
            "bucket",
            "state",
            "kind",
            "n",
            "dry",
            "not_sent",
            "kept",
            "known",
            "used_in",
            "used_out",
        )
    )
    summed: dict[tuple[dt.datetime, str, str], list[int]] = {}
    labels: dict[dt.datetime, tuple[dt.date, int]] = {}
    for bucket, state, act, *sums in grouped:
        hour = local_hour(bucket, period.zone)
        labels[hour.start] = (hour.local_date, hour.local_hour)
        total = summed.setdefault((hour.start, state, act), [0] * len(sums))
        for i, value in enumerate(sums):
            total[i] += value
    cells = []
    buckets = []
    for (start, state, act), (count, dry, *sums) in sorted(summed.items()):
        day, hour_of_day = labels[start]
        cells.append(ChartCell(day, hour_of_day, state, act, count, dry))
        buckets.append(_bucket(start, act, count, sums, state))
    return Hours(cells, buckets, from_decisions=True)


def minutes_held_off(*, user_id: int, period: Period, session: str | None = None) -> dict[str, int]:
    """The minutes of ``period``, per off state (peak, asleep), in which at
    least one of the user's calls (of ``session``) was held off: read from the
    single decisions' instants, each minute once (``ledger.savings.held_minutes``),
    so time is counted as it happened, never rounded up to hours. Only as far
    back as single decisions are kept (``CURFEW_LEDGER_RETENTION_DAYS``)."""
    rows = Decision.objects.filter(
        user_id=user_id,
        at__gte=period.since,
        at__lt=period.until,
        action="short-circuit",
        dry_run=False,
        state__in=OFF_STATES,
    )
    if session:
        rows = rows.filter(of_session(session))
    minutes = (
        rows.annotate(minute=Trunc("at", "minute", tzinfo=dt.UTC))
        .order_by()
        .values_list("state", "minute")
        .distinct()
    )
    return held_minutes(minutes)


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
    origin: str
    exempt: bool
    dry_run: bool
    input_tokens: int | None
    output_tokens: int | None

    @property
    def why(self) -> str:
        """The reason line led by what it tells of this decision's own
        recorded ``state`` (``ledger.why``): an Asleep row's "Why" begins
        with why it was asleep, never with the other side's winding."""
        return own_side_marked(led_by_state(self.state, self.reason))


#: The columns a line is read from, in its fields' order (declared once, above).
_LINE_FIELDS = tuple(field.name for field in fields(DecisionLine))


def _filtered(*, user_id: int, period: Period, session: str | None, action: str | None) -> Any:
    rows = Decision.objects.filter(user_id=user_id, at__gte=period.since, at__lt=period.until)
    return _narrowed(rows, session, action)


def _narrowed(rows: Any, session: str | None, action: str | None) -> Any:
    """``rows`` of one session and one action only, each where one is asked for."""
    if session:
        rows = rows.filter(of_session(session))
    if action:
        rows = rows.filter(action=action)
    return rows


def _line(values: tuple[Any, ...], zone: zoneinfo.ZoneInfo) -> DecisionLine:
    row_id, at, *rest = values
    return DecisionLine(row_id, at.astimezone(zone), *rest)


class RowBefore(Expression):
    """``(at, id) < (%s, %s)``: the decisions after the row ``(at, id)`` in the
    ledger's order (newest first), as one row-value comparison.

    Written so, PostgreSQL (and SQLite) bound the scan of the index
    ``(user, at DESC, id DESC)`` by it: a chunk reads its own rows and no
    more. The same rule as ``Q(at__lt=at) | Q(at=at, id__lt=id)``, which
    reached PostgreSQL as a filter over every newer row of the period, so each
    1,000-row chunk of an export re-read all that came before it (issue 40)."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, at: dt.datetime, row_id: int) -> None:
        super().__init__()
        self.parts: list[Any] = [
            F("at"),
            F("id"),
            Value(at, output_field=DateTimeField()),
            Value(row_id, output_field=BigIntegerField()),
        ]

    def get_source_expressions(self) -> list[Any]:
        return self.parts

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        self.parts = list(exprs)

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        compiled = [compiler.compile(part) for part in self.parts]
        sql = "({}, {}) < ({}, {})".format(*(text for text, _ in compiled))
        return sql, tuple(param for _, params in compiled for param in params)


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
    a long export never rescans what it has sent: ``(at, id) < (%s, %s)``
    bounds the index scan where the chunk starts (``RowBefore``). It stands
    in for the period's end, which it implies (the row was in the period):
    so SQLite, which takes one upper bound, takes this one."""
    rows = Decision.objects.filter(user_id=user_id, at__gte=period.since)
    rows = rows.filter(RowBefore(*after)) if after is not None else rows.filter(at__lt=period.until)
    rows = _narrowed(rows, session, action)
    found = rows.order_by("-at", "-id").values_list(*_LINE_FIELDS)[:size]
    return [_line(row, period.zone) for row in found]
