"""The error pages' own words (templates/404.html, 403.html, 400.html, 403_csrf.html, made
by the error pages' change) in Chinese: every msgid those templates translate
has its zh text in the catalogue, so a zh reader sees no English heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def _msgids(name: str) -> list[str]:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    return re.findall(r'{% translate "([^"]+)"', text)


@pytest.mark.parametrize("name", ["404.html", "403.html", "400.html", "403_csrf.html"])
def test_each_error_page_word_is_said_in_chinese(name: str) -> None:
    ids = _msgids(name)
    assert ids
    with translation.override("zh-hans"):
        untranslated = [i for i in ids if translation.gettext(i) == i]
    assert not untranslated, untranslated
