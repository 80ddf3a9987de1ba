"""A time zone is named as a place in the reader's language where one is kept
(``choices.ZONE_PLACES``): 上海 on a Chinese page, Shanghai on an English one;
the zone id stays where it is a detail (the Details' code, the JSON). Chinese
pages used to say "Shanghai" and "Asia/Shanghai" in running text."""

from __future__ import annotations

import re
import zoneinfo

import pytest
from django.contrib.auth.models import User
from django.utils import translation

from curfew_core.models import Team
from curfew_core.web.schedule import choices
from tests.teams.test_team_policy_card import _save, pair
from tests.web.conftest import PageClient

__all__ = ["pair"]

ZH = "zh-CN,zh;q=0.9"
EN = "en"


def _prose(html: str) -> str:
    """What a person reads as text: no scripts, code or JSON, no tags."""
    html = re.sub(r"<(script|code|pre|select)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_every_kept_place_is_a_zone_and_has_a_chinese_name() -> None:
    offered = choices.timezone_offered()
    for name, place in choices.ZONE_PLACES.items():
        assert name in zoneinfo.available_timezones()
        assert name in offered
        with translation.override("zh-hans"):
            chinese = str(place)
        with translation.override("en"):
            english = str(place)
        assert chinese != english, name
        assert re.fullmatch(r"[\u4e00-\u9fff]+", chinese), (name, chinese)


@pytest.mark.parametrize("path", ["/", "/schedule/", "/activity/", "/team/"])
def test_a_members_chinese_pages_name_the_place_in_chinese(
    pair: tuple[Team, User], path: str
) -> None:
    team, bob = pair
    _save(team, bob, {"curfew_start": "22:00"}, {})
    client = PageClient(bob)
    client.client.cookies["django_language"] = "zh-hans"
    zh = _prose(client.get(path, HTTP_ACCEPT_LANGUAGE=ZH).content.decode())
    assert "上海" in zh
    assert "Shanghai" not in zh
    client.client.cookies["django_language"] = "en"
    en = _prose(client.get(path, HTTP_ACCEPT_LANGUAGE=EN).content.decode())
    assert "Shanghai" in en
    assert "上海" not in en
    assert "Asia/Shanghai" not in en


def test_the_picker_names_the_place_in_chinese(pair: tuple[Team, User]) -> None:
    _team, bob = pair
    client = PageClient(bob)
    client.client.cookies["django_language"] = "zh-hans"
    page = client.get("/account/", HTTP_ACCEPT_LANGUAGE=ZH).content.decode()
    assert re.search(r'<option value="Asia/Shanghai" selected>上海</option>', page)
    assert (
        '<option value="America/Argentina/Buenos_Aires">Buenos Aires (Argentina)</option>' in page
    )
