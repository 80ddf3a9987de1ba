"""Validation messages in the page's language; the API keeps its English.

The validation layer builds each message as a ``Message`` (English text plus
its template), the page renders it again through gettext, and the API sends
the English unchanged: a machine contract, whatever the client's language.
"""

from __future__ import annotations

import ast
import gettext
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.utils import translation

from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.messages import Message
from curfew_core.web import words
from tests.conftest import ApiClient
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields, set_rows

ROOT = Path(__file__).resolve().parents[2]
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
#: Where the page's validation messages are made.
SOURCES = (
    "curfew_core/schedules/values.py",
    "curfew_core/schedules/config.py",
    "curfew_core/schema/verdict_request.py",
    # Override errors (the page's override forms; the API keeps the English).
    "curfew_core/schedules/override_commands.py",
    "curfew_core/services/overrides.py",
)


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/schedule/").content.decode(), "schedule-form")


def test_a_refused_save_is_flagged_in_chinese(page: PageClient) -> None:
    response = page.post("/schedule/", as_post(_form(page), curfew_start="25:00"), **ZH)
    assert response.status_code == 400
    html = response.content.decode()
    error = html.split('id="err-curfew_start" aria-live="polite">')[1].split("</p>")[0]
    assert error == "&#x27;25:00&#x27; 不是 HH:MM 格式的时刻（00:00–23:59）"
    assert "is not a time" not in html


def test_a_bad_anchor_row_is_flagged_in_chinese(page: PageClient) -> None:
    data = as_post(_form(page))
    set_rows(
        data,
        "anchors",
        time=["23:00", "00:00", "01:00", "02:00", "03:00"],
        tokens=["2048", "lots", "800", "320", "64"],
    )
    response = page.post("/schedule/", data, **ZH)
    assert response.status_code == 400
    row = response.content.decode().split('id="anchor-msg-1"')[1].split("</span>")[0]
    # The row's own problem, without the "row 2: " the API numbers it with.
    assert row.endswith(">必须是整数个 token，而不是 &#x27;lots&#x27;")


def test_the_live_preview_flags_in_chinese(page: PageClient) -> None:
    data = as_post(_form(page), lights_out="22:00", wake_up="21:30")
    html = page.post("/schedule/preview/", data, htmx=True, **ZH).content.decode()
    assert "相互重叠：这一夜会超过 24 小时" in html
    assert "overlap" not in html


def test_the_decision_preview_flags_in_chinese(page: PageClient) -> None:
    response = page.get("/decision/", {"max_tokens": "-3"}, htmx=True, **ZH)
    assert response.status_code == 422
    expected = "max_tokens: 必须是 1 到 2147483647 之间的整数或留空，而不是 -3"
    assert expected in response.content.decode()


def test_the_same_refusal_by_the_api_is_english_whatever_the_language(
    api: ApiClient, user: User
) -> None:
    for language in ("zh-CN,zh;q=0.9", "en"):
        response = api.client.patch(
            "/api/v1/schedule",
            '{"curfew_start": "25:00", "anchors": [["23:00", "lots"]]}',
            content_type="application/json",
            HTTP_ACCEPT_LANGUAGE=language,
        )
        assert response.status_code == 400
        fields = response.json()["fields"]
        assert fields["curfew_start"] == "'25:00' is not a time of day in HH:MM (00:00-23:59)"
        assert fields["anchors"] == "row 1: must be a whole number of tokens, not 'lots'"


def test_a_message_is_its_english_text_and_renders_in_the_active_language() -> None:
    with pytest.raises(schedule_config.ConfigError) as refused:
        schedule_config.apply_changes({}, {"tier_texts": ["ok", " "]})
    message = refused.value.errors["tier_texts"]
    assert message == "tier 2 must not be empty"
    assert isinstance(message, Message)
    with translation.override("zh-hans"):
        assert words.localized(message) == "第 2 档不能为空"
    with translation.override("en"):
        assert words.localized(message) == "tier 2 must not be empty"
    assert words.localized("plain text") == "plain text"


def _templates() -> list[str]:
    """Every ``Message("...")`` template in the validation layer's source."""
    found: list[str] = []
    for source in SOURCES:
        tree = ast.parse((ROOT / source).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Message":
                first: Any = node.args[0]
                if isinstance(first, ast.Constant):
                    found.append(first.value)
            elif (
                # A template chosen first and passed as a name (a conditional),
                # or passed to a helper that builds the Message (``_short_list``).
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "%(" in node.value
                and node.value.startswith(("must", "row", "tier", "has"))
            ):
                found.append(node.value)
    return sorted(set(found))


def test_every_validation_message_has_a_chinese_translation() -> None:
    templates = _templates()
    assert len(templates) > 40
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    missing = [t for t in templates if catalogue.gettext(t) == t]
    assert not missing, missing
    # Each translation takes exactly the template's parameters.
    for template in templates:
        names = {part.split(")s")[0] for part in template.split("%(")[1:]}
        values = dict.fromkeys(names, "x")
        assert (catalogue.gettext(template) % values) if values else True
