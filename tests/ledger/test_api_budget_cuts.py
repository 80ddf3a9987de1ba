"""``/api/v1/savings`` says a budget cut as the page does (issue 39): tokens
not asked for, apart from the tokens and money saved."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from curfew_core.ledger.entry import Entry
from curfew_core.services import ledger_recorder as recorder
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def test_a_budget_cut_is_tokens_not_asked_for_not_money(api: ApiClient) -> None:
    at = datetime(2026, 9, 29, 2, 20, tzinfo=UTC)
    recorder.record(
        Entry(
            at=at,
            state="winding",
            action="clamp",
            origin="chat",
            user_id=api.user.pk,
            budget_before=32000,
            budget_after=2000,
        )
    )
    recorder.flush()
    body = api.get(
        "/api/v1/savings", data={"from": "2026-09-29T00:00:00Z", "to": "2026-09-30T00:00:00Z"}
    ).json()
    assert body["tokens_not_asked_for"] == 30000
    assert body["output_tokens_not_generated"] == 0
    assert body["money"] == 0.0
