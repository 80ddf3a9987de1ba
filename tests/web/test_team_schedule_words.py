"""QA "looker" finding 6: the team's schedule page (/team/schedule/, what a
team admin edits) reused the person's own words ("Your own days off", "Days
you work anyway", "Your day, as you edit it"). The team's form names them as
the team's: the declaration's team variant of a label (``Setting.team_label``),
on the same form. The person's Schedule page keeps its own words (the
control); the team's audit names the change as the team's page does."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.auth.models import User
from django.utils import translation

from curfew_core.models import Team
from curfew_core.schedules.declaration import labels_of, settings_of
from curfew_core.services import teams as team_services
from curfew_core.web.words import _audit_key
from tests.web.conftest import PageClient

PERSONAL = ("Your own days off", "Days you work anyway", "Your day, as you edit it")


@pytest.fixture
def team(user: User) -> Team:
    made: Team = team_services.team_create(name="night-owls", admin=user)
    return made


@pytest.mark.usefixtures("team")
def test_the_team_schedule_names_the_teams_days(page: PageClient) -> None:
    html = unescape(page.get("/team/schedule/").content.decode())
    for words in PERSONAL:
        assert words not in html, words
    assert "The team's days off" in html
    assert "Days the team works anyway" in html
    assert "The team's day, as you edit it" in html


@pytest.mark.usefixtures("team")
def test_a_refused_team_save_names_the_field_as_the_team_does(page: PageClient) -> None:
    form = page.get("/team/schedule/").content.decode()
    version = form.split('name="version" value="', 1)[1].split('"', 1)[0]
    response = page.post("/team/schedule/", {"version": version, "extra_holidays": "not a date"})
    html = unescape(response.content.decode())
    assert response.status_code == 400
    assert "Your own days off" not in html
    assert "The team's days off" in html


@pytest.mark.usefixtures("team")
def test_it_speaks_chinese(page: PageClient) -> None:
    html = page.get("/team/schedule/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "团队的休息日" in html
    assert "你自己的休息日" not in html


def test_a_persons_schedule_keeps_their_own_words(page: PageClient) -> None:
    html = unescape(page.get("/schedule/").content.decode())
    assert "Your own days off" in html
    assert "The team's days off" not in html


def test_the_team_audit_names_the_teams_setting() -> None:
    with translation.override("en"):
        assert _audit_key("team", "extra_holidays") == "The team's days off"
        assert _audit_key("schedule", "extra_holidays") == "Your own days off"
    assert labels_of(team=True)["timezone"] == labels_of()["timezone"]


@pytest.mark.usefixtures("team")
def test_the_team_schedule_explains_the_members_ai_not_yours(page: PageClient) -> None:
    """The help texts that speak of the person's own AI say the members' there
    (``Setting.team_help``); the person's page keeps its own (the control)."""
    team_html = unescape(page.get("/team/schedule/").content.decode())
    own_html = unescape(page.get("/schedule/").content.decode())
    told = {name: s for name, s in settings_of().items() if s.team_help}
    assert {"enabled", "wake_up", "lights_out", "peak_shift", "extra_workdays"} <= told.keys()
    with translation.override("en"):
        for setting in told.values():
            assert setting.help not in team_html, setting.help
            assert setting.team_help in team_html, setting.team_help
            assert setting.help in own_html
            assert setting.team_help not in own_html
    assert "your peak-hours reply" not in team_html
    assert "your peak-hours reply" in own_html
