"""The cold path's one query is prepared on each PostgreSQL connection (issue 40).

Planning its join of seven tables cost PostgreSQL about 20 times what running
it did; ``selectors.prepared`` binds it on the server, so psycopg prepares it
on a connection's first run and runs the prepared statement after. Held on
PostgreSQL (CI's suite): the statement is in ``pg_prepared_statements`` after
one cold read, still one after many, and never with the setting off (the
control: the same reads through Django's own cursor). On every database: the
query answers what the ORM's own query does, and goes through Django's
wrapper (what counts and wraps queries sees it).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curfew_core.selectors import bundles, prepared
from curfew_core.selectors.bundles import _user_rows
from curfew_core.selectors.tokens import _token_rows, digest
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create

pytestmark = pytest.mark.django_db

on_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's prepared statements (DATABASE_URL)"
)


def _joined_statements() -> int:
    """This connection's prepared statements that read the tokens' join."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "curfew_core_apitoken"%JOIN%'],
        )
        (count,) = cursor.fetchone()
    return int(count)


def _none_prepared() -> None:
    """This connection's prepared statements dropped: a pooled connection
    keeps its server session, and an earlier test's, from test to test
    (psycopg forgets its own record of them on seeing the command)."""
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    assert _joined_statements() == 0


def _raws(n: int) -> list[str]:
    return [token_create(user=User.objects.create_user(f"cold-{i}"), name="t")[1] for i in range(n)]


@on_postgres
def test_the_token_join_is_prepared_once_on_a_connection() -> None:
    raws = _raws(3)
    _none_prepared()
    for raw in raws * 2:
        assert bundles.compiled_rows("token-rows", _token_rows, digest(raw))
    assert _joined_statements() == 1  # prepared, once: not once a read


@on_postgres
def test_with_the_setting_off_nothing_is_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "prepare_threshold", None)
    assert not prepared.prepares(connection)
    raws = _raws(3)
    _none_prepared()
    for raw in raws * 2:
        assert bundles.compiled_rows("token-rows", _token_rows, digest(raw))
    assert _joined_statements() == 0


@on_postgres
def test_the_setting_is_on_by_default() -> None:
    assert prepared.prepares(connection)
    assert connection.settings_dict["OPTIONS"]["prepare_threshold"] == 0


@pytest.mark.parametrize(
    ("name", "build", "value"),
    [
        ("token-rows", _token_rows, lambda raw, user: digest(raw)),
        ("user-rows", _user_rows, lambda raw, user: user.pk),
    ],
)
def test_the_prepared_query_reads_what_the_orm_reads(name: str, build: Any, value: Any) -> None:
    user = User.objects.create_user("reader")
    schedule_update(
        user=user,
        changes={"timezone": "Europe/Paris", "weekdays": {"fri": {"curfew_start": "23:30"}}},
        source="test",
    )
    _, raw = token_create(user=user, name="t")
    asked = value(raw, user)
    orm = list(build(asked))
    # The saved schedule is in the row (not a row of nothing but NULLs).
    assert any(isinstance(v, dict) and v.get("timezone") == "Europe/Paris" for v in orm[0])
    for _ in range(2):  # the first run prepares it, the second runs the prepared one
        assert [tuple(row) for row in bundles.compiled_rows(name, build, asked)] == orm


def test_the_query_goes_through_djangos_wrapper() -> None:
    user = User.objects.create_user("watched")
    _, raw = token_create(user=user, name="t")
    seen: list[str] = []

    def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(watch):
        bundles.compiled_rows("token-rows", _token_rows, digest(raw))
    assert len(captured.captured_queries) == 1
    assert len(seen) == 1
    assert '"curfew_core_apitoken"' in seen[0]
