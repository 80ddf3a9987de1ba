"""A personal token with ``X-Curfew-User`` (issue 41, finding 7).

The header was silently ignored with a personal token, while the verdict
API's ``user`` field was a 422: a tool set up as ``alice`` with Bob's token
believed it asked for Alice and was answered for Bob. Now the header with a
personal token must name that token's own person (accepted: the control), any
other name is a 422 in the door's own shape, and a name no account could have
is the door's 400, at every token door (the API, both proxy dialects).
"""

from __future__ import annotations

from typing import Any

import pytest

from curfew_testkit.asgi_client import Client
from tests.teams.test_team_key_doors import CHAT, MESSAGES, team

__all__ = ["team"]


def _ask(token: str, door: str, name: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_CURFEW_USER=name)
    if door == "verdict":
        return client.post("/api/v1/verdict", {}, content_type="application/json")
    if door == "chat":
        return client.post("/v1/chat/completions", CHAT, content_type="application/json")
    if door == "messages":
        return client.post("/v1/messages", MESSAGES, content_type="application/json")
    return client.get({"state": "/api/v1/state", "decisions": "/api/v1/decisions"}[door])


DOORS = ["verdict", "state", "decisions", "chat", "messages"]


def _message(door: str, answer: Any) -> str:
    body = answer.json()
    if door in ("chat", "messages"):
        return str(body["error"]["message"])
    return str(body["message"])


@pytest.mark.parametrize("door", DOORS)
def test_a_personal_token_naming_another_member_is_the_doors_422(
    team: dict[str, Any], door: str
) -> None:
    answer = _ask(team["alice"], door, "boss")
    assert answer.status_code == 422, (answer.status_code, answer.content[:300])
    assert answer["Content-Type"].startswith("application/json")
    assert "personal token" in _message(door, answer)
    if door == "messages":
        assert answer.json()["type"] == "error"


@pytest.mark.parametrize("door", DOORS)
def test_control_naming_its_own_person_is_served(team: dict[str, Any], door: str) -> None:
    answer = _ask(team["alice"], door, "alice")
    assert answer.status_code == 200, (answer.status_code, answer.content[:300])
    if door in ("chat", "messages"):
        # The team's night, as without the header: nothing was sent upstream.
        assert answer["X-Curfew-Action"] == "short-circuit"


@pytest.mark.parametrize("door", ["verdict", "chat"])
def test_a_name_no_account_could_have_is_the_doors_400(team: dict[str, Any], door: str) -> None:
    answer = _ask(team["alice"], door, "two words")
    assert answer.status_code == 400, answer.content[:300]
    assert "username" in _message(door, answer)


def test_without_the_header_a_personal_token_is_served_as_before(team: dict[str, Any]) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {team['alice']}")
    answer = client.post("/api/v1/verdict", {}, content_type="application/json")
    assert answer.status_code == 200
    assert answer.json()["state"] == "lights-out"


def _ask_as(token: str, where: str, name: str) -> Any:
    """The verdict's ``user`` field or the state's ``?user=``, naming ``name``."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    if where == "verdict field":
        return client.post("/api/v1/verdict", {"user": name}, content_type="application/json")
    return client.get("/api/v1/state", {"user": name})


@pytest.mark.parametrize("where", ["verdict field", "state query"])
def test_the_user_field_and_query_follow_the_headers_rule(team: dict[str, Any], where: str) -> None:
    """One rule for a personal token naming a person, wherever it names them
    (make fuzz found ``?user=<own name>`` a 422 where the header was served)."""
    own = _ask_as(team["alice"], where, "alice")
    assert own.status_code == 200, own.content[:300]
    assert own.json()["state"] == "lights-out"  # the team's night, as without it
    other = _ask_as(team["alice"], where, "boss")
    assert other.status_code == 422, other.content[:300]
    assert "personal token" in other.json()["message"]
    assert "user" in other.json()["fields"]
    # A name no account could have: the same 422 (the document allows any
    # text here; the header's rule makes it a 400 before any handler).
    bad = _ask_as(team["alice"], where, "two words")
    assert bad.status_code == 422, bad.content[:300]
