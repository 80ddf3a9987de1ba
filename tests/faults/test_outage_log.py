"""An outage is said once, not once per request (issue 41).

A three-second PostgreSQL cut under load (``tests/production/
test_postgres_gone_under_load.py``) wrote 4,400 log lines and 66 tracebacks
for two workers: a warning per warm verdict answered from the last known
rows, a traceback and Django's own line per 503. Here each door is asked
many times while the database is down, and says so once (``store.outage_log``).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError

from curfew_core.store.outage_log import Notice
from curfew_testkit.asgi_client import Client
from tests.api.test_cache_after_commit import BOUND, Wall, refusing_cache, wall
from tests.conftest import ApiClient

__all__ = ["refusing_cache", "wall"]  # fixtures, shared

TIMES = 12


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's outage is its own (a notice remembers one for a minute)."""
    import curfew_core.edge.app
    import curfew_core.edge.outage
    import curfew_core.selectors.bundles
    import curfew_core.selectors.tokens

    for module in (
        curfew_core.edge.app,
        curfew_core.edge.outage,
        curfew_core.selectors.bundles,
        curfew_core.selectors.tokens,
    ):
        for name, value in list(vars(module).items()):
            if isinstance(value, Notice):
                monkeypatch.setattr(module, name, Notice(value.log, value.level))


def _down(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("connection refused")


def _lines(caplog: pytest.LogCaptureFixture, *words: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if any(word in record.getMessage() for word in words)
    ]


@pytest.mark.django_db(transaction=True)
def test_warm_verdicts_answered_through_an_outage_say_it_once(
    api: ApiClient,
    refusing_cache: None,
    wall: Wall,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert api.post("/api/v1/verdict", {}).status_code == 200
    wall.advance(BOUND + 0.01)
    with monkeypatch.context() as down:
        down.setattr("django.db.models.query.QuerySet._fetch_all", _down)
        down.setattr("django.db.models.query.QuerySet.update", _down)
        # The cold path's one query, compiled once (``bundles.compiled_rows``).
        down.setattr("curfew_core.selectors.bundles.compiled_rows", _down)
        with caplog.at_level(logging.WARNING):
            for _ in range(TIMES):
                assert api.post("/api/v1/verdict", {}).status_code == 200
    said = _lines(caplog, "database unreachable", "could not stamp")
    # One line per place that answers from the last known rows, not per verdict.
    assert 1 <= len(said) <= 3, said
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert api.post("/api/v1/verdict", {}).status_code == 200
    assert _lines(caplog, "database readable again"), caplog.text


@pytest.mark.django_db(transaction=True)
def test_api_saves_refused_in_an_outage_say_it_once(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    # The edge's token check, as every API route's (issue 43).
    monkeypatch.setattr("curfew_core.edge.caller.resolve", down)
    with caplog.at_level(logging.WARNING):
        for _ in range(TIMES):
            response = api.client.patch(
                "/api/v1/schedule", {"off_duty_reply": "x"}, content_type="application/json"
            )
            assert response.status_code == 503
            assert response["Retry-After"].isdigit()
    said = _lines(caplog, "storage unavailable", "Service Unavailable")
    assert len(said) == 1, said
    assert sum(bool(record.exc_info) for record in caplog.records) == 1  # its traceback


@pytest.mark.django_db(transaction=True)
def test_pages_refused_in_an_outage_say_it_once(
    user: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    page = Client()
    page.force_login(user)
    monkeypatch.setattr("django.db.models.query.QuerySet._fetch_all", _down)
    with caplog.at_level(logging.WARNING):
        for _ in range(TIMES):
            response = page.get("/schedule/")
            assert response.status_code == 503
            assert response["Content-Type"].startswith("text/html")
    said = _lines(caplog, "storage unavailable", "Service Unavailable")
    assert len(said) == 1, said


def test_a_long_outage_is_said_again_with_a_count_and_its_end_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [1000.0]
    notice = Notice(logging.getLogger("curfew.test"), clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        for n in range(65):  # one failure a second, for 65 s
            notice.failed("db down (%s)", n)
            now[0] += 1
        notice.over("db readable")
        notice.over("db readable")
        now[0] += 1
        notice.failed("db down (%s)", "again")  # a new outage
    assert [record.getMessage() for record in caplog.records] == [
        "db down (0)",
        "db down (60) (still; 59 more since)",
        "db readable again after 65.0 s (65 failures meanwhile)",
        "db down (again)",
    ]
