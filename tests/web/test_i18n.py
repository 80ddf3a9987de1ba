"""English and Chinese: from the browser's language, and switchable."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

from django.conf import settings

from tests.web.conftest import PageClient


def test_chinese_from_the_browser_language(page: PageClient) -> None:
    html = page.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert '<html lang="zh-Hans">' in html
    for words in ("你的一天", "保存作息表", "收尾曲线", "临时调整", "熄灯"):
        assert words in html
    assert "Save schedule" not in html


def test_english_by_default(page: PageClient) -> None:
    html = page.get("/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert '<html lang="en">' in html
    assert "Save schedule" in html
    assert "保存作息表" not in html


def test_switch_language_with_set_language(page: PageClient) -> None:
    response = page.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    html = page.get("/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert "保存作息表" in html
    page.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Save schedule" in page.get("/").content.decode()


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
    ids = re.findall(r'^msgid "(.+)"$', po.read_text(encoding="utf-8"), flags=re.M)
    assert len(ids) > 150
    # Every string of the .po is in the .mo (recompile after editing).
    unescaped = [i.replace('\\"', '"') for i in ids]
    missing = [i for i in unescaped if i not in known and (i, 0) not in known]
    assert not missing, missing[:5]
