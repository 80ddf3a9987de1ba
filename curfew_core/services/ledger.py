"""Writing the decision ledger: one batch of entries in one transaction.

Called by the recorder's flusher (``curfew_core.services.ledger_recorder``), never on a
request's thread, and by the batch endpoint for a gateway's reports: raw rows
by multi-row INSERTs, the hourly aggregates by one upsert that adds to what is
there (``ON CONFLICT ... DO UPDATE SET n = n + excluded.n``, so several
processes flushing at once never lose a count).
"""

from __future__ import annotations

import functools
import sqlite3
import zoneinfo
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from itertools import chain
from typing import Any

from django.contrib.auth.models import User
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Model
from django.db.models.expressions import RawSQL

from curfew_core.ledger.batch import ROW_COLUMNS, SUMS, AtValue, Batch, Row
from curfew_core.ledger.entry import Entry
from curfew_core.ledger.hours import local_hour
from curfew_core.models import ApiToken, Decision, DecisionHour, Schedule
from curfew_core.schedules import config as schedule_config


def _zone(name: Any) -> zoneinfo.ZoneInfo:
    """A schedule's zone by the name it stores (the default's where it stores
    none, or one this machine does not know)."""
    if not isinstance(name, str) or not name:
        name = schedule_config.DEFAULTS["timezone"]
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo(schedule_config.DEFAULTS["timezone"])


def _ids(ids: Collection[int]) -> Collection[int] | RawSQL:
    """``ids`` for an ``__in`` lookup: on PostgreSQL one array parameter
    (``IN (SELECT unnest(%s))``), not a placeholder an id that psycopg splits
    in Python (a flush at 5,000 users names 2,000 of them)."""
    if connection.vendor == "postgresql":
        return RawSQL("SELECT unnest(%s::int[])", (_int_array(ids),))
    return ids


def _int_array(ids: Collection[int]) -> str:
    """Whole numbers as PostgreSQL's array text (``{1,2,3}``), one parameter
    cast ``::int[]``: joined in C, where psycopg dumps a list element by
    element in Python (a flush at 10,000 users names thousands)."""
    return "{" + ",".join(map(str, map(int, ids))) + "}"


def _gone(ids: Collection[int]) -> set[int]:
    """Of the users ``ids``, those that no longer exist (deleted since their
    decisions were recorded). On PostgreSQL the database answers with only
    those, most often none: a flush at 10,000 users named thousands, each
    read back into Python to be found alive."""
    if connection.vendor == "postgresql":
        users = connection.ops.quote_name(User._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT asked FROM unnest(%s::int[]) AS asked "  # noqa: S608 - a quoted model name
                f"WHERE NOT EXISTS (SELECT 1 FROM {users} WHERE id = asked)",
                [_int_array(ids)],
            )
            return {int(row[0]) for row in cursor.fetchall()}
    return set(ids) - set(User.objects.filter(id__in=ids).values_list("id", flat=True))


def _owners(entries: Sequence[Entry]) -> dict[int, int]:
    """Token id -> user id, for entries that name only their token."""
    token_ids = {e.token_id for e in entries if e.user_id is None and e.token_id is not None}
    if not token_ids:
        return {}
    return dict(ApiToken.objects.filter(id__in=token_ids).values_list("id", "user_id"))


def at_value() -> AtValue:
    """An instant as this database stores it: Django's own adapter, with a
    shortcut on SQLite for the UTC instants every door records (what Django
    stores for them: the naive UTC time as text), cheap enough for the hot
    path (``ledger.batch``)."""
    adapt = connection.ops.adapt_datetimefield_value
    if connection.vendor != "sqlite" or connection.timezone_name != "UTC":
        return lambda at, minute: adapt(at)
    return _SqliteUtcText(adapt)


def minute_of(stored: Any) -> int:
    """The minute since the epoch of an instant in the form ``at_value`` gave
    it (a datetime, or Django's naive text in the connection's zone on
    SQLite): a refused batch split in parts tallies its rows again
    (``Batch.split``), so this is never on the hot path."""
    moment = stored if isinstance(stored, datetime) else datetime.fromisoformat(str(stored))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=connection.timezone or UTC)
    return int(moment.timestamp()) // 60


