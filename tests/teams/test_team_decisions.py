"""The ledger's report and read doors with a team key (issue 26): a gateway
that serves a team reports each decision for the member it was made for and
reads one member's; a name outside the team is refused and nothing is
stored; a personal token still reports and reads only its own."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.models import Decision
from tests.teams.test_done_means import bearer, last_line, people, run

__all__ = ["people"]
DECISIONS = "/api/v1/decisions"


def _entry(n: int, **extra: Any) -> dict[str, Any]:
    at = timezone.now().replace(microsecond=0).isoformat()
    return {"id": f"t-{n}", "at": at, "state": "winding", "action": "clamp", **extra}


def _report(token: str, *entries: dict[str, Any]) -> Any:
    return bearer(token).post(
        DECISIONS, {"decisions": list(entries)}, content_type="application/json"
    )


def _stored(name: str) -> list[str]:
    user = User.objects.get(username=name)
    return sorted(Decision.objects.filter(user=user).values_list("client_id", flat=True))


@pytest.fixture
def team_key(people: dict[str, str]) -> str:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    return last_line(run("team-token", "acme"))


def test_a_team_key_reports_each_decision_for_its_member(
    people: dict[str, str], team_key: str
) -> None:
    sent = _report(
        team_key, _entry(1, user="alice"), _entry(2, user="boss"), _entry(3, user="alice")
    )
    assert sent.status_code == 200, sent.content
    assert sent.json()["stored"] == 3
    assert _stored("alice") == ["t-1", "t-3"]
    assert _stored("boss") == ["t-2"]
    # Read back one member's, with the key.
    read = bearer(team_key).get(DECISIONS, {"user": "alice"})
    assert read.status_code == 200, read.content
    assert sorted(row["id"] for row in read.json()["decisions"]) == ["t-1", "t-3"]
    # The member's own token reads the same.
    own = bearer(people["alice"]).get(DECISIONS).json()["decisions"]
    assert sorted(row["id"] for row in own) == ["t-1", "t-3"]


def test_a_name_outside_the_team_stores_nothing(people: dict[str, str], team_key: str) -> None:
    refused = _report(team_key, _entry(1, user="alice"), _entry(2, user="bob"))
    assert refused.status_code == 422, refused.content
    fields = refused.json()["fields"]
    assert "is not a member of this key's team" in fields["decisions[1].user"]
    assert "decisions[0].user" not in fields
    assert _stored("alice") == []
    assert _stored("bob") == []
    nameless = _report(team_key, _entry(1))
    assert nameless.status_code == 400
    assert "decisions[0].user" in nameless.json()["fields"]
    # Reading: naming nobody, or somebody outside the team.
    assert bearer(team_key).get(DECISIONS).status_code == 400
    outside = bearer(team_key).get(DECISIONS, {"user": "bob"})
    assert outside.status_code == 404
    assert outside.json()["error"] == "not_found"


def test_a_personal_token_reports_its_own_and_names_nobody(
    people: dict[str, str], team_key: str
) -> None:
    assert _report(people["bob"], _entry(1)).status_code == 200
    assert _stored("bob") == ["t-1"]
    other = _report(people["alice"], _entry(2, user="boss"))
    assert other.status_code == 422
    assert _stored("boss") == []
    assert bearer(people["alice"]).get(DECISIONS, {"user": "boss"}).status_code == 400
