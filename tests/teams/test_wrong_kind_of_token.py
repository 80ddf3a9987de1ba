"""A token of ours at a route that does not take its kind is told so.

Found from outside (2026-12-06): a team admin who sent the team key to
``GET /api/v1/schedule`` (a person's own settings) was told "unknown or
revoked token", as was an embed token at the verdict: it read as if the key
had been revoked. Both are still refused (401, nothing read, the address's
failures counted as before); the answer now says which kind of token it is
and what to use instead, from the token's prefix alone, so it tells nothing
of whether the token is live. A token that is no token of ours, and a
personal token revoked, are still "unknown or revoked" (the controls).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client
from tests.teams.test_team_key_doors import CHAT, team

__all__ = ["team"]

UNKNOWN = "unknown or revoked token"


def _ask(token: str, method: str, path: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    if method == "GET":
        return client.get(path)
    body = {"/v1/chat/completions": CHAT, "/api/v1/overrides": {"off": True}}.get(path, {})
    return client.post(path, body, content_type="application/json")


def _message(answer: Any) -> str:
    body = answer.json()
    error = body["error"]
    return str(error["message"] if isinstance(error, dict) else body["message"])


#: The routes of one person's own rows: a team key is no token there.
OWN = [("GET", "/api/v1/schedule"), ("POST", "/api/v1/overrides"), ("GET", "/api/v1/savings")]


@pytest.mark.parametrize(("method", "path"), OWN)
def test_a_team_key_at_a_persons_own_route_is_told_it_is_a_team_key(
    team: dict[str, Any], method: str, path: str
) -> None:
    answer = _ask(team["key"], method, path)
    assert answer.status_code == 401, answer.content[:300]
    said = _message(answer)
    assert "a team key" in said, said
    assert "own API token" in said, said
    assert UNKNOWN not in said


@pytest.mark.parametrize(
    ("method", "path"), [*OWN, ("POST", "/api/v1/verdict"), ("POST", "/v1/chat/completions")]
)
def test_an_embed_token_at_the_api_or_the_proxy_is_told_what_it_is_for(
    team: dict[str, Any], method: str, path: str
) -> None:
    _, embed = token_create(user=team["users"]["alice"], name="", kind="embed")
    answer = _ask(embed, method, path)
    assert answer.status_code == 401, answer.content[:300]
    said = _message(answer)
    assert "an embed token" in said, said
    assert "API token" in said, said


@pytest.mark.parametrize(("method", "path"), OWN)
def test_control_unknown_and_revoked_tokens_are_still_unknown(
    team: dict[str, Any], method: str, path: str
) -> None:
    alice: User = team["users"]["alice"]
    made, raw = token_create(user=alice, name="gone")
    token_revoke(user=alice, token_id=made.id)
    for token in (raw, "cfw_" + "x" * 43, "not-ours"):
        answer = _ask(token, method, path)
        assert answer.status_code == 401, answer.content[:300]
        assert _message(answer) == UNKNOWN


def test_control_the_team_key_is_taken_where_it_asks_for_a_member(team: dict[str, Any]) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {team['key']}", HTTP_X_CURFEW_USER="alice")
    assert client.post("/api/v1/verdict", {}, content_type="application/json").status_code == 200
    assert _ask(team["alice"], "GET", "/api/v1/schedule").status_code == 200
