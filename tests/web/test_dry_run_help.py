"""The help under "Only watch" said it "holds nothing back" to everyone. For
a member whose team acts (``engine.team.dry_run_holds`` false: the team's
curfew on and not only watching) that is untrue: their own dry run watches,
the team's rules still hold their calls back. The help reads the engine's
rule, ticked or not, in en and zh; and the verdict agrees. Controls: a team
that only watches too, a team whose curfew is off, a person in no team.
The note beside a ticked box no longer says it all again."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import TestCase
from django.utils import translation

from curfew_core.schedules.declaration import settings_of
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import member_add, team_create, team_schedule_update
from curfew_core.web.replies.exempt_picker import DRY_RUN_HELP_TEAM_ACTS
from tests.web.conftest import PageClient
from tests.web.test_team_dry_run_note import verdict_at_night

#: The team's night, a Wednesday 04:00: the team is asleep.
ZH = "zh-CN,zh;q=0.9"


def _declared() -> str:
    with translation.override("en"):
        return str(settings_of()["dry_run"].help)


def _acts() -> str:
    with translation.override("en"):
        return str(DRY_RUN_HELP_TEAM_ACTS)


def _team(user: User, changes: dict[str, Any] | None = None) -> None:
    with TestCase.captureOnCommitCallbacks(execute=True):
        team = team_create(name="acme", admin=User.objects.create_user("boss"))
        member_add(team=team, user=user)
        if changes:
            team_schedule_update(team=team, changes=changes)


def _watch(user: User, watching: bool) -> None:
    with TestCase.captureOnCommitCallbacks(execute=True):
        schedule_update(user=user, changes={"dry_run": watching}, source="test")


def _hint(page: PageClient, **extra: Any) -> str:
    """The hint under the "Only watch" box."""
    response = page.get("/replies/", **extra)
    assert response.status_code == 200
    html: str = response.content.decode()
    after = html.split('name="dry_run"', 1)[1]
    return after.split('<p class="hint">', 1)[1].split("</p>", 1)[0]


def _note(page: PageClient) -> str:
    """The note beside a ticked "Only watch", as read (tags dropped)."""
    html: str = page.get("/replies/").content.decode()
    note = html.split("data-dry-run-void>", 1)[1].split("</span>\n", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", unescape(note)).split())


@pytest.mark.parametrize("watching", [True, False])
def test_a_member_whose_team_acts_is_told_the_team_still_acts(
    page: PageClient, user: User, watching: bool
) -> None:
    _team(user)
    _watch(user, watching)
    hint = _hint(page)
    assert "holds nothing back" not in hint
    assert hint.replace("&#x27;", "'") == _acts()
    if watching:
        # What the help says is what gateways get: held back by the team.
        assert verdict_at_night(user)["action"] != "pass"
        # The note beside the ticked box says who can change that, and does
        # not say again what the help says.
        assert (
            _note(page)
            == "your team still acts The team's admins can make the team only watch too."
        )


def test_it_speaks_chinese(page: PageClient, user: User) -> None:
    _team(user)
    hint = _hint(page, HTTP_ACCEPT_LANGUAGE=ZH)
    assert "团队的作息表照常执行" in hint
    assert "不拦下任何调用：先试试" not in hint


@pytest.mark.parametrize(
    "changes", [{"dry_run": True}, {"enabled": False}], ids=["team-watches", "team-off"]
)
def test_where_no_team_acts_it_holds_nothing_back(
    page: PageClient, user: User, changes: dict[str, Any]
) -> None:
    _team(user, changes)
    _watch(user, True)
    assert _hint(page) == _declared()
    assert verdict_at_night(user)["action"] == "pass"


def test_a_person_in_no_team_keeps_the_declared_help(page: PageClient, user: User) -> None:
    _watch(user, True)
    assert _hint(page) == _declared()
    assert verdict_at_night(user)["action"] == "pass"