#: Minutes whose text ``_SqliteUtcText`` keeps: a long-lived process keeps
#: the recent ones.
_MINUTES_KEPT = 1024


def _minute_text(minute: int) -> str:
    """The naive UTC text of the minute since the epoch, "2026-12-01 00:52:"."""
    return datetime.fromtimestamp(minute * 60, UTC).isoformat(" ")[:17]


class _SqliteUtcText:
    """``str(naive UTC instant)`` (Django's SQLite form), built from the
    minute's text, kept per minute, and the seconds: ``isoformat`` per
    decision was a fifth of what recording cost (C's formatting machinery).

    The minutes are bounded, least recently used (issue 40): ``lru_cache``,
    as a minute's text is the minute's alone, so it is safe with no lock for
    the doors that record from the event loop and from threads at once."""

    def __init__(self, adapt: Callable[[datetime], Any]) -> None:
        self._adapt = adapt
        self._minutes: Callable[[int], str] = functools.lru_cache(maxsize=_MINUTES_KEPT)(
            _minute_text
        )

    def __call__(self, at: datetime, minute: int) -> Any:
        if at.tzinfo is not UTC:
            return self._adapt(at)
        head = self._minutes(minute)
        micro = at.microsecond
        if micro:
            return head + _SECONDS[at.second] + "." + str(1_000_000 + micro)[1:]
        return head + _SECONDS[at.second]


_SECONDS = tuple(f"{second:02d}" for second in range(61))


#: Raw rows per INSERT (15 parameters each; SQLite allows 32766 in all), the
#: largest first. Few sizes, so few statement texts: SQLite keeps each parsed
#: (the flusher's connection lives from tick to tick), where a statement of
#: each flush's own length was parsed anew every second.
_INSERT_SIZES = (1000, 100, 10, 1)


def _insert_rows(rows: Sequence[Row]) -> None:
    """The raw rows: by ``COPY`` on PostgreSQL, elsewhere by multi-row
    ``INSERT``s of a few fixed sizes (``_INSERT_SIZES``).

    Not ``bulk_create``: it compiled every field of every row through the ORM
    (97 µs a decision on SQLite). Not ``executemany`` either: SQLite then steps
    once per row, dropping and taking back the GIL each time. The rows come
    built (``Batch.add``): their parameters are bound in C, and the database's
    work runs without the GIL, so the flusher hardly holds it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY: psycopg's client-side binding splits a 15,000-placeholder
            # statement in Python (~80 µs a row); COPY formats a row in C.
            # Binary, with the columns' types named (``_column_types``): psycopg
            # then dumps each value by that type in C, 0.5 µs of CPU a row
            # against 2.7-4.3 in text, where it looks up a dumper per value;
            # the flusher holds the GIL that much less against the event loop.
            with connection.wrap_database_errors, cursor.copy(_copy_sql()) as copy:
                copy.set_types(_copy_names(_column_types(Decision, ROW_COLUMNS)))
                for row in rows:
                    copy.write_row(row)
            return
        for first, size in _chunks(len(rows)):
            _execute(
                cursor, _insert_sql(size), list(chain.from_iterable(rows[first : first + size]))
            )


def _columns() -> str:
    q = connection.ops.quote_name
    return f"{q(Decision._meta.db_table)} ({', '.join(q(c) for c in ROW_COLUMNS)})"


def _copy_sql() -> str:
    return f"COPY {_columns()} FROM STDIN (FORMAT BINARY)"


@functools.lru_cache(maxsize=4)
def _column_types(model: type[Model], columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns``' types on PostgreSQL, from ``model``'s own fields
    (``integer``, ``timestamp with time zone``, ``varchar(16)``…): a binary
    ``COPY`` is told them, and the hours' staging table is made of them."""
    by_column = {field.column: field for field in model._meta.concrete_fields}
    return tuple(by_column[column].db_type(connection) or "" for column in columns)


def _copy_names(types: tuple[str, ...]) -> list[str]:
    """The names a binary ``COPY`` takes for ``types`` (no length: ``varchar``)."""
    return [kind.partition("(")[0].strip() for kind in types]


