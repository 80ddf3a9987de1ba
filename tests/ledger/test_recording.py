"""The recorder: zero queries on the caller, batches in one flush, the local
hours of the aggregates (DST included), idempotent reports, pruning."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from curfew_core.ledger.entry import Entry
from curfew_core.ledger.hours import local_hour
from curfew_core.models import Decision, DecisionHour, Schedule
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.ledger import decisions_prune
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 9, 29, 15, 30, tzinfo=UTC)  # 23:30 in Shanghai


def entry(user: User, at: datetime = T0, **fields: object) -> Entry:
    values: dict[str, object] = {
        "at": at,
        "state": "winding",
        "action": "clamp",
        "origin": "chat",
        "user_id": user.pk,
        "reason": "winding 12% · budget 1824",
        "budget_before": 4096,
        "budget_after": 1824,
    }
    values.update(fields)
    return Entry(**values)  # type: ignore[arg-type]


def test_recording_makes_no_query_and_one_flush_stores_them_all(user: User) -> None:
    with CaptureQueriesContext(connection) as queries:
        for n in range(50):
            recorder.record(entry(user, T0 + timedelta(seconds=n)))
    assert len(queries) == 0
    assert Decision.objects.count() == 0  # the control: nothing is written yet
    assert recorder.flush() == 50
    assert Decision.objects.filter(user=user).count() == 50
    [hour] = DecisionHour.objects.filter(user=user)
    assert (hour.count, hour.output_tokens_not_generated) == (50, 50 * (4096 - 1824))
    assert recorder.pending() == 0


def test_a_second_flush_adds_to_the_same_hour(user: User) -> None:
    recorder.record(entry(user, action="short-circuit", state="off-duty", budget_after=0))
    recorder.flush()
    recorder.record(entry(user, action="short-circuit", state="off-duty", budget_after=0))
    recorder.record(entry(user, action="short-circuit", state="off-duty", dry_run=True))
    recorder.flush()
    [hour] = DecisionHour.objects.filter(user=user)
    assert (hour.count, hour.requests_not_sent, hour.dry_run) == (3, 2, 1)
    assert hour.output_tokens_not_generated == 0  # short-circuits are not clamps


def test_hours_are_the_users_local_hours(user: User) -> None:
    # Default zone: Asia/Shanghai (UTC+8).
    recorder.record(entry(user, T0))
    recorder.flush()
    [hour] = DecisionHour.objects.all()
    assert (hour.local_date, hour.local_hour) == (date(2026, 9, 29), 23)
    assert hour.hour_start == datetime(2026, 9, 29, 15, 0, tzinfo=UTC)


def test_the_repeated_hour_of_a_fall_back_night_is_two_hours(user: User) -> None:
    schedule_update(user=user, changes={"timezone": "Europe/Berlin"}, source="test")
    # 2026-10-25: 03:00 CEST -> 02:00 CET; 02:xx happens twice (00:xx and 01:xx UTC).
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    recorder.record(entry(user, first))
    recorder.record(entry(user, second))
    recorder.flush()
    hours = list(DecisionHour.objects.order_by("hour_start"))
    assert [(h.local_date, h.local_hour, h.count) for h in hours] == [
        (date(2026, 10, 25), 2, 1),
        (date(2026, 10, 25), 2, 1),
    ]
    assert [h.hour_start for h in hours] == [
        datetime(2026, 10, 25, 0, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 0, tzinfo=UTC),
    ]


def _schedule_reads(queries: CaptureQueriesContext) -> int:
    table = Schedule._meta.db_table
    return sum(table in query["sql"] for query in queries.captured_queries)


def test_the_verdict_doors_zone_files_its_hours_with_no_schedule_read(user: User) -> None:
    """The verdict door tells the recorder the zone it decided in: the flush
    files the hours in it and reads no schedule (issue 40: at 10,000 users
    that read was a tenth of a verdict). The control: the same decision
    recorded as an entry, with no zone, reads the user's schedule, and its
    hour is the schedule's (Berlin's, where the door said Kolkata's)."""
    from curfew_core.engine import RequestContext
    from curfew_core.selectors.verdicts import verdict_for

    schedule_update(user=user, changes={"timezone": "Europe/Berlin"}, source="test")
    verdict, _ = verdict_for(user_id=user.pk, now=T0, request=RequestContext(max_tokens=4096))
    recorder.record_verdict(
        verdict,
        origin="verdict",
        at=T0,
        user_id=user.pk,
        session=None,
        purpose=None,
        budget_before=4096,
        zone="Asia/Kolkata",
    )
    with CaptureQueriesContext(connection) as queries:
        assert recorder.flush() == 1
    assert _schedule_reads(queries) == 0
    [hour] = DecisionHour.objects.all()
    assert (hour.local_date, hour.local_hour) == (date(2026, 9, 29), 21)  # 21:00 IST
    assert hour.hour_start == datetime(2026, 9, 29, 15, 30, tzinfo=UTC)

    DecisionHour.objects.all().delete()
    recorder.record(entry(user, T0))
    with CaptureQueriesContext(connection) as queries:
        assert recorder.flush() == 1
    assert _schedule_reads(queries) == 1
    [hour] = DecisionHour.objects.all()
    assert (hour.local_date, hour.local_hour) == (date(2026, 9, 29), 17)  # 17:00 CEST


