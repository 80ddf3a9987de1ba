"""Claude Code's ``metadata.user_id`` at the Anthropic door with a team key
(issue 39): its own id (a JSON object, or the older ``user_…_account_…_session_…``)
is no username, so the answer is an Anthropic-shaped 400 that says to send
``X-Curfew-User`` (``ANTHROPIC_CUSTOM_HEADERS``), not a 404 the tool retries and
reports as "an issue with the selected model". A name that could be someone's
is still looked up: a member passes, anyone else is the 404 of issue 26."""

from __future__ import annotations

import json
from typing import Any

import pytest

from curfew_core.selectors.users import is_username
from tests.teams.test_team_key_doors import MESSAGES, post, team

__all__ = ["team"]

CLAUDE_JSON = json.dumps(
    {
        "device_id": "4f" * 32,
        "account_uuid": "0f3c5a0e-8d43-4a43-9d7e-0a3b6c1d2e3f",
        "session_id": "9b2d4c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
    }
)
CLAUDE_OLD = (
    f"user_{'ab' * 32}_account_0f3c5a0e-8d43-4a43-9d7e-0a3b6c1d2e3f"
    "_session_9b2d4c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
)


def messages_as(key: str, user_id: str, **headers: str) -> Any:
    return post(key, "/v1/messages", {**MESSAGES, "metadata": {"user_id": user_id}}, **headers)


@pytest.mark.parametrize("user_id", [CLAUDE_JSON, CLAUDE_OLD], ids=["json", "older-form"])
def test_claude_codes_own_id_is_a_400_that_says_to_send_x_curfew_user(
    team: dict[str, Any], user_id: str
) -> None:
    answer = messages_as(team["key"], user_id)
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    message = body["error"]["message"]
    assert "X-Curfew-User" in message
    assert "ANTHROPIC_CUSTOM_HEADERS" in message
    assert answer["X-Curfew-State"] == "unknown"


def test_with_x_curfew_user_claude_code_is_served_as_the_member(team: dict[str, Any]) -> None:
    answer = messages_as(team["key"], CLAUDE_JSON, HTTP_X_CURFEW_USER="alice")
    assert answer.status_code == 200, answer.content
    assert answer["X-Curfew-State"] == "lights-out"


def test_control_a_name_that_could_be_someones_is_looked_up(team: dict[str, Any]) -> None:
    """The gate's control group: a username is still a member (200) or not (404)."""
    assert messages_as(team["key"], "alice").status_code == 200
    stranger = messages_as(team["key"], "bob")
    assert stranger.status_code == 404
    assert stranger.json()["error"]["type"] == "not_found_error"


def test_the_rule_is_the_user_models_own(transactional_db: None) -> None:
    assert is_username("alice")
    assert is_username("a.b-c_d@e+f")
    assert not is_username(CLAUDE_JSON)
    assert not is_username(CLAUDE_OLD)  # the right characters, longer than any username
    assert not is_username("two words")