@functools.lru_cache(maxsize=len(_INSERT_SIZES))
def _insert_sql(size: int) -> str:
    """The INSERT of ``size`` rows, built once per size (the same text object
    each flush: its 15,000 placeholders are not joined, nor hashed, again)."""
    row = "(" + ", ".join(["%s"] * len(ROW_COLUMNS)) + ")"
    # Only quoted model names and placeholders: no value is in the text.
    return f"INSERT INTO {_columns()} VALUES {', '.join([row] * size)}"  # noqa: S608


def _execute(cursor: Any, sql: str, params: list[Any]) -> None:
    """``cursor.execute``, except that on SQLite the placeholders are turned
    into its own here, once per statement text, and not by Django's cursor on
    every call: a regex over 15,000 placeholders held the GIL for 2 µs a row.
    Database errors are Django's, as from ``cursor.execute``."""
    if connection.vendor != "sqlite":
        cursor.execute(sql, params)
        return
    raw = cursor.cursor  # Django's SQLite cursor: a sqlite3.Cursor
    with connection.wrap_database_errors:
        sqlite3.Cursor.execute(raw, _qmark(sql), params)


@functools.lru_cache(maxsize=8)
def _qmark(sql: str) -> str:
    return sql.replace("%s", "?")


def _chunks(count: int) -> list[tuple[int, int]]:
    """``(first, size)`` of each INSERT for ``count`` rows."""
    chunks = []
    first = 0
    for size in _INSERT_SIZES:
        while count - first >= size:
            chunks.append((first, size))
            first += size
    return chunks


def _upsert(hours: Sequence[tuple[Any, ...]]) -> None:
    """Add ``hours`` (``user_id, hour_start, local_date, local_hour, state,
    action, *SUMS``) to what is stored, by statements that add to an existing
    row (several processes flushing at once never lose a count): one on
    PostgreSQL, one a ``_UPSERT_CHUNK`` rows elsewhere. Only quoted model names
    and placeholders are in their text, never a value."""
    if not hours:
        return
    table = connection.ops.quote_name(DecisionHour._meta.db_table)
    q = connection.ops.quote_name
    columns = ("user_id", "hour_start", "local_date", "local_hour", "state", "action", *SUMS)
    names = ", ".join(q(c) for c in columns)
    conflict = ", ".join(q(c) for c in ("user_id", "hour_start", "state", "action"))
    updates = ", ".join(f"{q(c)} = {table}.{q(c)} + excluded.{q(c)}" for c in SUMS)
    on_conflict = f"ON CONFLICT ({conflict}) DO UPDATE SET {updates}"
    if connection.vendor == "postgresql":
        _upsert_by_copy(hours, table, columns, on_conflict, conflict)
        return
    # In chunks: the rows are parameters here (SQLite allows 32766).
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    for first in range(0, len(hours), _UPSERT_CHUNK):
        chunk = hours[first : first + _UPSERT_CHUNK]
        values = ", ".join([placeholders] * len(chunk))
        sql = f"INSERT INTO {table} ({names}) VALUES {values} {on_conflict}"  # noqa: S608
        with connection.cursor() as cursor:
            _execute(cursor, sql, list(chain.from_iterable(chunk)))


#: Rows per INSERT of the aggregates (SQLite allows 32766 parameters).
_UPSERT_CHUNK = 500
#: The session's own table the hourly rows are copied into on PostgreSQL
#: (``_upsert_by_copy``): emptied at every commit.
_HOURS_IN = "curfew_decision_hours_in"