def test_a_deleted_users_decisions_are_dropped_and_the_rest_stored(user: User) -> None:
    """A user deleted between their decision and its flush: their rows and
    hours go, the others' are stored (the database names only the missing)."""
    other = User.objects.create_user("other")
    recorder.record(entry(user))
    recorder.record(entry(other))
    other_id = other.pk
    other.delete()
    assert recorder.flush() == 1
    assert list(Decision.objects.values_list("user_id", flat=True)) == [user.pk]
    assert list(DecisionHour.objects.values_list("user_id", flat=True)) == [user.pk]
    assert not Decision.objects.filter(user_id=other_id).exists()


def test_a_write_that_fails_leaves_the_batch_it_was_given_as_it_was(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer reads the recorder's batch without copying it: a write that
    fails after a deleted user's decisions were set aside (the rows and
    tallies it goes on with are new ones) leaves the batch as it was, to be
    written whole on the next try."""
    from django.db import DatabaseError

    from curfew_core.ledger.batch import Batch
    from curfew_core.services import ledger as ledger_service

    gone = User.objects.create_user("gone")
    batch = Batch(ledger_service.at_value())
    batch.zones[user.pk] = "Asia/Shanghai"
    for who in (user, gone):
        batch.add(entry(who), who.pk)
    rows, tallies = list(batch.rows), {key: list(sums) for key, sums in batch.tallies.items()}
    gone.delete()

    def refused(hours: object) -> None:
        raise DatabaseError("refused")

    monkeypatch.setattr(ledger_service, "_upsert", refused)
    with pytest.raises(DatabaseError):
        ledger_service.decisions_write(batch=batch)
    assert batch.rows == rows
    assert {key: list(sums) for key, sums in batch.tallies.items()} == tallies
    assert len(rows) == 2  # the control: the deleted user's decision is still in it
    monkeypatch.undo()
    assert ledger_service.decisions_write(batch=batch) == 1  # the deleted user's set aside
    assert Decision.objects.get().user_id == user.pk


def test_a_spring_forward_night_skips_its_missing_hour() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 2026-03-29: 02:00 CET -> 03:00 CEST. 00:59 UTC is 01:59 CET; 01:00 UTC is 03:00 CEST.
    before = local_hour(datetime(2026, 3, 29, 0, 59, tzinfo=UTC), berlin)
    after = local_hour(datetime(2026, 3, 29, 1, 0, tzinfo=UTC), berlin)
    assert (before.local_hour, after.local_hour) == (1, 3)
    assert after.start - before.start == timedelta(hours=1)


def test_a_half_hour_zone_starts_its_hours_at_half_past() -> None:
    kolkata = ZoneInfo("Asia/Kolkata")
    hour = local_hour(datetime(2026, 9, 29, 10, 45, tzinfo=UTC), kolkata)  # 16:15 IST
    assert (hour.local_hour, hour.start) == (16, datetime(2026, 9, 29, 10, 30, tzinfo=UTC))


def test_entries_named_by_token_find_their_user(user: User) -> None:
    token, _ = token_create(user=user, name="t")
    recorder.record(entry(user, user_id=None, token_id=token.pk))
    recorder.record(entry(user, user_id=None, token_id=10**9))  # unknown: dropped
    assert recorder.flush() == 1
    assert Decision.objects.get().user == user


def test_a_reported_id_is_stored_once(user: User) -> None:
    recorder.record(entry(user, origin="gateway", client_id="abc"))
    recorder.record(entry(user, origin="gateway", client_id="abc"))
    recorder.flush()
    recorder.record(entry(user, origin="gateway", client_id="abc"))
    recorder.flush()
    assert Decision.objects.count() == 1
    assert DecisionHour.objects.get().count == 1


def test_usage_is_summed_where_known(user: User) -> None:
    recorder.record(entry(user, action="pass", state="on-duty", input_tokens=10, output_tokens=5))
    recorder.record(entry(user, action="pass", state="on-duty", input_tokens=3, output_tokens=4))
    recorder.record(entry(user, action="pass", state="on-duty"))
    recorder.flush()
    hour = DecisionHour.objects.get()
    assert (hour.count, hour.usage_known, hour.input_tokens, hour.output_tokens) == (3, 2, 13, 9)


def test_prune_deletes_old_rows_and_keeps_the_hours(user: User) -> None:
    old = T0 - timedelta(days=40)
    recorder.record(entry(user, old))
    recorder.record(entry(user, T0))
    recorder.flush()
    assert decisions_prune(before=T0 - timedelta(days=30)) == 1
    assert list(Decision.objects.values_list("at", flat=True)) == [T0]
    assert DecisionHour.objects.count() == 2


def test_the_prune_command_keeps_the_retention(user: User, settings: object) -> None:
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    now = timezone.now()
    for days in (3, 29, 31, 400):
        recorder.record(entry(user, now - timedelta(days=days)))
    recorder.flush()
    out = StringIO()
    call_command("curfew", "prune", stdout=out)
    assert "pruned 2 decision(s) older than 30 day(s)" in out.getvalue()
    assert Decision.objects.count() == 2
    settings.CURFEW_LEDGER_RETENTION_DAYS = 5  # type: ignore[attr-defined]
    call_command("curfew", "prune", stdout=out)
    assert Decision.objects.count() == 1
    call_command("curfew", "prune", "--days", "1", stdout=out)
    assert Decision.objects.count() == 0
    assert DecisionHour.objects.aggregate(n=models.Sum("count"))["n"] == 4


def test_a_verdicts_entry_is_recorded_with_no_query(user: User) -> None:
    from curfew_core.engine import RequestContext
    from curfew_core.ledger.entry import verdict_entry
    from curfew_core.selectors.verdicts import verdict_for

    verdict, _ = verdict_for(
        user_id=user.pk, now=T0, request=RequestContext(session_id="s", max_tokens=4096)
    )
    assert verdict.action.value == "clamp"  # 23:30 in Shanghai: winding
    with CaptureQueriesContext(connection) as queries:
        recorder.record(
            verdict_entry(
                verdict, origin="verdict", at=T0, user_id=user.pk, session="s", budget_before=4096
            )
        )
    assert len(queries) == 0
    recorder.flush()
    row = Decision.objects.get()
    assert (row.origin, row.state, row.action, row.budget_before) == (
        "verdict",
        "winding",
        "clamp",
        4096,
    )
    assert row.budget_after == verdict.max_tokens
    assert row.reason == verdict.reason


def test_a_forked_child_does_not_write_its_parents_buffer(user: User) -> None:
    import os

    recorder.record(entry(user))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it holds, and leave at once
        held = recorder.pending()
        # Its own first record starts its own recorder (the flag a record
        # reads instead of the pid was reset by the fork).
        starts = []
        start = recorder._start
        recorder._start = lambda: (starts.append(os.getpid()), start())  # type: ignore[assignment]
        recorder.record(entry(user))
        own = starts == [os.getpid()] and recorder._started
        os.write(write, f"{held} {own}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"0 True"
    assert recorder.pending() == 1  # the parent still holds its own


def test_a_refused_batch_is_kept_and_bounded(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError

    from curfew_core.services import ledger as ledger_service

    real = ledger_service.decisions_write

    def down(**kwargs: object) -> int:
        raise OperationalError("database unreachable")

    for n in range(3):
        recorder.record(entry(user, T0 + timedelta(seconds=n), session=f"s{n}"))
    monkeypatch.setattr(recorder, "decisions_write", down)
    with pytest.raises(OperationalError):
        recorder.flush()
    assert recorder.pending() == 3  # kept, in order
    monkeypatch.setattr(recorder, "MAX_BUFFERED", 2)
    dropped = recorder.dropped
    with pytest.raises(OperationalError):
        recorder.flush()
    assert (recorder.pending(), recorder.dropped - dropped) == (2, 1)  # the oldest went
    monkeypatch.setattr(recorder, "decisions_write", real)
    assert recorder.flush() == 2
    assert sorted(Decision.objects.values_list("session", flat=True)) == ["s1", "s2"]
    # The dropped decision's raw row is gone, but the hour still counts it.
    [hour] = DecisionHour.objects.filter(user=user)
    assert hour.count == 3


def test_a_batch_refused_midway_is_written_once_when_retried(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write fails after the token-named entries joined the batch: the
    retry stores each decision once (no doubled rows or counts)."""
    from django.db import OperationalError

    from curfew_core.services import ledger as ledger_service

    token, _ = token_create(user=user, name="gateway")
    recorder.record(entry(user))
    recorder.record(entry(user, user_id=None, token_id=token.pk))
    real = ledger_service._insert_rows

    def refused(rows: object) -> None:
        raise OperationalError("database unreachable")

    monkeypatch.setattr(ledger_service, "_insert_rows", refused)
    with pytest.raises(OperationalError):
        recorder.flush()
    assert recorder.pending() == 2
    monkeypatch.setattr(ledger_service, "_insert_rows", real)
    assert recorder.flush() == 2
    [hour] = DecisionHour.objects.filter(user=user)
    assert (Decision.objects.filter(user=user).count(), hour.count) == (2, 2)


