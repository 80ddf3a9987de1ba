"""Teams speak the member's language (issue 39): a team's replies and sleepy
voice default to the ones that say why, and each member's gateway says them
in the member's language, through the verdict API and the proxy alike; the
terse seed replies an admin chose stay terse; existing teams that never
touched their replies get the ones that say why (migration 0009), a team
that chose the terse ones keeps them. Each gate with its control."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import override_settings
from django.utils import translation

from curfew_core.engine.schedule import (
    DEFAULT_PERSONA_EN,
    DEFAULT_PERSONA_ZH,
)
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.bundles import bundle_for, bundles_for
from curfew_core.services.account import language_set
from curfew_core.services.teams import (
    member_add,
    team_create,
    team_schedule_update,
    team_token_create,
)
from curfew_core.services.tokens import token_create
from curfew_core.services.users import user_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock

#: The frozen clock reads 20:00 (Shanghai): the team is at lights-out, the members' own night far.
TEAM_NIGHT = {
    "curfew_start": "19:00",
    "lights_out": "19:30",
    "wake_up": "07:00",
    "anchors": [["19:00", 1024], ["19:30", 64]],
}
EN = "Curfew: lights out until 07:00."
ZH = "Curfew：已熄灯，07:00 再说。"
#: 19:15: the team is getting sleepy, the members' own day goes on.
WINDING = "2026-09-29T19:15:00+08:00"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def post(token: str, path: str, body: dict[str, Any], **headers: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.post(path, body, content_type="application/json")


def verdict(token: str, **body: Any) -> dict[str, Any]:
    answer = post(token, "/api/v1/verdict", body)
    assert answer.status_code == 200, answer.content
    got: dict[str, Any] = answer.json()
    return got


def person(name: str, language: str) -> User:
    user = User.objects.create_user(name)
    if language:
        language_set(user=user, language=language, actor=user, channel="page")
    return user


@pytest.fixture
def acme(transactional_db: None, clock: FrozenClock) -> Iterator[dict[str, Any]]:
    """A team with an English member and a Chinese one, both on their own
    defaults (the seed's terse Chinese replies), the team at lights-out."""
    boss = person("boss", "en")
    eve, zhu = person("eve", "en"), person("zhu", "zh-hans")
    team = team_create(name="acme", admin=boss)
    for member in (eve, zhu):
        member_add(team=team, user=member)
    team_schedule_update(team=team, changes=TEAM_NIGHT)
    _, key = team_token_create(team=team)
    # Nothing listens here: a call sent upstream is a 502, a short-circuit never is.
    with override_settings(CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1"):
        yield {
            "team": team,
            "key": key,
            "users": {"eve": eve, "zhu": zhu},
            "eve": token_create(user=eve)[1],
            "zhu": token_create(user=zhu)[1],
        }


def test_each_member_hears_the_team_reply_in_their_language(acme: dict[str, Any]) -> None:
    for name, reply in (("eve", EN), ("zhu", ZH)):
        got = verdict(acme[name])
        assert (got["state"], got["action"]) == ("lights-out", "short-circuit")
        assert got["reply"] == reply, name
        # The team key asks for the same member: the same words.
        assert verdict(acme["key"], user=name)["reply"] == reply


def test_the_proxy_answers_in_each_members_language(acme: dict[str, Any]) -> None:
    for name, reply in (("eve", EN), ("zhu", ZH)):
        chat = post(acme[name], "/v1/chat/completions", CHAT)
        assert chat.status_code == 200, chat.content
        assert chat.json()["choices"][0]["message"]["content"] == reply
        keyed = post(acme["key"], "/v1/chat/completions", CHAT, HTTP_X_CURFEW_USER=name)
        assert keyed.json()["choices"][0]["message"]["content"] == reply
        anthropic = post(acme[name], "/v1/messages", MESSAGES)
        assert anthropic.status_code == 200, anthropic.content
        assert anthropic.json()["content"][0]["text"] == reply


def test_the_teams_sleepy_voice_is_the_members_language(acme: dict[str, Any]) -> None:
    eve, zhu = verdict(acme["eve"], at=WINDING), verdict(acme["zhu"], at=WINDING)
    assert eve["state"] == zhu["state"] == "winding"
    assert eve["persona"].startswith(DEFAULT_PERSONA_EN)
    assert zhu["persona"].startswith(DEFAULT_PERSONA_ZH)


def test_terse_replies_an_admin_chose_stay_terse(acme: dict[str, Any]) -> None:
    team_schedule_update(team=acme["team"], changes=dict(schedule_config.TERSE_REPLIES))
    for name in ("eve", "zhu"):
        assert verdict(acme[name])["reply"] == "明天再说。"
    # And a team's own words are said as written, to everyone.
    team_schedule_update(team=acme["team"], changes={"lights_out_reply": "Go to bed, {until}"})
    for name in ("eve", "zhu"):
        assert verdict(acme[name])["reply"] == "Go to bed, 07:00"


def test_a_chinese_reply_that_says_why_is_said_in_english_to_eve(acme: dict[str, Any]) -> None:
    # An admin who picked "say when it ends" on a Chinese page saved the Chinese template.
    team_schedule_update(
        team=acme["team"], changes={"lights_out_reply": "Curfew：已熄灯，{until} 再说。"}
    )
    assert verdict(acme["eve"])["reply"] == EN
    assert verdict(acme["zhu"])["reply"] == ZH


def test_a_language_change_reaches_the_gateway_at_once(acme: dict[str, Any]) -> None:
    assert verdict(acme["eve"])["reply"] == EN
    eve = acme["users"]["eve"]
    language_set(user=eve, language="zh-hans", actor=eve, channel="page")
    assert verdict(acme["eve"])["reply"] == ZH


def test_without_a_preference_the_members_own_voice_decides(acme: dict[str, Any]) -> None:
    team = acme["team"]
    # New accounts, made on a Chinese page and on an English one, no preference kept.
    with translation.override("zh-hans"):
        li = user_create(username="li")
    with translation.override("en"):
        ann = user_create(username="ann")
    # Never saved anything, no preference: the site's language.
    raw = User.objects.create_user("raw")
    for member in (li, ann, raw):
        member_add(team=team, user=member)
    assert verdict(token_create(user=li)[1])["reply"] == ZH
    assert verdict(token_create(user=ann)[1])["reply"] == EN
    assert verdict(token_create(user=raw)[1])["reply"] == EN


def test_a_new_team_starts_with_the_replies_that_say_why(transactional_db: None) -> None:
    chinese = person("zhang", "zh-hans")
    team = team_create(name="wu", admin=chinese)
    assert team.config["lights_out_reply"] == "Curfew：已熄灯，{until} 再说。"
    assert team.config["tired_persona"] == DEFAULT_PERSONA_ZH
    english = person("amy", "en")
    other = team_create(name="ab", admin=english)
    assert other.config["off_duty_reply"] == "Curfew: peak hours until {until}."
    assert other.config["tired_persona"] == DEFAULT_PERSONA_EN


def test_a_page_of_members_reads_each_in_their_language(acme: dict[str, Any]) -> None:
    """``bundles_for`` (the Team page's members, read together) as ``bundle_for``."""
    users = acme["users"]
    cache.clear()
    together = bundles_for([users["eve"].pk, users["zhu"].pk])
    for name, template in (
        ("eve", "Curfew: lights out until {until}."),
        ("zhu", "Curfew：已熄灯，{until} 再说。"),
    ):
        side = together[users[name].pk].team
        assert side is not None
        assert side.schedule.lights_out_reply == template
        cache.clear()
        alone = bundle_for(users[name].pk).team
        assert alone is not None
        assert alone.schedule.lights_out_reply == template
