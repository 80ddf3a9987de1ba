"""Schedules saved before ``exempt_purposes`` existed keep working: the
missing key reads as the default (``with_defaults``; no data migration), and
nothing the user saved is lost when they next change it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.models import AuditEntry, Schedule, ScheduleRevision
from curfew_core.schedules.config import DEFAULTS

FOUR_AM = "2026-09-30T04:00:00+08:00"


def _old_row(user: User) -> dict[str, Any]:
    """A row as a build without the setting saved it (and its revision)."""
    config = {key: value for key, value in DEFAULTS.items() if key != "exempt_purposes"}
    config.update(curve="step", off_duty_reply="Not now.", exempt_sessions=["long-job"])
    row = Schedule.objects.create(user=user, config=config, version=3)
    ScheduleRevision.objects.create(schedule=row, version=3, config=config, source="api")
    return config


def _verdict(api: Any, purpose: str) -> dict[str, Any]:
    response = api.post("/api/v1/verdict", {"at": FOUR_AM, "purpose": purpose})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.django_db
def test_an_old_row_reads_the_default_and_decides_by_it(api: Any, user: User) -> None:
    old = _old_row(user)
    body = api.get("/api/v1/schedule").json()
    assert body["exempt_purposes"] == ["title", "compaction", "summary"]
    assert body["curve"] == "step"
    assert body["exempt_sessions"] == ["long-job"]
    assert _verdict(api, "title")["action"] == "pass"
    assert _verdict(api, "anything")["action"] == "short-circuit"
    # Reading changed nothing stored.
    assert Schedule.objects.get(user=user).config == old


@pytest.mark.django_db
def test_changing_it_on_an_old_row_keeps_everything_else(api: Any, user: User) -> None:
    old = _old_row(user)
    response = api.patch("/api/v1/schedule", {"exempt_purposes": ["compaction"], "version": 3})
    assert response.status_code == 200, response.content
    row = Schedule.objects.get(user=user)
    assert row.version == 4
    # Every setting kept, and the curve's places written beside them (issue 39).
    assert row.config == {
        **old,
        "exempt_purposes": ["compaction"],
        "anchor_positions": ["0", "1/4", "1/2", "3/4", "1"],
    }
    # The earlier save is still on record, as it was.
    revisions = {r.version: r.config for r in ScheduleRevision.objects.filter(schedule=row)}
    assert revisions[3] == old
    assert revisions[4] == row.config
    entry = AuditEntry.objects.filter(user=user, subject=AuditEntry.Subject.SCHEDULE).latest("id")
    assert entry.changes["fields"] == {
        "exempt_purposes": {"old": ["title", "compaction", "summary"], "new": ["compaction"]}
    }
    assert _verdict(api, "title")["action"] == "short-circuit"
    assert _verdict(api, "compaction")["action"] == "pass"