def test_decisions_recorded_from_many_threads_at_once_are_all_counted(user: User) -> None:
    """Records come from the event loop and request threads at once: the
    batch they share loses none of them, rows or tallies."""
    import threading

    def burst(n: int) -> None:
        for k in range(500):
            recorder.record(entry(user, T0 + timedelta(milliseconds=k), session=f"t{n}"))

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert recorder.flush() == 2000
    [hour] = DecisionHour.objects.filter(user=user)
    assert (hour.count, Decision.objects.filter(user=user).count()) == (2000, 2000)


@pytest.mark.parametrize(
    "instant",
    [
        T0,
        T0.replace(microsecond=123456),
        T0.replace(second=7, microsecond=5),
        datetime(2026, 3, 29, 1, 0, 0, 1, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 9, 29, 23, 30, tzinfo=ZoneInfo("Asia/Shanghai")),  # not UTC: Django's own
    ],
)
def test_an_instant_is_stored_as_django_stores_it(instant: datetime) -> None:
    """The batch's own form of an instant (built on the hot path, a shortcut on
    SQLite) is exactly Django's, so lookups and ordering on ``at`` hold."""
    from curfew_core.services.ledger import at_value

    minute = int(instant.timestamp()) // 60
    convert = at_value()
    assert convert(instant, minute) == connection.ops.adapt_datetimefield_value(instant)
    assert convert(instant, minute) == connection.ops.adapt_datetimefield_value(instant)  # kept


