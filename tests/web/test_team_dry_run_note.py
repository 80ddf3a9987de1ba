"""QA "looker" finding 1: a team member's "Only watch" holds nothing back only
when the team never acts (``engine.team.dry_run_holds``: its curfew off, or
only watching too; ``combine``). Ticked by a member of a team that does not
only watch, the Replies page says so beside the box, read from the engine's
two sides, and the verdict agrees. Controls: a team that only watches too,
the box unticked, a person in no team."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import TestCase

from curfew_core.models import Team
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import member_add, team_create, team_schedule_update
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.web.conftest import PageClient

#: The team's night, a Wednesday 04:00 pretended: the team is asleep.
AT_NIGHT = "2026-09-30T04:00:00+08:00"
NOTE = "data-dry-run-void"


def _setup(user: User, *, team_watches: bool, watching: bool = True) -> None:
    with TestCase.captureOnCommitCallbacks(execute=True):
        boss = User.objects.create_user("boss")
        team = team_create(name="acme", admin=boss)
        member_add(team=team, user=user)
        if team_watches:
            team_schedule_update(team=team, changes={"dry_run": True})
        schedule_update(user=user, changes={"dry_run": watching}, source="test")


def _replies(page: PageClient, **extra: Any) -> str:
    response = page.get("/replies/", **extra)
    assert response.status_code == 200
    text: str = response.content.decode()
    return text


def _scope(html: str) -> str:
    return html.split('class="card fs-scope"')[1].split("</fieldset>")[0]


def verdict_at_night(user: User) -> dict[str, Any]:
    token = token_create(user=user)[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = client.post("/api/v1/verdict", {"at": AT_NIGHT}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    got: dict[str, Any] = answer.json()
    return got


def test_only_watch_in_a_team_that_acts_says_the_team_still_acts(
    page: PageClient, user: User
) -> None:
    _setup(user, team_watches=False)
    scope = _scope(_replies(page))
    assert NOTE in scope
    assert "your team still acts" in scope
    assert "The team's admins can make the team only watch" in scope
    # What the page says is what the gateways get: no dry run, held back.
    verdict = verdict_at_night(user)
    assert verdict["dry_run"] is False
    assert verdict["action"] != "pass"


def test_it_speaks_chinese(page: PageClient, user: User) -> None:
    _setup(user, team_watches=False)
    scope = _scope(_replies(page, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9"))
    assert "团队照常执行" in scope
    assert "团队管理员" in scope


def test_a_team_that_only_watches_too_has_no_note(page: PageClient, user: User) -> None:
    _setup(user, team_watches=True)
    assert NOTE not in _replies(page)
    assert verdict_at_night(user)["dry_run"] is True


@pytest.mark.parametrize("team", [True, False])
def test_no_note_unless_ticked_in_a_team(page: PageClient, user: User, team: bool) -> None:
    if team:
        _setup(user, team_watches=False, watching=False)
    else:
        schedule_update(user=user, changes={"dry_run": True}, source="test")
    assert NOTE not in _replies(page)


def test_a_team_whose_curfew_is_off_has_no_note(page: PageClient, user: User) -> None:
    """The team's side holds nothing back: Only watch holds back all there is."""
    _setup(user, team_watches=False)
    team = Team.objects.get(name="acme")
    with TestCase.captureOnCommitCallbacks(execute=True):
        team_schedule_update(team=team, changes={"enabled": False})
    assert NOTE not in _replies(page)
    assert verdict_at_night(user)["action"] == "pass"
