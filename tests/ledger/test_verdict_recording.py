"""The verdict API records each verdict a gateway asked for (issue 14), from
either door (Django's view and the lean route), in the buffer only: zero
queries on the request; a what-if for another moment is not a decision."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_core.models import Decision
from curfew_core.services import ledger_recorder as recorder

pytestmark = pytest.mark.django_db

WINDING = "2026-09-29T23:30:00+08:00"


def test_a_verdict_is_one_ledger_line(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime

    from django.utils import timezone

    monkeypatch.setattr(timezone, "now", lambda: datetime.fromisoformat(WINDING))
    response = api.post(
        "/api/v1/verdict", {"max_tokens": 4096, "session_id": "s-1", "purpose": "chat"}
    )
    assert response.status_code == 200, response.content
    assert Decision.objects.count() == 0  # buffered, not written on the request
    assert recorder.flush() == 1
    [row] = Decision.objects.all()
    assert (row.user_id, row.origin, row.session, row.purpose) == (
        api.user.id,
        "verdict",
        "s-1",
        "chat",
    )
    assert (row.state, row.action) == ("winding", "clamp")
    assert (row.budget_before, row.budget_after) == (4096, response.json()["max_tokens"])
    assert row.reason == response.json()["reason"]


def test_a_what_if_is_not_recorded(api: Any) -> None:
    response = api.post("/api/v1/verdict", {"at": WINDING, "max_tokens": 4096})
    assert response.status_code == 200
    assert recorder.flush() == 0
    # Control: the same call without ``at`` is.
    assert api.post("/api/v1/verdict", {"max_tokens": 4096}).status_code == 200
    assert recorder.flush() == 1


def test_warm_verdicts_record_without_a_query(api: Any, django_assert_num_queries: Any) -> None:
    assert api.post("/api/v1/verdict", {}).status_code == 200  # warm the caches
    with django_assert_num_queries(0):
        for _ in range(5):
            assert api.post("/api/v1/verdict", {}).status_code == 200
    assert recorder.pending() == 6
    assert recorder.flush() == 6


def test_state_reads_are_not_decisions(api: Any) -> None:
    assert api.get("/api/v1/state").status_code == 200
    assert recorder.flush() == 0


def test_no_ledger_when_it_is_off(api: Any, settings: Any) -> None:
    settings.CURFEW_LEDGER = False
    assert api.post("/api/v1/verdict", {}).status_code == 200
    assert recorder.pending() == 0
    settings.CURFEW_LEDGER = True  # control
    assert api.post("/api/v1/verdict", {}).status_code == 200
    assert recorder.pending() == 1
