""" "Pretend it is ...": a banner on every signed-in page while gateways are being
told another moment, with a stop button that is a plain form (no JavaScript),
gone when it ends; the form that starts it; its errors in the page's language
while the API keeps the English."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.template.loader import render_to_string
from django.test import RequestFactory, TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import translation

from curfew_core.engine import OverrideError
from curfew_core.models import Override
from curfew_core.schedules.override_commands import from_json, from_words
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.overrides import override_apply
from curfew_core.web import words
from curfew_core.web.schedule.pretend import pretend_context
from tests.api.conftest import FrozenClock, local
from tests.conftest import ApiClient
from tests.web.conftest import PageClient

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
BANNER = 'id="pretend-banner"'
#: Every signed-in page (the settings page and the capsule's manage page).
PAGES = ["/", "/embed/"]


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local("2026-09-29 20:00"))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


def pretend(user: User, words: list[str], now: datetime) -> None:
    override_apply(user=user, command=from_words(words), now=now, actor=user)


def banner(html: str) -> str:
    match = re.search(r'<div class="pretend-banner".*?</div>', html, re.S)
    assert match, "no banner"
    return match.group(0)


@pytest.mark.parametrize("path", PAGES)
def test_no_banner_without_a_pretend(page: PageClient, path: str) -> None:
    response = page.get(path)
    assert response.status_code == 200
    assert BANNER not in response.content.decode()


@pytest.mark.parametrize("path", PAGES)
def test_the_banner_is_on_every_signed_in_page_while_pretending(
    page: PageClient, user: User, clock: FrozenClock, path: str
) -> None:
    pretend(user, ["debug", "2026-09-30 01:30", "for", "4h"], clock.now)
    clock.advance(timedelta(minutes=18))
    text = re.sub(r"\s+", " ", banner(page.get(path).content.decode()))
    assert "Pretending:" in text
    assert (
        "gateways are being told it is 2026-09-30 01:30 (until 2026-09-30 00:00 on the real clock,"
        in text
    )
    # The countdown in its own element, which page.js ticks each minute.
    assert "3 hours, 42 minutes left" in re.sub(r"<[^>]+>", "", text)
    assert re.search(r'<span id="pretend-countdown" aria-live="off" data-until-ms="\d+"', text)
    # The stop button: a plain POST form (no hx-*), clearing the pretend.
    form = re.search(r"<form[^>]*>.*?</form>", text, re.S)
    assert form
    assert 'action="/overrides/"' in form.group(0)
    assert 'method="post"' in form.group(0)
    assert "hx-" not in form.group(0)
    assert 'name="verb" value="debug-clear"' in form.group(0)
    assert "csrfmiddlewaretoken" in form.group(0)
    assert "style=" not in text  # the CSP allows no inline style


def test_the_banner_speaks_chinese(page: PageClient, user: User, clock: FrozenClock) -> None:
    pretend(user, ["debug", "23:30"], clock.now)
    text = banner(page.get("/", **ZH).content.decode())
    assert "假装中" in text
    assert "网关被告知现在是 2026-09-29 23:30（持续到真实时间 21:00" in text
    assert "停止假装" in text
    assert "Pretending" not in text


def test_stop_works_without_javascript(page: PageClient, user: User, clock: FrozenClock) -> None:
    pretend(user, ["debug", "23:30"], clock.now)
    html = page.get("/embed/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', banner(html))
    assert token
    # As a browser without JavaScript sends it: no HX-Request header.
    response = page.post("/overrides/", {"verb": "debug-clear"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    override = Override.objects.get(user=user)
    assert (override.debug_at, override.debug_until) == (None, None)
    assert BANNER not in page.get("/").content.decode()
    assert BANNER not in page.get("/embed/").content.decode()


def test_the_banner_goes_when_the_pretend_ends(
    page: PageClient, user: User, clock: FrozenClock
) -> None:
    pretend(user, ["debug", "23:30", "for", "15m"], clock.now)
    clock.advance(timedelta(minutes=14))
    assert BANNER in page.get("/").content.decode()
    clock.advance(timedelta(minutes=1))
    assert BANNER not in page.get("/").content.decode()
    assert BANNER not in page.get("/embed/").content.decode()


def test_no_banner_for_a_visitor_not_signed_in(
    anonymous: PageClient, user: User, clock: FrozenClock
) -> None:
    pretend(user, ["debug", "23:30"], clock.now)
    html = anonymous.get("/login/").content.decode()
    assert BANNER not in html


def test_the_banner_costs_no_query_once_the_bundle_is_warm(user: User, clock: FrozenClock) -> None:
    request = RequestFactory().get("/")
    request.user = user
    for words_set in (None, ["debug", "23:30"]):
        if words_set:
            with TestCase.captureOnCommitCallbacks(execute=True):
                pretend(user, words_set, clock.now)
        bundle_for(user.pk)  # the page's own verdict reads it first
        with CaptureQueriesContext(connection) as queries:
            found = bool(pretend_context(request)["pretend"])
        assert found is bool(words_set)
        assert len(queries) == 0, [q["sql"] for q in queries]


def test_the_context_is_lazy() -> None:
    """A page that never shows the banner reads nothing, not even the user."""
    request: Any = RequestFactory().get("/")
    context = pretend_context(request)  # no ``request.user``: reading it would fail
    assert set(context) == {"pretend"}


# -- the form that starts it ---------------------------------------------------------


def _form_html(page_user: User, language: str = "en") -> str:
    request = RequestFactory().get("/")
    request.user = page_user
    with translation.override(language):
        return render_to_string("curfew/_pretend_form.html", {}, request=request)


def test_the_form_posts_the_debug_verb_a_moment_and_a_duration(user: User) -> None:
    html = _form_html(user)
    assert re.search(r'<form method="post" action="/overrides/"', html)
    assert 'name="verb" value="debug"' in html
    # A plain text box: a datetime-local one ate what was typed (issue 39).
    assert re.search(r'<input type="text" id="time-machine" name="moment" value=""', html)
    assert "datetime-local" not in html
    options = re.findall(r'<option value="([^"]+)"( selected)?>', html)
    assert options == [("15m", ""), ("1h", " selected"), ("4h", ""), ("24h", "")]
    assert ">Pretend</button>" in html
    assert "Gateways and the capsule will act as if it were this moment" in html
    assert "style=" not in html
    zh = _form_html(user, "zh-hans")
    assert "假装现在是" in zh
    assert "持续 4 小时" in zh
    assert "Gateways and" not in zh


def test_the_form_words_reach_the_row(user: User, clock: FrozenClock) -> None:
    """What the form posts, through ``words_from_form``, to the service."""
    from django.http import QueryDict

    from curfew_core.schedules.override_commands import words_from_form

    posted = QueryDict(mutable=True)
    posted.update({"verb": "debug", "moment": "2026-09-30T01:30", "duration": "4h"})
    pretend(user, words_from_form(posted), clock.now)
    override = Override.objects.get(user=user)
    assert (override.debug_at, override.debug_until) == (
        local("2026-09-30 01:30"),
        clock.now + timedelta(hours=4),
    )


def test_the_page_form_sets_the_duration(page: PageClient, user: User, clock: FrozenClock) -> None:
    page.post("/overrides/", {"verb": "debug", "moment": "2026-09-30T01:30", "duration": "4h"})
    override = Override.objects.get(user=user)
    assert override.debug_until == clock.now + timedelta(hours=4)


# -- override errors: the page's language, the API's English -------------------------


def test_override_errors_render_in_the_active_language() -> None:
    with pytest.raises(OverrideError) as refused:
        from_words(["overtime", "forever"])
    with translation.override("zh-hans"):
        zh = words.override_error(refused.value)
    assert zh == "'forever' 不是时长；请用例如 30m、2h、90s、1h30m 或分钟数"
    assert str(refused.value) == (
        "'forever' is not a duration; use e.g. 30m, 2h, 90s, 1h30m or a number of minutes"
    )
    with pytest.raises(OverrideError) as refused:
        from_json({"debug": "01:30", "duration": "2d"})
    with translation.override("zh-hans"):
        assert words.override_error(refused.value).startswith("时长应形如")


def test_a_refused_override_is_flagged_in_chinese_on_the_page(page: PageClient) -> None:
    response = page.post("/overrides/", {"verb": "overtime", "duration": "forever"}, **ZH)
    assert response.status_code == 400
    html = response.content.decode()
    assert "不是时长" in html
    assert "is not a duration" not in html


def test_the_same_refusal_by_the_api_is_english(api: ApiClient) -> None:
    for language in ("zh-CN,zh;q=0.9", "en"):
        response = api.client.post(
            "/api/v1/overrides",
            '{"debug": "01:30", "duration": "25h"}',
            content_type="application/json",
            HTTP_ACCEPT_LANGUAGE=language,
        )
        assert response.status_code == 422
        assert response.json()["fields"]["duration"] == (
            "'25h' is not a length to pretend for; use e.g. 15m, 1h, 4h or 24h "
            "(from 1 minute to 24 hours)"
        )


def test_every_engine_override_error_has_a_chinese_translation() -> None:
    """The engine's parsers raise ``OverrideError(template, **params)``; the
    doors turn those into ``Message`` (``override_commands.localizable``)."""
    import ast
    import gettext
    from pathlib import Path

    from django.conf import settings

    source = Path(__file__).resolve().parents[2] / "curfew_core/engine/overrides.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    templates = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "%(" in node.value
        and "\n" not in node.value  # not the docstring
    }
    assert len(templates) == 5
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    assert [t for t in templates if catalogue.gettext(t) == t] == []


def test_the_hint_on_the_overview_points_below_not_at_the_overview(page: PageClient) -> None:
    """The form sits on the overview: "use the preview on the overview" would
    send the reader to the page they are on. It names the preview below."""
    for extra, below, elsewhere in (
        ({}, "use “Look at another time of this day” below.", "preview on the overview"),
        (ZH, "请使用下方的“查看当天的其他时间”。", "概览页上的预览"),
    ):
        html = page.get("/", **extra).content.decode()
        hint = re.search(r'<p class="hint" id="pretend-hint">(.*?)</p>', html, re.S)
        assert hint, "no pretend hint"
        assert below in hint.group(1)
        assert elsewhere not in hint.group(1)


# -- the countdown: right on load, to the minute (issue 39) ---------------------------


@pytest.mark.parametrize(
    ("left", "en", "zh"),
    [
        # A 15-minute pretend two seconds in: 15 left, not "14 minutes" (floored).
        (timedelta(minutes=14, seconds=58), "15 minutes", "15 分钟"),
        (timedelta(seconds=30), "1 minute", "1 分钟"),
        (timedelta(hours=3, minutes=42), "3 hours, 42 minutes", "3 小时，42 分钟"),
        (timedelta(hours=3, minutes=59, seconds=1), "4 hours", "4 小时"),
    ],
)
def test_the_countdown_is_the_minutes_left_rounded_up(left: timedelta, en: str, zh: str) -> None:
    from curfew_core.web.schedule.pretend import countdown_text

    now = local("2026-09-29 20:00")
    with translation.override("en"):
        assert countdown_text(now + left, now) == en
    with translation.override("zh-hans"):
        assert countdown_text(now + left, now) == zh


def test_a_typed_moment_with_a_space_is_taken(
    page: PageClient, user: User, clock: FrozenClock
) -> None:
    page.post("/overrides/", {"verb": "debug", "moment": "2026-09-30 01:30", "duration": "15m"})
    override = Override.objects.get(user=user)
    assert override.debug_at == local("2026-09-30 01:30")
    html = page.get("/").content.decode()
    # The box shows the moment as it is typed, with a space.
    assert 'id="time-machine" name="moment" value="2026-09-30 01:30"' in html
    assert "15 minutes left" in re.sub(r"<[^>]+>", "", banner(html))
