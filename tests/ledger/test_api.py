"""``/api/v1/decisions`` (read and report) and ``/api/v1/savings``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from curfew_core.ledger.entry import Entry
from curfew_core.models import Decision, DecisionHour
from curfew_core.schema.decisions import MAX_BATCH
from curfew_core.services import ledger_recorder as recorder
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def report(n: int, **fields: Any) -> dict[str, Any]:
    at = timezone.now() - timedelta(minutes=10)
    return {
        "id": f"gw-{n}",
        "at": at.isoformat(),
        "state": "off-duty",
        "action": "short-circuit",
        "session_id": "chat-42",
        "reason": "off duty until 09:00",
        "budget_before": 4096,
        "budget_after": 0,
        **fields,
    }


def test_a_report_is_stored_once_however_often_it_is_sent(api: ApiClient) -> None:
    batch = {"decisions": [report(1), report(2)]}
    first = api.post("/api/v1/decisions", batch)
    assert first.status_code == 200, first.content
    assert first.json() == {"received": 2, "stored": 2}
    again = api.post("/api/v1/decisions", {"decisions": [report(2), report(3)]})
    assert again.json() == {"received": 2, "stored": 1}
    assert Decision.objects.filter(user=api.user, origin="gateway").count() == 3
    assert sum(DecisionHour.objects.values_list("requests_not_sent", flat=True)) == 3


def test_a_bad_report_names_the_field_and_stores_nothing(api: ApiClient) -> None:
    bad = api.post("/api/v1/decisions", {"decisions": [report(1), report(2, at="yesterday")]})
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid"
    assert list(bad.json()["fields"]) == ["decisions[1].at"]
    raised = api.post(
        "/api/v1/decisions",
        {"decisions": [report(1, action="clamp", budget_before=100, budget_after=200)]},
    )
    assert raised.status_code == 422
    assert list(raised.json()["fields"]) == ["decisions[0].budget_after"]
    ahead = (timezone.now() + timedelta(hours=1)).isoformat()
    future = api.post("/api/v1/decisions", {"decisions": [report(1, at=ahead)]})
    assert future.status_code == 422
    assert Decision.objects.count() == 0


def test_a_batch_is_bounded(api: ApiClient) -> None:
    too_many = api.post(
        "/api/v1/decisions", {"decisions": [report(n) for n in range(MAX_BATCH + 1)]}
    )
    assert too_many.status_code == 400
    assert "decisions" in too_many.json()["fields"]
    empty = api.post("/api/v1/decisions", {"decisions": []})
    assert empty.status_code == 400
    assert Decision.objects.count() == 0


def test_decisions_are_paged_and_filtered(api: ApiClient, other_api: ApiClient) -> None:
    t0 = datetime(2026, 9, 29, 15, 0, tzinfo=UTC)
    for n in range(5):
        recorder.record(
            Entry(
                at=t0 + timedelta(minutes=n),
                state="winding",
                action="clamp" if n % 2 else "pass",
                origin="chat",
                user_id=api.user.pk,
                session="a" if n < 3 else "b",
            )
        )
    recorder.record(
        Entry(at=t0, state="on-duty", action="pass", origin="chat", user_id=other_api.user.pk)
    )
    recorder.flush()
    page = api.get("/api/v1/decisions", data={"per_page": 2}).json()
    assert [row["at"] for row in page["decisions"]] == [
        (t0 + timedelta(minutes=4)).isoformat(),
        (t0 + timedelta(minutes=3)).isoformat(),
    ]
    assert page["next_page"] == 2
    last = api.get("/api/v1/decisions", data={"per_page": 2, "page": 3}).json()
    assert (len(last["decisions"]), last["next_page"]) == (1, None)
    clamps = api.get("/api/v1/decisions", data={"action": "clamp"}).json()["decisions"]
    assert {row["action"] for row in clamps} == {"clamp"}
    assert len(clamps) == 2
    b = api.get("/api/v1/decisions", data={"session_id": "b"}).json()["decisions"]
    assert len(b) == 2
    ranged = api.get(
        "/api/v1/decisions",
        data={
            "from": (t0 + timedelta(minutes=1)).isoformat(),
            "to": (t0 + timedelta(minutes=3)).isoformat(),
        },
    ).json()["decisions"]
    assert len(ranged) == 2
    # Each token sees its own user's decisions only.
    assert len(other_api.get("/api/v1/decisions").json()["decisions"]) == 1


@pytest.mark.parametrize(
    ("query", "field", "status"),
    [
        ({"action": "nap"}, "action", 400),
        ({"sessoin": "b"}, "sessoin", 400),
        ({"page": "0"}, "page", 400),
        ({"per_page": "201"}, "per_page", 400),
        ({"from": "monday"}, "from", 400),
        ({"from": "2026-09-30T00:00:00Z", "to": "2026-09-29T00:00:00Z"}, "from", 422),
    ],
)
def test_bad_queries_are_named(
    api: ApiClient, query: dict[str, str], field: str, status: int
) -> None:
    answer = api.get("/api/v1/decisions", data=query)
    assert answer.status_code == status
    assert field in answer.json()["fields"]


def test_savings_in_a_range(api: ApiClient) -> None:
    t0 = datetime(2026, 9, 29, 2, 10, tzinfo=UTC)  # peak: full price
    for _n in range(4):
        recorder.record(
            Entry(
                at=datetime(2026, 9, 29, 2, 20, tzinfo=UTC),
                state="on-duty",
                action="pass",
                origin="chat",
                user_id=api.user.pk,
                input_tokens=1000,
                output_tokens=500,
            )
        )
    for _n in range(2):
        recorder.record(
            Entry(
                at=t0, state="off-duty", action="short-circuit", origin="chat", user_id=api.user.pk
            )
        )
    recorder.flush()
    answer = api.get(
        "/api/v1/savings", data={"from": "2026-09-29T00:00:00Z", "to": "2026-09-30T00:00:00Z"}
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["from"] == "2026-09-29T00:00:00+00:00"
    assert (body["decisions"], body["requests_not_sent"]) == (6, 2)
    assert body["money"] == pytest.approx(0.0018)  # as in test_savings: 2 typical calls at peak
    assert body["currency"] == "USD"
    assert body["typical_call"] == {"input_tokens": 1000.0, "output_tokens": 500.0}
    empty = api.get("/api/v1/savings", data={"to": "2026-09-29T00:00:00Z"}).json()
    assert (empty["decisions"], empty["money"], empty["typical_call"]) == (0, 0.0, None)


def test_a_database_outage_is_the_apis_json_503(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import OperationalError

    from curfew_core.api import ledger_views

    def down(**kwargs: Any) -> Any:
        raise OperationalError("database unreachable")

    for name in ("decisions_write", "decisions_page", "savings_between"):
        monkeypatch.setattr(ledger_views, name, down)
    answers = [
        api.post("/api/v1/decisions", {"decisions": [report(1)]}),
        api.get("/api/v1/decisions"),
        api.get("/api/v1/savings"),
    ]
    for answer in answers:
        assert answer.status_code == 503
        assert answer.json()["error"] == "unavailable"
        assert answer["Retry-After"]
