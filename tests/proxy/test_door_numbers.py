"""Every door that takes a number, at the extremes and one beyond (issue 23).

One request's ``max_tokens`` of 2**31 once stopped a worker's ledger for every
user. So each number a door takes is sent at the bounds its schema allows, one
beyond each, the bounds of the databases' integers, and anything hypothesis
finds; then another user's decision must still be recorded, and no row of the
batch may have been refused by the database (the flush's split would rescue
the batch, but a door must not let such a number in at all):

- the verdict API's ``max_tokens`` (the document's bounds: fits, or a 400);
- a gateway's report: its budgets and usage (the document's bounds);
- the proxy: a body's budget under each protocol's name, and the usage an
  upstream's answer reports (relayed as they are; the ledger's copy capped);
- the schedule's ``safety_max_tokens``, which clamps an off-duty verdict.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from curfew_core.ledger.entry import MAX_STORED
from curfew_core.models import Decision
from curfew_core.schedules.declaration import ScheduleSettings
from curfew_core.schema.decisions import DecisionReport
from curfew_core.schema.verdict_request import VerdictRequestBody
from curfew_core.services import ledger_recorder as recorder
from curfew_testkit import fake_anthropic, fake_openai_more, fake_upstream
from curfew_testkit.asgi_client import Client
from tests.proxy.inprocess import token_at

pytestmark = pytest.mark.django_db

EXAMPLES = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
T = TypeVar("T")
_sessions = itertools.count()


#: A bound the document leaves open stands for any number a client may send.
UNBOUNDED = 10**40


def bounds(model: type[BaseModel], field: str) -> tuple[int, int]:
    """The integer range the served document gives ``field``: what the door
    promises to take (and so what the ledger must be able to store)."""
    schema = model.model_json_schema()["properties"][field]
    [number] = [o for o in schema.get("anyOf", [schema]) if o.get("type") == "integer"]
    return number.get("minimum", -UNBOUNDED), number.get("maximum", UNBOUNDED)


def extremes(low: int, high: int) -> list[float]:
    """The bounds, one beyond each, as whole floats too, and the integers'
    bounds of every database (PostgreSQL's integer and bigint, SQLite's)."""
    values: list[float] = [low, high, low - 1, high + 1, float(high), float(high + 1)]
    values += [MAX_STORED, MAX_STORED + 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 1e308, -1]
    return list(dict.fromkeys(values))


def numbers(low: int, high: int) -> st.SearchStrategy[float]:
    return st.one_of(
        st.sampled_from(extremes(low, high)),
        st.integers(low - 3, high + 3),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
    )


def at_extremes(low: int, high: int) -> Callable[[T], T]:
    """Every extreme as an explicit example (always run), beside what
    ``numbers`` draws."""

    def decorate(test: T) -> T:
        for value in extremes(low, high):
            test = example(value=value)(test)  # type: ignore[assignment]
        return test

    return decorate


def whole(value: float) -> int | None:
    if isinstance(value, int):
        return value
    return int(value) if value.is_integer() else None


def fits(value: float, low: int, high: int) -> bool:
    number = whole(value)
    return number is not None and low <= number <= high


def session() -> str:
    return f"s-{next(_sessions)}"


class Api:
    def __init__(self, token: str) -> None:
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def send(self, method: str, path: str, raw: str, **headers: str) -> Any:
        return getattr(self.client, method)(path, raw, content_type="application/json", **headers)


@pytest.fixture
def others() -> Iterator[Callable[[], None]]:
    """Checks that another user's verdict is recorded, and that nothing the
    database refused was in the batch."""
    other = Api(token_at("other", "20:00"))
    refused = recorder.refused

    def recorded() -> None:
        mine = session()
        answer = other.send("post", "/api/v1/verdict", json.dumps({"session_id": mine}))
        assert answer.status_code == 200, answer.content
        recorder.flush()
        assert Decision.objects.filter(session=mine).count() == 1
        assert recorder.refused == refused, "a door let in a number the database refused"

    recorder.discard()
    yield recorded
    recorder.discard()


VERDICT = bounds(VerdictRequestBody, "max_tokens")


@EXAMPLES
@at_extremes(*VERDICT)
@given(value=numbers(*VERDICT))
def test_the_verdict_doors_budget(others: Callable[[], None], value: float) -> None:
    api = Api(token_at(f"v{next(_sessions)}", "20:00"))
    mine = session()
    body = json.dumps({"max_tokens": value, "session_id": mine})
    answer = api.send("post", "/api/v1/verdict", body)
    if fits(value, *VERDICT):
        assert answer.status_code == 200, answer.content
    else:
        assert answer.status_code == 400, answer.content
        assert set(answer.json()["fields"]) == {"max_tokens"}
    others()
    stored = list(Decision.objects.filter(session=mine).values_list("budget_before", flat=True))
    assert stored == ([whole(value)] if fits(value, *VERDICT) else [])


REPORTED = ("budget_before", "budget_after", "input_tokens", "output_tokens")
REPORT = bounds(DecisionReport, "budget_before")


@pytest.mark.parametrize("field", REPORTED)
@EXAMPLES
@at_extremes(*REPORT)
@given(value=numbers(*REPORT))
def test_a_gateways_reported_numbers(others: Callable[[], None], field: str, value: float) -> None:
    assert bounds(DecisionReport, field) == REPORT
    api = Api(token_at(f"r{next(_sessions)}", "20:00"))
    mine = session()
    report = {
        "id": mine,
        "at": timezone.now().isoformat(),
        "state": "on-duty",
        "action": "pass",
        "session_id": mine,
        field: value,
    }
    answer = api.send("post", "/api/v1/decisions", json.dumps({"decisions": [report]}))
    if fits(value, *REPORT):
        assert answer.status_code == 200, answer.content
    else:
        assert answer.status_code == 400, answer.content
        assert set(answer.json()["fields"]) == {f"decisions[0].{field}"}
    others()
    stored = list(Decision.objects.filter(session=mine).values_list(field, flat=True))
    assert stored == ([whole(value)] if fits(value, *REPORT) else [])


def recorded_budget(value: float) -> int | None:
    """What the proxy records of a budget it relays: a positive whole JSON
    integer, capped at what the ledger stores; anything else is unknown."""
    if not isinstance(value, int) or value < 1:
        return None
    return min(value, MAX_STORED)


def recorded_usage(value: float) -> int | None:
    if not isinstance(value, int) or value < 0:
        return None
    return min(value, MAX_STORED)


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
DOORS = {
    "chat": ("/v1/chat/completions", CHAT),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 16, **CHAT}),
    "completions": ("/v1/completions", {"model": "m", "prompt": "hi"}),
}
BUDGETS = [
    ("chat", "max_tokens"),
    ("chat", "max_completion_tokens"),
    ("responses", "max_output_tokens"),
    ("messages", "max_tokens"),
    ("completions", "max_tokens"),
]
PROXIED = (1, MAX_STORED)


def proxied(door: str, body: dict[str, Any], mine: str) -> Decision:
    api = Api(token_at(f"p{next(_sessions)}", "20:00"))  # on duty: relayed as sent
    path, _ = DOORS[door]
    answer = api.send("post", path, json.dumps(body), HTTP_X_CURFEW_SESSION=mine)
    assert answer.status_code == 200, answer.content
    assert answer["X-Curfew-Action"] == "pass"
    recorder.flush()
    return Decision.objects.get(session=mine)


@pytest.mark.parametrize(("door", "field"), BUDGETS)
@EXAMPLES
@at_extremes(*PROXIED)
@given(value=numbers(*PROXIED))
def test_a_proxied_budget(
    both_upstreams: None, others: Callable[[], None], door: str, field: str, value: float
) -> None:
    mine = session()
    row = proxied(door, {**DOORS[door][1], field: value}, mine)
    assert row.budget_before == recorded_budget(value)
    others()


USAGES = {
    "chat": (fake_upstream.USAGE, "prompt_tokens", "completion_tokens"),
    "responses": (fake_openai_more.RESPONSES_USAGE, "input_tokens", "output_tokens"),
    "messages": (fake_anthropic.USAGE, "input_tokens", "output_tokens"),
    "completions": (fake_openai_more.COMPLETIONS_USAGE, "prompt_tokens", "completion_tokens"),
}
USAGE = (0, MAX_STORED)


@pytest.mark.parametrize("door", sorted(USAGES))
@EXAMPLES
@at_extremes(*USAGE)
@given(value=numbers(*USAGE))
def test_an_upstreams_usage(
    both_upstreams: None, others: Callable[[], None], door: str, value: float
) -> None:
    usage, given_in, given_out = USAGES[door]
    saved = dict(usage)
    usage[given_in] = value
    usage[given_out] = value
    try:
        row = proxied(door, dict(DOORS[door][1]), session())
    finally:
        usage.clear()
        usage.update(saved)
    assert (row.input_tokens, row.output_tokens) == (recorded_usage(value),) * 2
    others()


CAP = bounds(ScheduleSettings, "safety_max_tokens")


@EXAMPLES
@at_extremes(*CAP)
@given(value=numbers(*CAP))
def test_the_schedules_safety_cap(
    others: Callable[[], None], django_capture_on_commit_callbacks: Any, value: float
) -> None:
    # 10:00 on a Tuesday is peak: off duty, where the cap clamps the verdict.
    api = Api(token_at(f"c{next(_sessions)}", "10:00"))
    # The save's after-commit refresh runs, as it does once a real commit is
    # made: the edge read (and cached) the rows before the save to check the token.
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.send("patch", "/api/v1/schedule", json.dumps({"safety_max_tokens": value}))
    assert answer.status_code == (200 if fits(value, *CAP) else 400), answer.content
    mine = session()
    body = json.dumps({"session_id": mine, "max_tokens": MAX_STORED})
    verdict = api.send("post", "/api/v1/verdict", body)
    assert verdict.status_code == 200
    assert verdict.json()["max_tokens"] == (whole(value) if fits(value, *CAP) else None)
    others()
    row = Decision.objects.get(session=mine)
    assert (row.action, row.budget_before, row.budget_after) == ("short-circuit", MAX_STORED, 0)