def test_the_flushers_insert_names_every_column_of_the_model() -> None:
    """The raw rows are built by ``ledger.batch`` and written by plain INSERTs:
    a column added to ``Decision`` (or a counter to ``DecisionHour``) must be
    added there too, or this fails."""
    from curfew_core.ledger.batch import ROW_COLUMNS, SUMS

    columns = [f.column for f in Decision._meta.concrete_fields if not f.primary_key]
    assert sorted(ROW_COLUMNS) == sorted(columns)
    counters = [
        f.column
        for f in DecisionHour._meta.concrete_fields
        if isinstance(f, models.IntegerField) and f.column != "local_hour" and not f.primary_key
    ]
    assert sorted(SUMS) == sorted(counters)


@pytest.mark.parametrize("count", [0, 1, 9, 10, 11, 999, 1000, 1001, 3456])
def test_the_raw_rows_go_in_a_few_statement_sizes(count: int) -> None:
    """Every row once, in order, in statements of the few fixed sizes (so the
    database keeps each statement parsed)."""
    from curfew_core.services.ledger import _INSERT_SIZES, _chunks

    chunks = _chunks(count)
    assert [first for first, _ in chunks] == [
        sum(size for _, size in chunks[:n]) for n in range(len(chunks))
    ]
    assert sum(size for _, size in chunks) == count
    assert {size for _, size in chunks} <= set(_INSERT_SIZES)


