"""``/readyz`` says an outage once, not once per probe (issue 41, the
PostgreSQL try: a balancer probing every few seconds wrote a line each time,
the one part of the log the outage-once rule had not reached)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client

from curfew_core.health import views
from curfew_core.store.outage_log import Notice


@pytest.fixture
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "_database", Notice(views.log))


def _down(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("connection refused")


@pytest.mark.django_db
def test_an_outage_is_said_once_and_its_end_once(
    fresh_notices: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client()
    assert client.get("/readyz").status_code == 200  # the control: ready, nothing said
    caplog.set_level(logging.INFO, logger="curfew.health")
    assert not caplog.records
    with monkeypatch.context() as patched:
        patched.setattr(views, "_database_answers", _down)
        answers = [client.get("/readyz") for _ in range(20)]
    assert {answer.status_code for answer in answers} == {503}
    assert answers[0].json()["database"] == "unreachable"
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1, said
    assert "database unreachable" in said[0]
    assert client.get("/readyz").status_code == 200
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2, said
    assert "reachable again" in said[1]
