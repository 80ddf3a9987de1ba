"""QA "looker" finding 2, the words left in English or spaced as English on
zh pages: the tool names' qualifiers on Integrations, a member's exemption in
an Activity reason ("exempt (team and member)"), and the team line's two
sentences joined with a space after 。. English controls beside each."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import TestCase
from django.utils import translation

from curfew_core.services.teams import member_add, team_create
from curfew_core.vocabulary import reason_words
from curfew_core.web.integrations.tool_setups import SETUPS, ToolSetup
from tests.web.conftest import PageClient

ZH = "zh-hans"
ZH_BROWSER = "zh-CN,zh;q=0.9"
#: A qualifier after a tool's name: "(hooks, subscription login)".
QUALIFIER = re.compile(r"[(（](.*)[)）]")


@pytest.mark.parametrize("setup", [s for s in SETUPS if QUALIFIER.search(str(s.name))])
def test_a_tools_qualifier_is_said_in_chinese(setup: ToolSetup) -> None:
    name = setup.name
    with translation.override(ZH):
        said = QUALIFIER.search(str(name))
    assert said is not None
    assert not re.search(r"\b(hooks|login|plugin|proxy|the CLI)\b", said.group(1)), said.group(0)
    with translation.override("en"):
        assert "(" in str(name)


def test_the_integrations_page_names_tools_in_chinese(page: PageClient) -> None:
    html = page.get("/integrations/", HTTP_ACCEPT_LANGUAGE=ZH_BROWSER).content.decode()
    assert "Claude Code（钩子，订阅登录）" in html
    assert "subscription login" not in html
    assert "llm (the CLI)" not in html


def test_a_members_exemption_is_said_in_the_reason() -> None:
    reason = "lights out until 09:00 · team: lights out until 09:00 · exempt (team and member)"
    with translation.override(ZH):
        said = reason_words(reason)
    assert "exempt" not in said
    assert "团队" in said.rsplit(" · ", 1)[1]
    with translation.override("en"):
        assert reason_words(reason).endswith("let through, your team's side too")


def _member(user: User) -> None:
    with TestCase.captureOnCommitCallbacks(execute=True):
        boss = User.objects.create_user("boss")
        team = team_create(name="acme", admin=boss)
        member_add(team=team, user=user)


def _team_line(html: str) -> str:
    found = re.search(r'<p class="banner banner-info team-policy-line".*?</p>', html, re.S)
    assert found, "no team line"
    return found.group(0)


def test_the_team_line_joins_chinese_sentences_without_a_space(
    page: PageClient, user: User
) -> None:
    _member(user)
    line = _team_line(page.get("/", HTTP_ACCEPT_LANGUAGE=ZH_BROWSER).content.decode())
    assert "。" in line
    assert not re.search(r"。\s+\S", line.split("<a ")[0]), line


def test_the_team_line_joins_english_sentences_with_a_space(page: PageClient, user: User) -> None:
    _member(user)
    line = _team_line(page.get("/").content.decode())
    assert re.search(r"it wins\. \S", line), line


def test_a_dry_run_the_other_side_overrides_is_said() -> None:
    """The engine's reason when one side only watches and the other acts
    (engine.team.BY_TEAM, BY_MEMBER): said in words, in both languages."""
    member = "dry run overridden: the team's schedule acts · team: lights out"
    team = "lights out · team: dry run overridden: the member's own schedule acts"
    with translation.override("en"):
        assert reason_words(member).startswith("only watching, but your team's schedule acts")
        assert reason_words(team).endswith("team: only watching, but your own schedule acts")
    with translation.override(ZH):
        for reason in (member, team):
            assert "overridden" not in reason_words(reason)
