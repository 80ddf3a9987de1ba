"""A team key's bad body is told what is wrong with it, as a personal token is.

Found from outside (2026-12-06, ``bin/serve`` on PostgreSQL + Redis): through
a team key, a body that is not JSON, not a JSON object, or whose member field
holds no text (``{"user": 5}``) was answered "a team key asks for one member:
name them in the X-Curfew-User header": the member is looked for before the
door reads the body, and such a body names nobody. A personal token's same
body is told the real problem. Now the team key's answer names it too, in the
door's own shape; a well-formed body that names nobody still gets the
naming answer (the control), which names only the places that door reads a
member from (Gemini's was told of a body field it has not), and a named
member with a bad body is told by the door itself, as before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from curfew_testkit.asgi_client import Client
from tests.teams.test_team_key_doors import CHAT, MESSAGES, team

__all__ = ["team"]

PATHS = {
    "verdict": "/api/v1/verdict",
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "gemini": "/v1beta/models/gemini-2.5-flash:generateContent",
}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
#: Each bad body, and the words its answer must say (the door's own words for it).
BAD = {
    "not JSON": (b"nope", "not valid JSON"),
    "a list": (b"[1]", "must be a JSON object, not list"),
}
#: A member field holding no text, per door: where that door reads a member
#: (Gemini's body has none: it is named in the header).
NOT_TEXT = {
    "verdict": ({"user": 5}, "user"),
    "chat": ({**CHAT, "user": 5}, "user"),
    "messages": ({**MESSAGES, "metadata": {"user_id": 5}}, "metadata.user_id"),
}
NAMES_NOBODY = "a team key asks for one member"


def _send(token: str, door: str, body: bytes, **headers: str) -> Any:
    # Gemini's SDK sends its key as x-goog-api-key; the others a bearer token.
    if door == "gemini":
        client = Client(HTTP_X_GOOG_API_KEY=token, **headers)
    else:
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.post(PATHS[door], body, content_type="application/json")


def _message(door: str, answer: Any) -> str:
    """What the door's own error shape says: the API's, OpenAI's or Anthropic's."""
    body = answer.json()
    if door == "messages":
        assert body["type"] == "error", body
        return str(body["error"]["message"])
    if door in ("chat", "gemini"):
        return str(body["error"]["message"])
    return str(body["message"]) + json.dumps(body.get("fields", {}))


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("door", sorted(PATHS))
def test_a_team_keys_bad_body_is_told_what_is_wrong(
    team: dict[str, Any], door: str, bad: str
) -> None:
    body, words = BAD[bad]
    own = _send(team["alice"], door, body)
    assert own.status_code == 400, own.content[:300]
    assert words in _message(door, own)
    answer = _send(team["key"], door, body)
    assert answer.status_code == 400, answer.content[:300]
    assert answer["Content-Type"].startswith("application/json")
    said = _message(door, answer)
    assert words in said, said
    assert NAMES_NOBODY not in said


@pytest.mark.parametrize("door", sorted(NOT_TEXT))
def test_a_member_field_with_no_text_is_named(team: dict[str, Any], door: str) -> None:
    body, field = NOT_TEXT[door]
    answer = _send(team["key"], door, json.dumps(body).encode())
    assert answer.status_code == 400, answer.content[:300]
    said = _message(door, answer)
    assert f"{field} must be a member's username" in said, said
    assert "not int" in said, said


@pytest.mark.parametrize("door", sorted(PATHS))
def test_control_a_good_body_naming_nobody_is_asked_for_a_member(
    team: dict[str, Any], door: str
) -> None:
    body = {"verdict": {}, "chat": CHAT, "messages": MESSAGES, "gemini": GEMINI}[door]
    answer = _send(team["key"], door, json.dumps(body).encode())
    assert answer.status_code == 400, answer.content[:300]
    said = _message(door, answer)
    assert NAMES_NOBODY in said
    # Each door names the places it reads a member from, and only those.
    assert ("the body's" in said) == (door != "gemini"), said
    assert ("metadata.user_id" in said) == (door == "messages"), said


@pytest.mark.parametrize("door", sorted(PATHS))
def test_control_a_named_members_bad_body_is_the_doors_own_answer(
    team: dict[str, Any], door: str
) -> None:
    answer = _send(team["key"], door, b"[1]", HTTP_X_CURFEW_USER="alice")
    assert answer.status_code == 400, answer.content[:300]
    assert "must be a JSON object, not list" in _message(door, answer)
