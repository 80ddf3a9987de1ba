"""The verdict JSON the pages show (the Integrations page's decision preview
and the overview's Details) is the one ``POST /api/v1/verdict`` answers for
the same user and moment (issues 39 and 42, one truth): its ``timezone`` too,
the user's own zone, a team member's own and not the team's."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.services.schedules import schedule_get_or_create, schedule_update
from curfew_core.services.teams import member_add, team_create
from curfew_core.services.tokens import token_create
from curfew_core.web.schedule.contexts import VERDICT_INSTANTS
from tests.conftest import ApiClient
from tests.web.conftest import PageClient

#: A Tuesday night in Shanghai (winding down on the default schedule).
LOCAL = "2026-09-29T23:30"
AT = "2026-09-29T23:30:00+08:00"


def _person(name: str, zone: str) -> User:
    user = User.objects.create_user(name, password="correct horse battery")
    schedule_get_or_create(user=user)
    schedule_update(user=user, changes={"timezone": zone}, source="test")
    return user


@pytest.fixture
def mei(db: None) -> User:
    """A team member in Shanghai, in a team whose admin is in New York."""
    boss = _person("boss", "America/New_York")
    mei = _person("mei", "Asia/Shanghai")
    team = team_create(name="lab", admin=boss)
    member_add(team=team, user=mei, actor=boss)
    return mei


def _shown(text: str, element: str) -> dict[str, Any]:
    match = re.search(rf'<pre class="json"[^>]*id="{element}"[^>]*>(.*?)</pre>', text, re.S)
    assert match, f"no {element} on the page"
    shown: dict[str, Any] = json.loads(html.unescape(match.group(1)))
    return shown


def _answered(user: User) -> dict[str, Any]:
    _, raw = token_create(user=user)
    answer = ApiClient(user, raw).post("/api/v1/verdict", {"at": AT})
    assert answer.status_code == 200, answer.content
    body: dict[str, Any] = answer.json()
    return body


def _same_instants(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with its instants as instants (the overview shows them on
    the user's wall clock, the API in UTC: the same moments)."""
    return {
        key: dt.datetime.fromisoformat(value)
        if key in VERDICT_INSTANTS and isinstance(value, str)
        else value
        for key, value in payload.items()
    }


def test_the_decision_preview_shows_what_the_api_answers(mei: User) -> None:
    response = PageClient(mei).get("/decision/", {"at": LOCAL}, htmx=True)
    assert response.status_code == 200
    shown = _shown(response.content.decode(), "decision-json")
    assert shown["timezone"] == "Asia/Shanghai"
    assert _same_instants(shown) == _same_instants(_answered(mei))


def test_the_overviews_details_show_what_the_api_answers(mei: User) -> None:
    response = PageClient(mei).get("/", {"at": LOCAL})
    assert response.status_code == 200
    shown = _shown(response.content.decode(), "now-json")
    assert shown["timezone"] == "Asia/Shanghai"
    assert _same_instants(shown) == _same_instants(_answered(mei))
