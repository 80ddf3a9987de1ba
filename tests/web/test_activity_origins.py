"""The Activity page names every ledger origin in words, never by its bare
code: each wire protocol's origins (``protocols.ALL`` declares them, so a new
protocol's are named without a web edit), Gemini's among them, in Chinese on
the Chinese page."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core import protocols
from curfew_core.ledger.entry import Entry
from curfew_core.services import ledger_recorder as recorder
from curfew_core.web.activity import words
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db

ZH = "zh-CN,zh;q=0.9"
DECLARED = sorted({origin for protocol in protocols.ALL for origin in protocol.origins})


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("origin", DECLARED)
def test_every_declared_origin_has_words(origin: str, language: str) -> None:
    with translation.override(language):
        said = words.origin_word(origin)
    assert said != origin
    if language != "en":
        assert "proxy" not in said, said  # translated, not left in English


def test_a_new_protocols_origin_is_named_without_a_web_edit() -> None:
    assert str(words._route_word("converse")) == "proxy: converse"
    with translation.override("zh-hans"):
        assert str(words._route_word("converse")) == "代理：converse 接口"


def _origin_cell(html: str) -> str:
    row = re.search(r"<tr data-action=.*?</tr>", html, re.S)
    assert row is not None, "no ledger line on the page"
    # Any attributes after the label (a cell's class): the cells, not their markup.
    cells = re.findall(r'<td data-label="[^"]*"[^>]*>(.*?)</td>', row.group(0), re.S)
    assert cells, row.group(0)
    return " | ".join(re.sub(r"<[^>]+>", "", cell).strip() for cell in cells)


def test_the_activity_page_names_gemini(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
    recorder.record(Entry(at=at, state="on-duty", action="pass", origin="gemini", user_id=user.pk))
    recorder.flush()
    en = _origin_cell(page.get("/activity/").content.decode())
    assert "proxy: Gemini" in en
    zh = _origin_cell(page.get("/activity/", HTTP_ACCEPT_LANGUAGE=ZH).content.decode())
    assert "代理：Gemini 接口" in zh
    assert "gemini" not in zh