def test_a_full_batch_wakes_the_flusher_once_until_it_is_taken(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from curfew_core.engine import RequestContext, decide
    from curfew_core.schedules import config as schedule_config

    class Counted(threading.Event):
        sets = 0

        def set(self) -> None:
            Counted.sets += 1
            super().set()

    monkeypatch.setattr(recorder, "_wake", Counted())
    monkeypatch.setattr(recorder, "FLUSH_ROWS", 3)
    verdict = decide(T0, schedule_config.build(schedule_config.default_config()), RequestContext())
    for n in range(6):
        recorder.record(entry(user, T0 + timedelta(seconds=n), session=f"s{n}"))
        recorder.record_verdict(
            verdict,
            origin="verdict",
            at=T0,
            user_id=user.pk,
            session=None,
            purpose=None,
            budget_before=None,
        )
    # Full from the third of each on: woken once, not at every record after.
    assert Counted.sets == 1
    recorder._wake.clear()  # the flusher took it: the next full batch wakes it again
    recorder.record(entry(user, T0, session="again"))
    assert Counted.sets == 2


def test_a_write_that_never_returns_cannot_grow_the_buffer_past_its_bound(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: a database that took the flusher's connection and stopped
    answering (a frozen server, a half-open path) holds its write, and
    nothing takes the batch meanwhile: records must keep to the bound on
    their own, dropping (and counting) the oldest, keeping their counts."""
    from curfew_core.engine import RequestContext, decide
    from curfew_core.schedules import config as schedule_config

    monkeypatch.setattr(recorder, "MAX_BUFFERED", 50)
    monkeypatch.setattr(recorder, "FLUSH_ROWS", 10)
    verdict = decide(T0, schedule_config.build(schedule_config.default_config()), RequestContext())
    dropped = recorder.dropped
    for n in range(300):  # no flush: the flusher is stuck in its write
        recorder.record(entry(user, T0, session=f"e{n}"))
        recorder.record(entry(user, T0, session=f"t{n}", user_id=None, token_id=1))
        recorder.record_verdict(
            verdict,
            origin="verdict",
            at=T0,
            user_id=user.pk,
            session=f"v{n}",
            purpose=None,
            budget_before=None,
        )
    assert recorder._batch is not None
    assert len(recorder._batch.rows) <= 50 + 10
    assert len(recorder._buffer) <= 50 + 10
    lost = recorder.dropped - dropped
    assert lost == 900 - recorder.pending()
    # The newest are the ones kept, and the hour still counts every one.
    assert recorder._batch.rows[-1][2] == "v299"
    assert sum(sums[0] for sums in recorder._batch.tallies.values()) == 600
