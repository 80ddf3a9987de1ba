"""The team's schedule sets every member's day, and no member's own schedule
can loosen it: its band legend, the band's tags, the wind-down card's hint
and the chart's caption speak of the team and its members, never to the
reader about their own AI ("your AI answers as usual", "follows your
night"). The same words come back in the live preview (htmx), in en and zh.
The person's own Schedule keeps its words (the control)."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.auth.models import User

from curfew_core.models import Team
from curfew_core.services import teams as team_services
from tests.web.conftest import PageClient

ZH = "zh-CN,zh;q=0.9"
#: A person's words about their own AI (en, zh), and the team's instead.
YOURS = {
    "en": (
        "your AI answers as usual",
        "The wind-down follows your night",
        "No peak hours today: your AI works normally",
        "exactly as gateways will get it",
    ),
    "zh": ("你的 AI 照常回答", "这条曲线跟着你的夜晚走", "今天没有高峰时段：你的 AI"),
}
TEAMS = {
    "en": (
        "the members' AI answers as usual",
        "The wind-down follows the team's night",
        "a member whose own night is harsher gets theirs",
    ),
    "zh": ("成员的 AI 照常回答", "这条曲线跟着团队的夜晚走", "以成员自己的为准"),
}
#: A weekend day with no peak hours: the band's tag and its title are drawn.
WEEKEND = {"band_date": "2026-10-03", "band_view": "week"}
VALLEY_EN = "No peak hours today: the members' AI works normally until the night."


@pytest.fixture
def team(user: User) -> Team:
    made: Team = team_services.team_create(name="night-owls", admin=user)
    return made


def _html(response: object) -> str:
    assert response.status_code == 200  # type: ignore[attr-defined]
    return unescape(response.content.decode())  # type: ignore[attr-defined]


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_team_schedule_speaks_of_the_members(page: PageClient, language: str) -> None:
    extra = {"HTTP_ACCEPT_LANGUAGE": ZH} if language == "zh" else {}
    html = _html(page.get("/team/schedule/", WEEKEND, **extra))
    for words in YOURS[language]:
        assert words not in html, words
    for words in TEAMS[language]:
        assert words in html, words
    if language == "en":
        assert VALLEY_EN in html


@pytest.mark.usefixtures("team")
def test_the_team_preview_keeps_the_teams_words(page: PageClient) -> None:
    """The band the preview swaps in as the admin edits says the same."""
    form = page.get("/team/schedule/").content.decode()
    version = form.split('name="version" value="', 1)[1].split('"', 1)[0]
    response = page.post(
        "/team/schedule/preview/",
        {"version": version, "curfew_start": "22:00", **WEEKEND},
        htmx=True,
    )
    html = _html(response)
    assert 'id="band"' in html
    assert "your AI" not in html
    assert "the members' AI answers as usual" in html


def test_a_persons_schedule_keeps_their_own_words(page: PageClient) -> None:
    html = _html(page.get("/schedule/", WEEKEND))
    for words in YOURS["en"]:
        assert words in html, words
    for words in TEAMS["en"]:
        assert words not in html, words