def _upsert_by_copy(
    hours: Sequence[tuple[Any, ...]],
    table: str,
    columns: tuple[str, ...],
    on_conflict: str,
    conflict: str,
) -> None:
    """PostgreSQL: the rows by binary ``COPY`` into a temporary table of the
    session, then added by one ``INSERT … SELECT … ON CONFLICT``, in key order
    (concurrent upserts take their row locks in the same order).

    Not parameters: psycopg dumps a list in Python, about 8 µs a row of the
    14 columns whether as ``unnest`` arrays or a ``VALUES`` list (at 10,000
    users a tally is a verdict, so that was the flush's largest cost, issue
    40); ``COPY`` with the columns' types named dumps a row in C (about
    0.5 µs). The table (``ON COMMIT DELETE ROWS``) is made once a session, its
    columns typed as the model's; it is emptied before each use, so an upsert
    twice in one transaction adds each row once."""
    q = connection.ops.quote_name
    types = _column_types(DecisionHour, columns)
    names = ", ".join(q(c) for c in columns)
    staging = q(_HOURS_IN)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} "
            f"({', '.join(f'{q(c)} {t}' for c, t in zip(columns, types, strict=True))}) "
            "ON COMMIT DELETE ROWS"
        )
        cursor.execute(f"TRUNCATE {staging}")
        with (
            connection.wrap_database_errors,
            cursor.copy(f"COPY {staging} ({names}) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types(_copy_names(types))
            for hour in hours:
                copy.write_row(hour)
        cursor.execute(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM {staging} "  # noqa: S608
            f"ORDER BY {conflict} {on_conflict}"
        )


def _hours(batch: Batch) -> list[tuple[Any, ...]]:
    """The batch's tallies summed per user, local hour, state and action."""
    # Each user's zone as the batch carries it (the verdict door's own), else
    # their schedule's: only its zone is read (the database takes it out of
    # the JSON; a flush at thousands of users decoded each one's whole
    # schedule), and only for users the batch has no zone for (issue 40: at
    # 10,000 users, each in most flushes, py-spy put that read's Python at
    # about 5 µs a verdict on the flusher's thread, PostgreSQL's work aside).
    by_name: dict[Any, zoneinfo.ZoneInfo] = {}
    zones: dict[int, zoneinfo.ZoneInfo] = {}
    for user_id, name in batch.zones.items():
        zone = by_name.get(name)
        if zone is None:
            zone = by_name[name] = _zone(name)
        zones[user_id] = zone
    unknown = batch.users() - zones.keys()
    if unknown:
        for user_id, name in Schedule.objects.filter(user_id__in=_ids(unknown)).values_list(
            "user_id", "config__timezone"
        ):
            zones[user_id] = _zone(name)
    default_zone = _zone(None)
    hours: dict[tuple[int, datetime, str, str], list[Any]] = {}
    # By zone and minute: most of a flush's thousands of tallies share a few.
    hour_of: dict[tuple[zoneinfo.ZoneInfo, int], Any] = {}
    for (user_id, epoch_minute, state, action), sums in batch.tallies.items():
        zone = zones.get(user_id, default_zone)
        local = hour_of.get((zone, epoch_minute))
        if local is None:
            minute = datetime.fromtimestamp(epoch_minute * 60, UTC)
            local = hour_of[zone, epoch_minute] = local_hour(minute, zone)
        key = (user_id, local.start, state, action)
        hour = hours.get(key)
        if hour is None:
            hours[key] = [local, list(sums)]
        else:
            hour[1] = [a + b for a, b in zip(hour[1], sums, strict=True)]
    date_value = connection.ops.adapt_datefield_value
    when = connection.ops.adapt_datetimefield_value
    # In key order: concurrent upserts take their row locks in the same order.
    return [
        (
            user_id,
            when(start),
            date_value(local.local_date),
            local.local_hour,
            state,
            action,
            *sums,
        )
        for (user_id, start, state, action), (local, sums) in sorted(hours.items())
    ]


def _reported(resolved: list[tuple[int, Entry]]) -> list[tuple[int, Entry]]:
    """``resolved`` without the gateway-reported entries whose ``client_id`` is
    already stored, or repeated in the batch (a retried report)."""
    reported = {(u, e.client_id) for u, e in resolved if e.client_id}
    if not reported:
        return resolved
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
    return kept


def _resolved(entries: Sequence[Entry]) -> list[tuple[int, Entry]]:
    """``entries`` with their user, less those of users (or tokens) that no
    longer exist and the repeated reports."""
    if not entries:
        return []
    owners = _owners(entries)
    resolved: list[tuple[int, Entry]] = []
    for entry in entries:
        user_id = entry.user_id if entry.user_id is not None else owners.get(entry.token_id or 0)
        if user_id is not None:
            resolved.append((user_id, entry))
    users = {user_id for user_id, _ in resolved}
    alive = set(User.objects.filter(id__in=users).values_list("id", flat=True))
    return _reported([(u, e) for u, e in resolved if u in alive])


class CommitInDoubt(OperationalError):
    """The link to PostgreSQL was lost after a write's last statement: its
    COMMIT may have been made with the answer lost on the way back (a
    switchboard cut, a failover, a half-open path). Writing the batch again
    could store it twice; dropping it could lose it. ``xact`` is the
    transaction's id, which ``decisions_write_status`` asks about once the
    database answers again (PostgreSQL's own answer to exactly this,
    ``pg_xact_status``)."""

    def __init__(self, xact: int) -> None:
        super().__init__(f"the write's commit is in doubt (transaction {xact})")
        self.xact = xact


def decisions_write(*, entries: Sequence[Entry] = (), batch: Batch | None = None) -> int:
    """Store ``entries`` and the recorder's prepared ``batch`` (raw rows and
    hourly aggregates) in one transaction; returns how many decisions were
    stored. Entries of users (or tokens) that no longer exist are dropped; a
    gateway-reported entry whose ``client_id`` is already stored is dropped too
    (a retried report), so its counts are not doubled.

    On PostgreSQL, a lost link once the rows are sent raises
    ``CommitInDoubt`` (an ``OperationalError``) naming the transaction: a
    caller that retries asks ``decisions_write_status`` first."""
    owns_commit = not connection.in_atomic_block
    xact: int | None = None
    try:
        with transaction.atomic():
            written = _write(entries, batch)
            if written and owns_commit and connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_current_xact_id()::text::bigint")
                    xact = int(cursor.fetchone()[0])
        return written
    except (OperationalError, InterfaceError) as exc:
        if xact is not None:
            raise CommitInDoubt(xact) from exc
        raise


def decisions_write_status(xact: int) -> str:
    """Whether the write of transaction ``xact`` (``CommitInDoubt``) was
    made: ``committed``, ``aborted`` or ``in progress`` (the server has not
    yet seen the lost link). A transaction too old for the server to know
    reads as ``aborted``: written again rather than lost."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_xact_status(%s::text::xid8)", [str(xact)])
        status = cursor.fetchone()[0]
    return str(status or "aborted")


def _write(entries: Sequence[Entry], batch: Batch | None) -> int:
    stored = Batch(at_value())
    resolved = _resolved(entries)
    if batch is not None and not resolved:
        # Read as it is: nothing below changes a batch's rows or tallies in
        # place (``without_users`` makes new ones), so the recorder's batch is
        # kept whole if this fails, with no copy made of each of its thousands
        # of tallies (one a user and minute) at 10,000 users.
        stored.rows, stored.tallies, stored.zones = batch.rows, batch.tallies, batch.zones
    elif batch is not None:
        stored.absorb(batch)  # a copy: if this fails, the recorder keeps the batch whole
    for user_id, entry in resolved:
        stored.add(entry, user_id)
    if not stored.rows:
        return 0
    stored.without_users(_gone(stored.users()))
    if not stored.rows:
        return 0
    _insert_rows(stored.rows)
    _upsert(_hours(stored))
    return len(stored.rows)


#: Users whose old decisions one prune statement reads at once.
PRUNE_USERS = 500
#: The most rows one prune statement deletes: each is its own short
#: transaction, so the recorder's writes (and SQLite's one writer) wait at
#: most for one of them, never for a whole prune.
PRUNE_BATCH = 5_000


def decisions_prune(*, before: datetime, batch: int = PRUNE_BATCH) -> int:
    """Delete raw decisions older than ``before``; the hourly aggregates stay.
    Returns how many rows went.

    Read by the index ``(user, at DESC, id DESC)``, a group of users at a time
    (``user_id IN (...) AND at < before``: an index range per user, never a
    scan of the table, which has no index on ``at`` alone: one fewer to write
    per decision), at most ``batch`` rows a statement, each its own
    transaction. So the hourly prune (``services.ledger_prune``) of an hour's
    rows is a few hundred index probes, whatever the ledger's size."""
    users = list(User.objects.order_by("id").values_list("id", flat=True))
    deleted = 0
    for first in range(0, len(users), PRUNE_USERS):
        group = users[first : first + PRUNE_USERS]
        while True:
            old = Decision.objects.filter(user_id__in=group, at__lt=before).values("id")[:batch]
            with transaction.atomic():
                gone, _ = Decision.objects.filter(id__in=old).delete()
            deleted += gone
            if gone < batch:
                break
    return deleted
