"""``POST /api/v1/verdict`` carries the user's time zone (issue 42), as
``GET /api/v1/state`` does: the zone its ``reason`` is told in, so a client
tells ``valid_until`` in it too (the ``curfew`` command's "until 09:00"),
not in its machine's. A team key's verdict for a member carries the
member's own zone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.services.schedules import schedule_get_or_create, schedule_update
from curfew_core.services.teams import member_add, team_create, team_token_create
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import AsgiClient

pytestmark = pytest.mark.django_db(transaction=True)


def _person(name: str, zone: str) -> User:
    user = User.objects.create_user(name)
    schedule_get_or_create(user=user)
    schedule_update(user=user, changes={"timezone": zone}, source="test")
    return user


def _verdict(raw: str, **headers: str) -> Any:
    client = AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {raw}", **headers})
    answer = client.request("POST", "/api/v1/verdict", b"{}", content_type="application/json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_verdict_carries_the_users_time_zone() -> None:
    user = _person("mei", "Asia/Shanghai")
    _, raw = token_create(user=user)
    assert _verdict(raw)["timezone"] == "Asia/Shanghai"
    schedule_update(user=user, changes={"timezone": "Europe/Paris"}, source="test")
    assert _verdict(raw)["timezone"] == "Europe/Paris"


def test_a_team_keys_verdict_for_a_member_carries_the_members_zone() -> None:
    boss = _person("boss", "America/New_York")
    mei = _person("mei", "Asia/Shanghai")
    team = team_create(name="lab", admin=boss)
    member_add(team=team, user=mei, actor=boss)
    _, raw = team_token_create(team=team)
    assert _verdict(raw, HTTP_X_CURFEW_USER="mei")["timezone"] == "Asia/Shanghai"
    assert _verdict(raw, HTTP_X_CURFEW_USER="boss")["timezone"] == "America/New_York"
