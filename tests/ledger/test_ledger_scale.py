"""The ledger at a year's size (issue 40): the export's keyset pages and the
session filter bounded by an index (on PostgreSQL, checked by its own
EXPLAIN: an Index Cond, not a Filter over the newer rows), and the prune run
hourly by the servers themselves, one process at a time, never on a
request's thread, keeping the hourly totals."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curfew_core.ledger.entry import Entry
from curfew_core.models import Decision, DecisionHour
from curfew_core.selectors import ledger_page
from curfew_core.selectors.ledger import decisions_page
from curfew_core.services import ledger_prune
from curfew_core.services import ledger_recorder as recorder

pytestmark = pytest.mark.django_db

on_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's own plan (DATABASE_URL)"
)


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    recorder.discard()
    ledger_prune.reset()
    cache.delete(ledger_prune.STAMP_KEY)
    yield
    recorder.discard()
    ledger_prune.reset()
    cache.delete(ledger_prune.STAMP_KEY)


@pytest.fixture
def user() -> User:
    return User.objects.create_user("ledger-scale")


@pytest.fixture
def now() -> dt.datetime:
    return timezone.now().replace(microsecond=0)


def record(person: User, at: dt.datetime, **fields: Any) -> None:
    values: dict[str, Any] = {
        "at": at,
        "state": "on-duty",
        "action": "pass",
        "origin": "chat",
        "user_id": person.pk,
    }
    values.update(fields)
    recorder.record(Entry(**values))


def _all_chunks(size: int, **kwargs: Any) -> list[int]:
    """Every id the export sends, chunk by chunk, as the page reads them."""
    sent: list[int] = []
    lines = ledger_page.export_chunk(**kwargs, size=size)
    while lines:
        sent.extend(line.id for line in lines)
        lines = ledger_page.export_chunk(**kwargs, after=(lines[-1].at, lines[-1].id), size=size)
    return sent


# ---- the export's keyset -------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_the_keyset_sends_each_row_once_across_equal_instants(
    user: User, now: dt.datetime, size: int
) -> None:
    """Runs of decisions at one instant straddle the chunks' edges: each row
    is sent once, none is lost, in the ledger's order (newest first, then the
    larger id), whatever the chunk's size; the session and action filters too."""
    other = User.objects.create_user("someone-else")
    for n in range(23):
        at = now - dt.timedelta(minutes=10) - dt.timedelta(seconds=n // 4)
        record(user, at, session="s" if n % 2 else "", action="clamp" if n % 3 else "pass")
        record(other, at)
    record(user, now - dt.timedelta(days=8))  # before the week: never sent
    recorder.flush()
    week = ledger_page.period_of(7, now=now, tz_name="Asia/Shanghai")
    mine = Decision.objects.filter(user=user, at__gte=week.since, at__lt=week.until)
    expected = list(mine.order_by("-at", "-id").values_list("id", flat=True))
    assert len(expected) == 23
    assert _all_chunks(size, user_id=user.pk, period=week) == expected
    session = list(mine.filter(session="s").order_by("-at", "-id").values_list("id", flat=True))
    assert _all_chunks(size, user_id=user.pk, period=week, session="s") == session
    clamps = list(mine.filter(action="clamp").order_by("-at", "-id").values_list("id", flat=True))
    assert _all_chunks(size, user_id=user.pk, period=week, action="clamp") == clamps


def test_a_chunk_after_a_row_is_one_row_value_comparison(user: User, now: dt.datetime) -> None:
    """``(at, id) < (%s, %s)``: the form a database bounds its index scan by,
    not the OR it reached PostgreSQL as before (a filter over all newer rows)."""
    week = ledger_page.period_of(7, now=now, tz_name="UTC")
    with CaptureQueriesContext(connection) as queries:
        ledger_page.export_chunk(user_id=user.pk, period=week, after=(now, 42))
    sql = queries.captured_queries[-1]["sql"]
    assert '("curfew_core_decision"."at", "curfew_core_decision"."id") < (' in sql
    assert " OR " not in sql


def _plan(queryset: Any) -> str:
    return str(queryset.explain())


def _export_query(user: User, now: dt.datetime, **filters: Any) -> Any:
    week = ledger_page.period_of(7, now=now, tz_name="UTC")
    rows = Decision.objects.filter(user_id=user.pk, at__gte=week.since)
    rows = rows.filter(ledger_page.RowBefore(now - dt.timedelta(hours=1), 10**9))
    if filters.get("session"):
        rows = rows.filter(Q(session=filters["session"]) & ~Q(session=""))
    return rows.order_by("-at", "-id").values_list("id")[:1000]


@on_postgres
def test_postgres_bounds_the_export_chunk_by_the_index(user: User, now: dt.datetime) -> None:
    """The chunk's "after this row" is an Index Cond of the index
    ``(user, at DESC, id DESC)``, with no Filter left: each chunk reads its own
    rows only. The old OR, as a control, is a Filter on the same index."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # an empty table: show the index's use
    week = ledger_page.period_of(7, now=now, tz_name="UTC")
    with CaptureQueriesContext(connection) as queries:
        ledger_page.export_chunk(user_id=user.pk, period=week, after=(now, 10**9))
    sql = queries.captured_queries[-1]["sql"]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "decision_user_at_id" in plan, plan
    assert "Index Cond" in plan, plan
    assert "ROW(at, id) < ROW(" in plan, plan
    assert "Filter" not in plan, plan
    # The control: the same page as an OR is only a filter over the index.
    old = Decision.objects.filter(
        Q(at__lt=now) | Q(at=now, id__lt=10**9),
        user_id=user.pk,
        at__gte=week.since,
        at__lt=week.until,
    ).order_by("-at", "-id")[:1000]
    assert "Filter: ((at <" in _plan(old)


@on_postgres
def test_postgres_serves_a_session_filter_by_its_partial_index(
    user: User, now: dt.datetime
) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    plan = _plan(_export_query(user, now, session="s1"))
    assert "decision_user_session" in plan, plan
    assert "Index Cond" in plan, plan
    assert "session" in plan.split("Index Cond", 1)[1], plan


# ---- the session filter ---------------------------------------------------------


def test_a_session_filter_is_read_from_its_own_index(user: User, now: dt.datetime) -> None:
    """Each read of one session (the page's decisions, hours, held minutes,
    the export, the API's page) names the partial index's condition, so the
    database may use ``decision_user_session`` (SQLite and PostgreSQL do; the
    plain ``session = %s`` could not prove it applies). The rows are that
    session's, and only the user's."""
    other = User.objects.create_user("another")
    for n in range(6):
        record(user, now - dt.timedelta(minutes=n), session="a" if n % 2 else "b")
        record(other, now - dt.timedelta(minutes=n), session="a")
    recorder.flush()
    week = ledger_page.period_of(7, now=now, tz_name="UTC")
    page = ledger_page.recent_decisions(user_id=user.pk, period=week, session="a")
    assert [line.session for line in page.lines] == ["a", "a", "a"]
    api = decisions_page(user_id=user.pk, session="a")
    assert [row["session_id"] for row in api.rows] == ["a", "a", "a"]
    assert decisions_page(user_id=user.pk, session="").rows == []
    hours = ledger_page.hours(user_id=user.pk, period=week, session="a")
    assert sum(cell.count for cell in hours.cells) == 3
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")  # a tiny table: show the index's use
    with CaptureQueriesContext(connection) as queries:
        ledger_page.recent_decisions(user_id=user.pk, period=week, session="a")
        ledger_page.hours(user_id=user.pk, period=week, session="a")
        ledger_page.minutes_held_off(user_id=user.pk, period=week, session="a")
        ledger_page.export_chunk(user_id=user.pk, period=week, session="a")
        decisions_page(user_id=user.pk, session="a")
    reads = [q["sql"] for q in queries.captured_queries if "'a'" in q["sql"]]
    assert len(reads) == 5
    for sql in reads:
        assert "decision_user_session" in _plan_of(sql), sql


def _plan_of(sql: str) -> str:
    explain = "EXPLAIN QUERY PLAN" if connection.vendor == "sqlite" else "EXPLAIN"
    with connection.cursor() as cursor:
        cursor.execute(f"{explain} {sql}")
        return "\n".join(str(row) for row in cursor.fetchall())


# ---- the prune, hourly ------------------------------------------------------------


def _old_and_new(user: User, now: dt.datetime) -> None:
    for n in range(5):
        record(user, now - dt.timedelta(days=40, minutes=n), action="short-circuit")
    record(user, now - dt.timedelta(days=2))
    recorder.flush()


def test_the_hourly_prune_goes_past_the_retention_and_keeps_the_hours(
    user: User, now: dt.datetime, settings: Any
) -> None:
    settings.CURFEW_LEDGER_RETENTION_DAYS = 30
    _old_and_new(user, now)
    hours_before = list(DecisionHour.objects.values_list("hour_start", "count"))
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 5
    assert Decision.objects.filter(user=user).count() == 1
    assert list(DecisionHour.objects.values_list("hour_start", "count")) == hours_before
    assert sum(count for _, count in hours_before) == 6


def test_a_process_prunes_at_most_once_an_hour(user: User, now: dt.datetime, settings: Any) -> None:
    settings.CURFEW_LEDGER_RETENTION_DAYS = 30
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 0
    _old_and_new(user, now)
    cache.delete(ledger_prune.STAMP_KEY)  # only this process's own clock holds it back
    assert ledger_prune.prune_if_due(now=now, clock=1000.0 + 3599) is None
    assert Decision.objects.filter(user=user).count() == 6
    assert ledger_prune.prune_if_due(now=now, clock=1000.0 + 3600) == 5


def test_another_process_that_pruned_this_hour_holds_the_others_back(
    user: User, now: dt.datetime, settings: Any
) -> None:
    """The stamp in the shared cache: N processes, one prune an hour."""
    settings.CURFEW_LEDGER_RETENTION_DAYS = 30
    _old_and_new(user, now)
    assert cache.add(ledger_prune.STAMP_KEY, 4242, timeout=3600)  # another process's
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) is None
    assert Decision.objects.filter(user=user).count() == 6
    cache.delete(ledger_prune.STAMP_KEY)
    ledger_prune.reset()
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 5  # the control


def test_a_cache_that_cannot_be_reached_does_not_stop_the_prune(
    user: User, now: dt.datetime, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CURFEW_LEDGER_RETENTION_DAYS = 30
    _old_and_new(user, now)

    def down(*args: Any, **kwargs: Any) -> bool:
        raise ConnectionError("cache down")

    monkeypatch.setattr(ledger_prune.cache, "add", down)
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 5


@on_postgres
def test_postgres_one_process_prunes_at_a_time(user: User, now: dt.datetime, settings: Any) -> None:
    """Another session holding the advisory lock (a process pruning now): this
    one skips, even with the cache stamp free; once it is let go, it prunes."""
    import psycopg

    settings.CURFEW_LEDGER_RETENTION_DAYS = 30
    _old_and_new(user, now)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        assert other.execute("SELECT pg_try_advisory_lock(%s)", [ledger_prune.LOCK_KEY]).fetchone()
        assert ledger_prune.prune_if_due(now=now, clock=1000.0) is None
        assert Decision.objects.filter(user=user).count() == 6
        other.execute("SELECT pg_advisory_unlock(%s)", [ledger_prune.LOCK_KEY])
    cache.delete(ledger_prune.STAMP_KEY)
    ledger_prune.reset()
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 5


def test_a_prune_deletes_in_bounded_batches_by_user(user: User, now: dt.datetime) -> None:
    """Each statement deletes at most ``batch`` rows (its own short
    transaction) of a group of users, read by ``user_id`` and ``at``: never
    one long delete over the whole table."""
    from curfew_core.services.ledger import decisions_prune

    for n in range(7):
        record(user, now - dt.timedelta(days=40, seconds=n))
    recorder.flush()
    with CaptureQueriesContext(connection) as queries:
        assert decisions_prune(before=now - dt.timedelta(days=30), batch=3) == 7
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 3  # 3 + 3 + 1
    assert all("LIMIT 3" in sql and '"user_id" IN (' in sql for sql in deletes)


def test_the_recorder_starts_the_pruner_with_its_flusher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that records decisions prunes too: the flusher's start starts
    the pruner (not with the flusher off, as in the tests)."""
    started: list[str] = []

    class FakeThread:
        def __init__(self, *, target: Any, name: str, daemon: bool) -> None:
            self.name = name

        def start(self) -> None:
            started.append(self.name)

    monkeypatch.setattr(recorder, "threading", SimpleNamespace(Thread=FakeThread))
    monkeypatch.setattr(recorder, "_watch_stop_signals", lambda: None)
    monkeypatch.setattr(recorder.ledger_prune, "start", lambda: started.append("pruner"))
    monkeypatch.setattr(recorder, "_started", False)
    monkeypatch.setattr(recorder, "_thread", None)
    monkeypatch.setattr(recorder, "_interval", lambda: 0.0)
    recorder._start()
    assert started == []  # the control: no flusher, no pruner
    monkeypatch.setattr(recorder, "_started", False)
    monkeypatch.setattr(recorder, "_interval", lambda: 1.0)
    recorder._start()
    assert started == ["curfew-ledger", "pruner"]


def test_the_prune_runs_on_its_own_thread_never_a_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``start`` returns at once; the prune runs on ``curfew-ledger-prune``
    while the caller goes on, however long it takes."""
    release = threading.Event()
    ran_on: list[str] = []

    def slow_prune(**kwargs: Any) -> int:
        ran_on.append(threading.current_thread().name)
        release.wait(10)
        return 0

    monkeypatch.setattr(ledger_prune, "prune_if_due", slow_prune)
    try:
        started = time.monotonic()
        ledger_prune.start(first_wait=0.0)
        assert time.monotonic() - started < 0.5
        deadline = time.monotonic() + 5
        while not ran_on and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran_on == ["curfew-ledger-prune"]
        ledger_prune.start(first_wait=0.0)  # once a process: no second thread
        time.sleep(0.05)
        assert ran_on == ["curfew-ledger-prune"]
    finally:
        release.set()
        ledger_prune.stop()
