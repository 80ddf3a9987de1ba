"""English and Chinese: from the browser's language, and switchable."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.web.conftest import PageClient

ZH_CN = "zh-CN,zh;q=0.9"
#: Words each section shows, by their English msgid.
SECTION_WORDS = {
    "/": ("Your day", "Back to schedule", "Change it for now", "Switch off until morning"),
    "/schedule/": (
        "Peak hours",
        "Save",
        "The wind-down: answer length through the night",
        "Gets sleepy at",
    ),
    "/replies/": ("What your AI says while it is off", "How it sounds when sleepy", "Save"),
    "/integrations/": ("Access keys", "Decision preview", "Set up your tools"),
    "/activity/": ("Activity",),
}


def _catalogue() -> gettext.GNUTranslations:
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        return gettext.GNUTranslations(handle)


def test_chinese_from_the_browser_language(page: PageClient) -> None:
    html = page.get("/", HTTP_ACCEPT_LANGUAGE=ZH_CN).content.decode()
    assert '<html lang="zh-Hans">' in html
    for words in ("你的一天", "恢复作息表", "现在", "熄灯"):
        assert words in html
    assert "Your day" not in html
    assert "Back to schedule" not in html


@pytest.mark.parametrize("path", list(SECTION_WORDS))
def test_each_section_speaks_chinese(page: PageClient, path: str) -> None:
    catalogue = _catalogue()
    translated = [
        (english, catalogue.gettext(english))
        for english in SECTION_WORDS[path]
        if catalogue.gettext(english) != english
    ]
    if not translated:
        pytest.skip(f"no Chinese yet for the words of {path}")
    html = page.get(path, HTTP_ACCEPT_LANGUAGE=ZH_CN).content.decode()
    assert '<html lang="zh-Hans">' in html
    for english, chinese in translated:
        assert chinese in html, (english, chinese)


def test_english_by_default(page: PageClient) -> None:
    html = page.get("/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert '<html lang="en">' in html
    assert "Your day" in html
    assert "Back to schedule" in html
    assert "你的一天" not in html
    assert ">Save</button>" in page.get("/schedule/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()


def test_switch_language_with_set_language(page: PageClient) -> None:
    # The switch on a section comes back to that section.
    html = page.get("/schedule/").content.decode()
    assert '<input type="hidden" name="next" value="/schedule/">' in html
    response = page.post("/i18n/setlang/", {"language": "zh-hans", "next": "/schedule/"})
    assert response.status_code == 302
    assert response["Location"] == "/schedule/"
    html = page.get("/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert "你的一天" in html
    page.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Your day" in page.get("/").content.decode()


def test_sign_in_page_in_chinese(anonymous: PageClient) -> None:
    html = anonymous.get("/login/", HTTP_ACCEPT_LANGUAGE="zh-Hans").content.decode()
    assert "用户名" in html
    assert "密码" in html


def test_compiled_catalogue_is_shipped() -> None:
    # Committed, so running the app needs no gettext tools.
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    po = mo.with_suffix(".po")
    with mo.open("rb") as handle:
        known = set(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]
    # Each msgid with its msgctxt, if any: gettext keys those "context\x04msgid".
    found = re.findall(
        r'^(?:msgctxt "(.*)"\n)?msgid "(.+)"$', po.read_text(encoding="utf-8"), flags=re.M
    )
    ids = [f"{context}\x04{msgid}" if context else msgid for context, msgid in found]
    assert len(ids) > 150
    assert any("\x04" in i for i in ids), "the catalogue's contexts are read too"
    # Every string of the .po is in the .mo (recompile after editing).
    unescaped = [i.replace('\\"', '"') for i in ids]
    missing = [i for i in unescaped if i not in known and (i, 0) not in known]
    assert not missing, missing[:5]
