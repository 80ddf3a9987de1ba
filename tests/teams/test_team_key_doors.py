"""The team key at every gateway door (issue 26): the proxy reads the member
from X-Curfew-User, else OpenAI's ``user``, else Anthropic's
``metadata.user_id``; a name outside the team is refused in the door's own
shape; the member's own token gets the same combined verdict."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.models import Team
from curfew_core.services.teams import (
    member_add,
    member_remove,
    team_create,
    team_schedule_update,
    team_token_create,
)
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock

#: The frozen clock reads 20:00 (Shanghai): the team is at lights-out, alice's own night is far.
TEAM_NIGHT = {
    "curfew_start": "19:00",
    "lights_out": "19:30",
    "wake_up": "07:00",
    "anchors": [["19:00", 1024], ["19:30", 64]],
}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def team(transactional_db: None, clock: FrozenClock) -> Iterator[dict[str, Any]]:
    boss = User.objects.create_user("boss")
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    acme = team_create(name="acme", admin=boss)
    member_add(team=acme, user=alice)
    team_schedule_update(team=acme, changes=TEAM_NIGHT)
    _, key = team_token_create(team=acme)
    # Nothing listens here: a call sent upstream is a 502, a short-circuit never is.
    with override_settings(CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1"):
        yield {
            "key": key,
            "team": acme,
            "alice": token_create(user=alice)[1],
            "bob": token_create(user=bob)[1],
            "users": {"alice": alice, "bob": bob},
        }


def post(token: str, path: str, body: dict[str, Any], **headers: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.post(path, body, content_type="application/json")


def test_proxy_names_the_member_by_header_or_body(team: dict[str, Any]) -> None:
    key = team["key"]
    for answer in (
        post(key, "/v1/chat/completions", CHAT, HTTP_X_CURFEW_USER="alice"),
        post(key, "/v1/chat/completions", {**CHAT, "user": "alice"}),
        post(key, "/v1/messages", {**MESSAGES, "metadata": {"user_id": "alice"}}),
    ):
        assert answer.status_code == 200, answer.content
        assert answer["X-Curfew-State"] == "lights-out"
        assert answer["X-Curfew-Action"] == "short-circuit"
    # Alice's own token: the same team night.
    own = post(team["alice"], "/v1/chat/completions", CHAT)
    assert own["X-Curfew-State"] == "lights-out"
    # Control: bob, in no team, is on duty and sent upstream (nothing listens: 502).
    assert post(team["bob"], "/v1/chat/completions", CHAT).status_code == 502


def test_proxy_refuses_a_non_member_in_each_protocols_shape(team: dict[str, Any]) -> None:
    key = team["key"]
    openai = post(key, "/v1/chat/completions", CHAT, HTTP_X_CURFEW_USER="bob")
    assert openai.status_code == 404
    assert openai.json()["error"]["code"] == "not_found"
    anthropic = post(key, "/v1/messages", {**MESSAGES, "metadata": {"user_id": "bob"}})
    assert anthropic.status_code == 404
    assert anthropic.json()["type"] == "error"
    nameless = post(key, "/v1/chat/completions", CHAT)
    assert nameless.status_code == 400
    # Control: the header wins over the body (a gateway's own naming).
    named = post(key, "/v1/chat/completions", {**CHAT, "user": "bob"}, HTTP_X_CURFEW_USER="alice")
    assert named.status_code == 200


def test_a_removed_member_is_refused_at_once(team: dict[str, Any]) -> None:
    key = team["key"]
    asked = {"user": "alice"}
    assert post(key, "/api/v1/verdict", asked).status_code == 200
    acme = Team.objects.get(pk=team["team"].pk)
    member_remove(team=acme, user=team["users"]["alice"])
    assert post(key, "/api/v1/verdict", asked).status_code == 404
    # And alice's own verdict is her own again: on duty at 20:00.
    assert post(team["alice"], "/api/v1/verdict", {}).json()["state"] == "on-duty"


def test_a_team_schedule_change_reaches_the_verdict_at_once(team: dict[str, Any]) -> None:
    key = team["key"]
    asked = {"user": "alice"}
    assert post(key, "/api/v1/verdict", asked).json()["state"] == "lights-out"
    acme = Team.objects.get(pk=team["team"].pk)
    team_schedule_update(team=acme, changes={"enabled": False})
    assert post(key, "/api/v1/verdict", asked).json()["state"] == "on-duty"
