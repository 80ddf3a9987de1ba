"""Every number a door takes fits the ledger's columns (issue 23, finding 1).

``POST /api/v1/verdict`` with ``{"max_tokens": 2147483648}`` was answered 200
and left a row PostgreSQL's ``integer`` column refuses (on SQLite ``2**63``
overflowed the driver): every flush of that worker then failed. The verdict
door now refuses a budget the ledger cannot store, naming the field; the
proxy, which only relays a client's budget and an upstream's usage, records
them capped at what is stored. Each test then checks that another user's
decision is still written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.db.backends.base.operations import BaseDatabaseOperations

from curfew_core.ledger.entry import MAX_STORED
from curfew_core.models import Decision
from curfew_core.proxy.usage import UsageScan, asked_budget
from curfew_core.services import ledger_recorder as recorder

pytestmark = pytest.mark.django_db

#: Beyond PostgreSQL's integer, beyond SQLite's (and int64), and a float the
#: JSON reader gives as a whole number.
BEYOND = [2**31, 2**63, 10**30, 1e308]


def test_the_bound_is_what_every_database_stores() -> None:
    # Django's own range for the ledger's columns (PositiveIntegerField) on
    # the strictest database it runs on: PostgreSQL's integer.
    low, high = BaseDatabaseOperations.integer_field_ranges["PositiveIntegerField"]
    assert (low, high) == (0, MAX_STORED)
    for field in ("budget_before", "budget_after", "input_tokens", "output_tokens"):
        internal = Decision._meta.get_field(field).get_internal_type()
        assert internal == "PositiveIntegerField", field


@pytest.mark.parametrize("budget", BEYOND)
def test_the_verdict_door_refuses_a_budget_the_ledger_cannot_store(
    api: Any, other_api: Any, budget: float
) -> None:
    response = api.post("/api/v1/verdict", raw=f'{{"max_tokens": {budget}}}')
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body["fields"]) == {"max_tokens"}
    assert str(MAX_STORED) in body["fields"]["max_tokens"]
    assert recorder.pending() == 0  # nothing to poison the batch
    # Another user's decision is written as ever.
    assert other_api.post("/api/v1/verdict", {"max_tokens": 4096}).status_code == 200
    assert recorder.flush() == 1
    assert list(Decision.objects.values_list("user_id", flat=True)) == [other_api.user.pk]


def test_the_largest_budget_the_verdict_door_takes_is_stored(api: Any) -> None:
    response = api.post("/api/v1/verdict", {"max_tokens": MAX_STORED})
    assert response.status_code == 200, response.content
    assert recorder.flush() == 1
    assert Decision.objects.get().budget_before == MAX_STORED


def test_the_documented_maximum_is_the_one_enforced(api: Any) -> None:
    document = api.get("/api/v1/openapi.json").json()
    schema = document["components"]["schemas"]["VerdictRequest"]["properties"]["max_tokens"]
    [number] = [option for option in schema["anyOf"] if option.get("type") == "integer"]
    assert (number["minimum"], number["maximum"]) == (1, MAX_STORED)


@pytest.mark.parametrize("budget", [2**31, 2**63, 10**30])
def test_a_proxied_budget_is_recorded_within_what_is_stored(budget: int) -> None:
    # The proxy relays the client's body as it is (the upstream judges its
    # own limits); only the ledger's copy of the number is capped.
    assert asked_budget({"max_tokens": budget}) == MAX_STORED
    assert asked_budget({"max_tokens": budget, "max_completion_tokens": 500}) == 500
    assert asked_budget({"max_tokens": MAX_STORED}) == MAX_STORED


@pytest.mark.parametrize("sse", [False, True])
@pytest.mark.parametrize("number", [2**31, 2**63, 10**30])
def test_an_upstreams_usage_is_recorded_within_what_is_stored(sse: bool, number: int) -> None:
    usage = {"prompt_tokens": number, "completion_tokens": number}
    payload = json.dumps({"usage": usage}).encode()
    scan = UsageScan(sse=sse)
    scan.feed(b"data: " + payload + b"\n\n" if sse else payload)
    assert scan.tokens == (MAX_STORED, MAX_STORED)


def test_the_database_stores_the_bound(user: Any) -> None:
    """The control for the caps above: ``MAX_STORED`` itself is written on
    this database, in every column that holds a number."""
    from django.utils import timezone

    from curfew_core.ledger.entry import Entry

    recorder.record(
        Entry(
            at=timezone.now(),
            state="on-duty",
            action="pass",
            origin="chat",
            user_id=user.pk,
            budget_before=MAX_STORED,
            budget_after=MAX_STORED,
            input_tokens=MAX_STORED,
            output_tokens=MAX_STORED,
        )
    )
    assert recorder.flush() == 1, connection.vendor


def test_a_gateways_report_is_bounded_within_what_is_stored() -> None:
    from curfew_core.schema.decisions import MAX_TOKENS

    assert MAX_TOKENS <= MAX_STORED
