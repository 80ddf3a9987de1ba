"""An exemption the team voids is shown void where it is ticked (issue 39):
on Replies & voice, beside the ticked purpose, session or the spared
subagents, with why; read from the engine's rule (``team_lets_exempt``), so
it agrees with the verdict. The controls: a team that lets members exempt, a
name the team's schedule lets through too, a person in no team."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import TestCase

from curfew_core.engine import TeamSide
from curfew_core.models import Team
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.exemptions import Seen
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import member_add, team_create, team_schedule_update
from curfew_core.services.tokens import token_create
from curfew_core.web.replies import exempt_picker
from curfew_testkit.asgi_client import Client
from tests.web.conftest import PageClient

#: The team's night, a Wednesday 04:00 pretended: the team is asleep.
AT_NIGHT = "2026-09-30T04:00:00+08:00"
VOID = "data-exempt-void"


def _setup(user: User, *, members_may_exempt: bool) -> Team:
    with TestCase.captureOnCommitCallbacks(execute=True):
        boss = User.objects.create_user("boss")
        team = team_create(name="acme", admin=boss)
        member_add(team=team, user=user)
        if members_may_exempt:
            team_schedule_update(team=team, changes={"members_may_exempt": True})
        schedule_update(
            user=user,
            changes={
                "exempt_purposes": ["title", "lint"],
                "exempt_sessions": ["s-1"],
                "apply_to_subagents": False,
            },
            source="test",
        )
    return team


def _replies(page: PageClient, **extra: Any) -> str:
    response = page.get("/replies/", **extra)
    assert response.status_code == 200
    text: str = response.content.decode()
    return text


def _pick(html: str, kind: str, value: str) -> str:
    """The picker's list item of ``value``."""
    found = re.search(
        rf'<li>\s*<label class="switch"><input type="checkbox" name="pick_{kind}" '
        rf'value="{re.escape(value)}".*?</li>',
        html,
        re.S,
    )
    assert found, f"no box for {value}"
    return found.group(0)


def _dev(html: str) -> str:
    return html.split('id="developer-settings"')[1].split("</details>")[0]


def _verdict(user: User, **body: Any) -> dict[str, Any]:
    token = token_create(user=user)[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = client.post(
        "/api/v1/verdict", {"at": AT_NIGHT, **body}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    got: dict[str, Any] = answer.json()
    return got


def test_a_voided_exemption_is_marked_where_it_is_ticked(page: PageClient, user: User) -> None:
    _setup(user, members_may_exempt=False)
    html = _replies(page)
    lint = _pick(html, "purpose", "lint")
    assert VOID in lint
    assert "void in your team" in lint
    assert "does not let members' exemptions count" in lint
    assert 'aria-describedby="void-exempt_purposes-' in lint
    assert VOID in _pick(html, "session", "s-1")
    # Control: a purpose the team's schedule lets through too is not void.
    assert VOID not in _pick(html, "purpose", "title")
    # The spared subagents, under "For developers", opened to show it.
    assert VOID in _dev(html)
    assert 'id="developer-settings" open' in html
    # The page says what the gateways do: lint is not let through, title is.
    assert _verdict(user, purpose="lint")["exempt"] is False
    assert _verdict(user, purpose="title")["exempt"] is True


def test_it_speaks_chinese(page: PageClient, user: User) -> None:
    _setup(user, members_may_exempt=False)
    lint = _pick(_replies(page, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9"), "purpose", "lint")
    assert "在团队中无效" in lint
    assert "团队管理员" in lint


def test_a_team_that_lets_members_exempt_voids_nothing(page: PageClient, user: User) -> None:
    _setup(user, members_may_exempt=True)
    html = _replies(page)
    assert VOID not in html
    assert _verdict(user, purpose="lint")["exempt"] is True


def test_in_no_team_nothing_is_void(page: PageClient, user: User) -> None:
    schedule_update(user=user, changes={"exempt_purposes": ["lint"]}, source="test")
    assert VOID not in _replies(page)


@pytest.mark.parametrize("spared", [True, False])
def test_subagents_are_void_only_when_spared(page: PageClient, user: User, spared: bool) -> None:
    _setup(user, members_may_exempt=False)
    with TestCase.captureOnCommitCallbacks(execute=True):
        schedule_update(user=user, changes={"apply_to_subagents": not spared}, source="test")
    assert (VOID in _dev(_replies(page))) is spared


def test_only_a_ticked_box_is_void(monkeypatch: pytest.MonkeyPatch) -> None:
    """The picker itself: what called in but is not ticked is offered, never void."""
    last = dt.datetime(2026, 9, 30, tzinfo=dt.UTC)
    seen = {
        "sessions": [],
        "purposes": [Seen("lint", 3, last, ("proxy",)), Seen("review", 1, last, ("proxy",))],
    }
    monkeypatch.setattr(exempt_picker, "seen_callers", lambda **_: seen)
    team = TeamSide(schedule=schedule_config.build(schedule_config.default_config()))
    got = exempt_picker.picks(
        user_id=1, now=last, current={"exempt_purposes": ["lint"]}, tz=dt.UTC, team=team
    )
    assert [(p.value, p.checked, p.void) for p in got["purposes"]] == [
        ("lint", True, True),
        ("review", False, False),
    ]
    # Control: without a team nothing is void.
    alone = exempt_picker.picks(
        user_id=1, now=last, current={"exempt_purposes": ["lint"]}, tz=dt.UTC
    )
    assert not any(p.void for p in alone["purposes"])
