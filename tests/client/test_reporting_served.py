"""The gateway client's decision reports against the real app: they land in the
ledger once each, even when a report is sent twice (its answer lost), and what
the client sends validates against the served OpenAPI document (the client
cannot import the server's model: this is what keeps the two from drifting)."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
import jsonschema
from curfew_client import CurfewClient
from curfew_client.reporting import MAX_BATCH, report_of

from curfew_testkit.server import ServedApp
from tests.client.fake_curfew import FakeCurfew
from tests.client.test_client import OFF_DUTY, SCHEDULE, WINDING


class LosesTheFirstAnswer(httpx.HTTPTransport):
    """Delivers every request, but the first report's answer never arrives
    (the server stored it; the client cannot know)."""

    def __init__(self) -> None:
        super().__init__()
        self.reports: list[bytes] = []
        self.answers: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path.endswith("/decisions"):
            self.reports.append(request.content)
            response.read()
            self.answers.append(response.json())
            if len(self.reports) == 1:
                raise httpx.ReadError("connection lost", request=request)
        return response


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_reported_decisions_land_in_the_ledger_once_after_a_retry(api_app: ServedApp) -> None:
    token = api_app.create_user(f"client-ledger-{secrets.token_hex(4)}")  # a reused database too
    answer = httpx.post(
        f"{api_app.base_url}/api/v1/overrides",
        json={"debug": "2026-09-29 23:30"},  # winding: the calls are clamped
        headers=_auth(token),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    transport = LosesTheFirstAnswer()
    with CurfewClient(
        api_app.base_url, token, transport=transport, report_interval=3600, timeout=10
    ) as client:
        asked = client.verdict(session_id="ledger-s", max_tokens=4096)
        assert asked.action == "clamp"
        for _ in range(5):
            assert client.verdict(session_id="ledger-s", max_tokens=4096) is asked
        client.flush_reports()  # stored, but the answer is lost: retried later
        reports = client.reports
        assert reports is not None
        assert (reports.delivered, reports.waiting) == (0, 5)
    # close() sent it again: the same ids, nothing new stored.
    assert len(transport.reports) == 2
    assert transport.reports[0] == transport.reports[1]
    assert transport.answers == [{"received": 5, "stored": 5}, {"received": 5, "stored": 0}]

    # The verdict asked over HTTP is the server's own row (origin "verdict",
    # written by the server's flusher within about a second), never also
    # reported by the client: exactly one of it beside the five reports.
    deadline = time.monotonic() + 10
    while True:
        page = httpx.get(
            f"{api_app.base_url}/api/v1/decisions",
            params={"session_id": "ledger-s", "per_page": 100},
            headers=_auth(token),
            timeout=10,
        )
        assert page.status_code == 200, page.text
        rows = page.json()["decisions"]
        if len(rows) >= 6 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    gateway = [row for row in rows if row["origin"] == "gateway"]
    sent = httpx.Response(200, content=transport.reports[0]).json()["decisions"]
    assert sorted(row["id"] for row in gateway) == sorted(d["id"] for d in sent)
    assert {(r["state"], r["action"], r["budget_before"], r["budget_after"]) for r in gateway} == {
        ("winding", "clamp", 4096, asked.max_tokens)
    }
    [server_row] = [row for row in rows if row["origin"] != "gateway"]
    assert (server_row["origin"], server_row["action"]) == ("verdict", "clamp")


def _variants() -> list[dict[str, Any]]:
    """Reports of every kind the client makes, each as ``report_of`` builds it."""
    from curfew_client import CurfewVerdict

    fake = FakeCurfew(WINDING, SCHEDULE)
    winding = CurfewVerdict.from_payload(fake.payload({"session_id": "s"}))
    fake.moment = OFF_DUTY
    off_duty = CurfewVerdict.from_payload(fake.payload({}))
    exempt = CurfewVerdict.from_payload(fake.payload({"session_id": "exempt"}))
    dry = winding.model_copy(update={"dry_run": True, "reason": "dry run: would clamp"})
    at = WINDING.timestamp()
    items = [
        (at, ("s", "chat", False, None), 4096, winding),
        (at, ("s", None, True, None), None, winding),
        (at + 0.123456, (None, None, False, None), 10, off_duty),
        (at, ("exempt", None, False, None), 10, exempt),
        (at, ("x" * 300, "p" * 300, False, None), 1, dry),
        # A caller's budget beyond what the server takes (issue 23): the report
        # must still validate, or the whole batch around it is refused.
        (at, ("s", None, False, None), 2**40, winding),
        (at, ("exempt", None, False, None), 2**63, exempt),
        # A team key's, for the member it was decided for (issue 26).
        (at, ("s", None, False, "alice"), 10, winding),
    ]
    assert {v.action for *_, v in items} == {"clamp", "short-circuit", "pass"}
    return [report_of(item, f"abc-{n}") for n, item in enumerate(items, 1)]


def test_the_clients_reports_validate_against_the_served_schema(api_app: ServedApp) -> None:
    document = httpx.get(f"{api_app.base_url}/api/v1/openapi.json", timeout=10).json()
    operation = document["paths"]["/decisions"]["post"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = {"$ref": ref, "components": document["components"]}
    validator = jsonschema.Draft202012Validator(schema)

    reports = _variants()
    validator.validate({"decisions": reports})
    # The client's bound is the server's.
    validator.validate({"decisions": [reports[0]] * MAX_BATCH})
    assert not validator.is_valid({"decisions": [reports[0]] * (MAX_BATCH + 1)})
    # Every field the client fills is the server's (nothing refused as unknown,
    # nothing required left out) -- and the schema does refuse what it does not know.
    assert not validator.is_valid({"decisions": [{**reports[0], "subagent": True}]})
    report_schema = document["components"]["schemas"]["DecisionReport"]
    assert set(report_schema.get("required", [])) <= set(reports[0])
    assert {key for report in reports for key in report} <= set(report_schema["properties"])
