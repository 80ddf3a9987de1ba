"""One rule for member names at every door (issue 41, finding 4).

A team member's name with NUL was answered as a storage outage (503 +
``Retry-After``: PostgreSQL refuses NUL in a query) on the verdict, the
state, the decisions, the change stream and both proxy dialects; one with a
lone surrogate got uvicorn's bare ``text/plain`` 500. A name no account
could have is now each door's own 400, naming the rule, before any lookup;
a name that could be someone's is looked up as before (the control group:
a member passes, anyone else is the 404 of issue 26).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from curfew_testkit.asgi_client import Client
from tests.teams.test_team_key_doors import CHAT, MESSAGES, team

__all__ = ["team"]

ODD_NAMES = {
    "nul": "al\x00ice",
    "surrogate": "al\ud800ice",
    "space": "two words",
    "long": "a" * 151,
}


def _client(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}")


def _ask(key: str, door: str, name: str) -> Any:
    """``door`` asked for the member ``name``, the way that door names one."""
    client = _client(key)
    if door == "verdict":
        return client.post("/api/v1/verdict", {"user": name}, content_type="application/json")
    if door == "chat":
        return client.post(
            "/v1/chat/completions", {**CHAT, "user": name}, content_type="application/json"
        )
    if door == "messages":
        # Anthropic's own way to name an end user; the body's "user" is OpenAI's.
        return client.post(
            "/v1/messages",
            {**MESSAGES, "metadata": {"user_id": name}},
            content_type="application/json",
        )
    path = {"state": "/api/v1/state", "decisions": "/api/v1/decisions"}[door]
    return client.get(f"{path}?user={quote(name, errors='surrogatepass')}")


DOORS = ["verdict", "state", "decisions", "chat", "messages"]


def _shape(door: str, answer: Any) -> str:
    """The door's own error shape: the API's, OpenAI's or Anthropic's."""
    body = answer.json()
    if door == "messages":
        assert body["type"] == "error", body
        return str(body["error"]["message"])
    if door == "chat":
        return str(body["error"]["message"])
    return str(body.get("message", "")) + str(body.get("fields", ""))


#: Every door with every odd name, but a lone surrogate in a query string:
#: a query is bytes, and no client can send one there.
CASES = [
    (door, kind)
    for door in DOORS
    for kind in sorted(ODD_NAMES)
    if not (kind == "surrogate" and door in ("state", "decisions"))
]


@pytest.mark.parametrize(("door", "kind"), CASES)
def test_a_name_no_account_could_have_is_the_doors_400(
    team: dict[str, Any], door: str, kind: str
) -> None:
    name = ODD_NAMES[kind]
    answer = _ask(team["key"], door, name)
    assert answer.status_code == 400, (answer.status_code, answer.content[:300])
    assert answer["Content-Type"].startswith("application/json")
    assert "Retry-After" not in answer
    message = _shape(door, answer)
    assert "X-Curfew-User" in message or "username" in message, message


@pytest.mark.parametrize("door", DOORS)
def test_control_a_name_that_could_be_someones_is_looked_up(
    team: dict[str, Any], door: str
) -> None:
    assert _ask(team["key"], door, "alice").status_code == 200
    assert _ask(team["key"], door, "bob").status_code in (404, 422)


def test_the_change_stream_refuses_an_odd_name_before_it_streams(team: dict[str, Any]) -> None:
    answer = _client(team["key"]).get("/api/v1/changes?user=al%00ice")
    assert answer.status_code == 400, answer.content[:300]
    assert "username" in answer.json()["message"]
