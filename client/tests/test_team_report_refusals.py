"""A team key's decision report names many members; the server refuses a
batch whole (422, storing nothing) when one decision names someone no longer
in the team, and says which (``fields["decisions[n].user"]``). That one
member's refusal must not cost every other member's decisions in the batch
("a refusal for one is never an outage for all"): the rest are sent again,
with the same ids, and stored."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
_INDEXED = re.compile(r"^decisions\[(\d+)\]\.")


class TeamCurfew:
    """Answers a team key's verdicts for its members, and stores its reports
    as the server does: all of a batch, or (one names a non-member) none,
    a 422 naming each refused decision's field."""

    def __init__(self, members: set[str]) -> None:
        self.members = set(members)
        self.stored: dict[str, dict[str, Any]] = {}
        self.batches: list[list[str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Bearer cft_team"
        body = json.loads(request.content)
        if request.url.path == "/api/v1/verdict":
            if body.get("user") not in self.members:
                return httpx.Response(404, json={"error": "not_found", "message": "no"})
            return httpx.Response(200, json=WINDING)
        assert request.url.path == "/api/v1/decisions"
        batch = body["decisions"]
        self.batches.append([d["id"] for d in batch])
        fields = {
            f"decisions[{n}].user": f"{d['user']} is not a member of this key's team"
            for n, d in enumerate(batch)
            if d.get("user") not in self.members
        }
        if fields:
            message = f"well-formed but refused: {', '.join(fields)}"
            return httpx.Response(
                422, json={"error": "unprocessable", "message": message, "fields": fields}
            )
        for decision in batch:
            self.stored.setdefault(decision["id"], decision)
        return httpx.Response(200, json={"received": len(batch), "stored": len(batch)})

    def users(self) -> list[str]:
        return sorted(d["user"] for d in self.stored.values())


def _ask_twice(c: CurfewClient, names: tuple[str, ...]) -> None:
    for name in (*names, *names):  # the second of each is the cache's: reported
        c.verdict(user=name)


def test_one_members_refused_decision_costs_no_other_members() -> None:
    fake = TeamCurfew({"alice", "bob", "carol"})
    with CurfewClient(
        "http://curfew",
        "cft_team",
        transport=httpx.MockTransport(fake),
        clock=lambda: NOW,
        report_interval=3600,
    ) as c:
        _ask_twice(c, ("alice", "bob", "carol"))
        fake.members.discard("bob")  # bob left the team; his verdict was cached
        c.flush_reports()
        assert c.reports is not None
        assert (c.reports.refused, c.reports.waiting, c.reports.delivered) == (1, 0, 2)
    assert fake.users() == ["alice", "carol"]
    # The rest went again as they were: the same ids, bob's left out.
    first, second = fake.batches
    assert second == [first[0], first[2]]


def test_a_refusal_of_the_whole_batch_is_still_dropped_whole() -> None:
    """Control: a refusal naming no one decision (here the batch itself)
    drops the batch, as before, and is not sent again."""

    def refuse_all(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/verdict":
            return httpx.Response(200, json=WINDING)
        sent.append(request)
        body = {"error": "unprocessable", "message": "x", "fields": {"decisions": "too many"}}
        return httpx.Response(422, json=body)

    sent: list[httpx.Request] = []
    with CurfewClient(
        "http://curfew",
        "cft_team",
        transport=httpx.MockTransport(refuse_all),
        clock=lambda: NOW,
        report_interval=3600,
    ) as c:
        _ask_twice(c, ("alice", "bob"))
        c.flush_reports()
        assert c.reports is not None
        assert (c.reports.refused, c.reports.waiting) == (2, 0)
    assert len(sent) == 1


@pytest.mark.parametrize("every", [True, False])
async def test_async_one_members_refused_decision_costs_no_other_members(every: bool) -> None:
    """The asyncio flavour the same; ``every``: each decision in the batch
    refused, so nothing is left to send again."""
    fake = TeamCurfew({"alice", "bob", "carol"})
    async with AsyncCurfewClient(
        "http://curfew",
        "cft_team",
        transport=httpx.MockTransport(fake),
        clock=lambda: NOW,
        report_interval=3600,
    ) as c:
        for name in ("alice", "bob", "carol") * 2:
            await c.verdict(user=name)
        if every:
            fake.members.clear()
        else:
            fake.members.discard("bob")
        await c.flush_reports()
        assert c.reports is not None
        expected = (3, 0, 0) if every else (1, 0, 2)
        assert (c.reports.refused, c.reports.waiting, c.reports.delivered) == expected
    assert fake.users() == ([] if every else ["alice", "carol"])
    assert len(fake.batches) == (1 if every else 2)
