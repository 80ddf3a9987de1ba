"""Writing the decision ledger: one batch of entries in one transaction.

Called by the recorder's flusher (``curfew_core.ledger.recorder``), never on a
request's thread: raw rows by ``bulk_create``, the hourly aggregates by one
upsert that adds to what is there (``ON CONFLICT ... DO UPDATE SET n = n +
excluded.n``, so several processes flushing at once never lose a count).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction

from curfew_core import schedule_config
from curfew_core.ledger.entry import MAX_REASON, MAX_SCOPE, Entry, clamp_saving, not_sent
from curfew_core.ledger.hours import local_hour
from curfew_core.models import ApiToken, Decision, DecisionHour, Schedule

_SUMS = (
    "count",
    "exempt",
    "dry_run",
    "requests_not_sent",
    "output_tokens_not_generated",
    "usage_known",
    "input_tokens",
    "output_tokens",
)


@dataclass
class _Hour:
    user_id: int
    start: datetime
    local_date: Any
    local_hour: int
    state: str
    action: str
    sums: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_SUMS, 0))


def _zone(config: dict[str, Any] | None) -> zoneinfo.ZoneInfo:
    name = (config or {}).get("timezone") or schedule_config.DEFAULTS["timezone"]
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo(schedule_config.DEFAULTS["timezone"])


def _owners(entries: Sequence[Entry]) -> dict[int, int]:
    """Token id -> user id, for entries that name only their token."""
    token_ids = {e.token_id for e in entries if e.user_id is None and e.token_id is not None}
    if not token_ids:
        return {}
    return dict(ApiToken.objects.filter(id__in=token_ids).values_list("id", "user_id"))


def _upsert(hours: Iterable[_Hour]) -> None:
    rows = list(hours)
    if not rows:
        return
    table = connection.ops.quote_name(DecisionHour._meta.db_table)
    q = connection.ops.quote_name
    columns = ["user_id", "hour_start", "local_date", "local_hour", "state", "action", *_SUMS]
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    updates = ", ".join(f"{q(c)} = {table}.{q(c)} + excluded.{q(c)}" for c in _SUMS)
    conflict = ", ".join(q(c) for c in ("user_id", "hour_start", "state", "action"))
    values = ", ".join([placeholders] * len(rows))
    names = ", ".join(q(c) for c in columns)
    # Only quoted model names and %s placeholders: no value is ever in the text.
    sql = f"INSERT INTO {table} ({names}) VALUES {values} ON CONFLICT ({conflict}) DO UPDATE SET {updates}"  # noqa: S608, E501
    params: list[Any] = []
    for hour in rows:
        params += [
            hour.user_id,
            connection.ops.adapt_datetimefield_value(hour.start),
            connection.ops.adapt_datefield_value(hour.local_date),
            hour.local_hour,
            hour.state,
            hour.action,
            *(hour.sums[c] for c in _SUMS),
        ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


#: The raw row's columns, in the order ``_insert_rows`` gives them.
_ROW_COLUMNS = (
    "user_id",
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
    "client_id",
)


def _insert_rows(resolved: Sequence[tuple[int, Entry]]) -> None:
    """The raw rows by multi-row ``INSERT``s of ``_INSERT_CHUNK`` rows.

    Not ``bulk_create``: it compiled every field of every row through the ORM
    (two thirds of a flush: 97 µs a decision on SQLite, against 27). Not
    ``executemany`` either: SQLite then steps once per row, dropping and
    taking back the GIL each time, and a flusher that waits for the GIL row
    after row slows the event loop beside it (the throughput bench lost a
    third of its rate with the ledger on). A few statements per flush."""
    q = connection.ops.quote_name
    table = q(Decision._meta.db_table)
    names = ", ".join(q(c) for c in _ROW_COLUMNS)
    marks = "(" + ", ".join(["%s"] * len(_ROW_COLUMNS)) + ")"
    when = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for first in range(0, len(resolved), _INSERT_CHUNK):
            chunk = resolved[first : first + _INSERT_CHUNK]
            params: list[Any] = []
            for user_id, e in chunk:
                params += (
                    user_id,
                    when(e.at),
                    (e.session or "")[:MAX_SCOPE],
                    (e.purpose or "")[:MAX_SCOPE],
                    e.state,
                    e.action,
                    e.reason[:MAX_REASON],
                    e.budget_before,
                    e.budget_after,
                    e.door,
                    e.exempt,
                    e.dry_run,
                    e.input_tokens,
                    e.output_tokens,
                    e.client_id,
                )
            values = ", ".join([marks] * len(chunk))
            # Only quoted model names and %s placeholders: no value is in the text.
            cursor.execute(f"INSERT INTO {table} ({names}) VALUES {values}", params)  # noqa: S608


#: Raw rows per INSERT (15 parameters each; SQLite allows 32766 in all).
_INSERT_CHUNK = 1000


#: Rows per INSERT of the aggregates (SQLite allows 32766 parameters).
_UPSERT_CHUNK = 500


@transaction.atomic
def decisions_write(*, entries: Sequence[Entry]) -> int:
    """Store ``entries`` (raw rows and hourly aggregates) in one transaction;
    returns how many were stored. Entries of users (or tokens) that no longer
    exist are dropped; a gateway-reported entry whose ``client_id`` is already
    stored is dropped too (a retried report), so its counts are not doubled."""
    if not entries:
        return 0
    owners = _owners(entries)
    resolved: list[tuple[int, Entry]] = []
    for entry in entries:
        user_id = entry.user_id if entry.user_id is not None else owners.get(entry.token_id or 0)
        if user_id is not None:
            resolved.append((user_id, entry))
    user_ids = {user_id for user_id, _ in resolved}
    alive = set(User.objects.filter(id__in=user_ids).values_list("id", flat=True))
    resolved = [(u, e) for u, e in resolved if u in alive]
    reported = {(u, e.client_id) for u, e in resolved if e.client_id}
    if reported:
        seen = set(
            Decision.objects.filter(
                user_id__in={u for u, _ in reported},
                client_id__in={c for _, c in reported},
            ).values_list("user_id", "client_id")
        )
        kept: list[tuple[int, Entry]] = []
        for user_id, entry in resolved:
            reported_key = (user_id, entry.client_id)
            if entry.client_id and reported_key in seen:
                continue
            if entry.client_id:
                seen.add(reported_key)
            kept.append((user_id, entry))
        resolved = kept
    if not resolved:
        return 0
    zones = {
        user_id: _zone(config)
        for user_id, config in Schedule.objects.filter(user_id__in=alive).values_list(
            "user_id", "config"
        )
    }
    default_zone = _zone(None)
    _insert_rows(resolved)
    hours: dict[tuple[int, datetime, str, str], _Hour] = {}
    # Every zone's offset is whole minutes (since the 1970s): instants in one UTC
    # minute share their local hour, so it is worked out once per zone and minute.
    hour_of: dict[tuple[zoneinfo.ZoneInfo, datetime], Any] = {}
    for user_id, e in resolved:
        zone = zones.get(user_id, default_zone)
        minute = (zone, e.at.replace(second=0, microsecond=0))
        local = hour_of.get(minute)
        if local is None:
            local = hour_of[minute] = local_hour(e.at, zone)
        key = (user_id, local.start, e.state, e.action)
        hour = hours.get(key)
        if hour is None:
            hour = hours[key] = _Hour(
                user_id, local.start, local.local_date, local.local_hour, e.state, e.action
            )
        sums = hour.sums
        sums["count"] += 1
        sums["exempt"] += int(e.exempt)
        sums["dry_run"] += int(e.dry_run)
        sums["requests_not_sent"] += int(not_sent(e))
        sums["output_tokens_not_generated"] += clamp_saving(e)
        if e.input_tokens is not None or e.output_tokens is not None:
            sums["usage_known"] += 1
            sums["input_tokens"] += e.input_tokens or 0
            sums["output_tokens"] += e.output_tokens or 0
    ordered = sorted(hours.values(), key=lambda h: (h.user_id, h.start, h.state, h.action))
    for first in range(0, len(ordered), _UPSERT_CHUNK):
        _upsert(ordered[first : first + _UPSERT_CHUNK])
    return len(resolved)


@transaction.atomic
def decisions_prune(*, before: datetime) -> int:
    """Delete raw decisions older than ``before``; the hourly aggregates stay.
    Returns how many rows went."""
    deleted, _ = Decision.objects.filter(at__lt=before).delete()
    return deleted
