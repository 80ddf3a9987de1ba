"""A team key's decision report against the real server: a member who left
the team after their verdict was cached costs only their own decisions, never
the other members' in the same batch ("a refusal for one is never an outage
for all"). The server refuses such a batch whole (422, nothing stored) and
names the decision; the gateway client drops that one and sends the rest."""

from __future__ import annotations

import time
from typing import Any

from curfew_client import CurfewClient

from tests.teams.test_done_means import last_line, people, run
from tests.teams.test_gateway_client_refusals import served
from tests.teams.test_team_decisions import _stored

__all__ = ["people"]


def test_a_member_who_left_costs_the_team_only_their_own_decisions(
    people: dict[str, str],
) -> None:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    key = last_line(run("team-token", "acme"))
    now = time.time()  # the gateway's clock stands still: each verdict stays fresh
    with CurfewClient(
        "http://curfew",
        key,
        transport=served(key),
        report_interval=3600,
        timeout=10,
        clock=lambda: now,
    ) as client:
        for name in ("alice", "boss", "alice", "boss"):  # the second of each: the cache's
            client.verdict(user=name)
        run("team", "remove", "acme", "alice")  # her verdict stays cached a while
        client.flush_reports()
        reports: Any = client.reports
        assert (reports.refused, reports.delivered, reports.waiting) == (1, 1, 0)
    # The verdict the server answered it recorded itself (no id); the cached
    # one is the gateway's report (its id), stored despite alice's refusal.
    assert len([found for found in _stored("boss") if found]) == 1
