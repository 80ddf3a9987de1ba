"""QA finding: a page a person may not see, or one that does not exist, was
Django's bare English "Not Found" / "403 Forbidden": no stylesheet, no way
back, no Chinese. The settings site's refusals are its own pages, in the
person's language, with the site's stylesheet (served by whitenoise, never a
CDN) and a link back to the overview; the 500 page renders with no request at
all; the API door keeps answering its JSON (the control)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import translation

from curfew_core.models import Team
from curfew_core.services import teams as team_services
from tests.web.conftest import PageClient

STYLESHEET = re.compile(r'<link rel="stylesheet"[^>]* href="/static/curfew/curfew\.[^"]*css"')
HOME = 'href="/"'
SIGN_IN = 'href="/login/"'

#: Words the catalogue already had in Chinese before these pages: a zh page
#: that shows them is a page in the person's language.
ZH_BACK = "返回设置页面"
ZH_SIGN_IN = "登录"
ZH_SIGN_OUT = "退出登录"


@pytest.fixture
def stranger(db: None) -> PageClient:
    """eve, signed in, in no team."""
    return PageClient(User.objects.create_user("eve", password="correct horse battery"))


#: A ``src`` or ``href`` naming another origin (``//host`` or ``http(s)://``).
OFF_SITE = re.compile(r'\b(?:src|href)="(?:[a-z][a-z0-9+.-]*:)?//', re.I)


@pytest.fixture
def member(user: User) -> PageClient:
    """bob, signed in, a plain member of ada's team (ada: the ``user`` fixture)."""
    team: Team = team_services.team_create(name="night-owls", admin=user)
    bob = User.objects.create_user("bob", password="correct horse battery")
    team_services.member_add(team=team, user=bob)
    return PageClient(bob)


@pytest.fixture(autouse=True)
def _debug_off(settings: Any) -> None:
    """What a person sees in production: Django's error views, not its debug pages."""
    assert not settings.DEBUG


def _page(response: Any, status: int) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    text: str = response.content.decode()
    assert STYLESHEET.search(text), text[:400]
    # Nothing from another origin (a CDN): every src and href is this site's own.
    # Not the word "cdn" anywhere: a random CSRF token may hold it.
    assert not OFF_SITE.search(text), OFF_SITE.search(text)
    assert 'href="/" id="error-home"' in text  # the way back, beside the brand's
    # The site's own page: its top bar (brand, language switch), not Django's default.
    assert 'class="topbar"' in text
    assert "<h1>Not Found</h1>" not in text
    assert "403 Forbidden" not in text
    return text


@pytest.mark.parametrize(("language", "lang"), [("en", 'lang="en"'), ("zh-Hans", 'lang="zh-Hans"')])
def test_the_team_page_refuses_a_stranger_with_the_sites_404(
    stranger: PageClient, language: str, lang: str
) -> None:
    text = _page(stranger.get("/team/", HTTP_ACCEPT_LANGUAGE=language), 404)
    assert f"<html {lang}>" in text
    assert '<span class="who">eve</span>' in text  # signed in: the top bar names them ...
    assert SIGN_IN not in text  # ... and offers no sign-in
    if language == "en":
        assert "Page not found" in text
        assert "Back to the settings page" in text
    else:
        assert ZH_BACK in text
        assert ZH_SIGN_OUT in text
        assert "Back to the settings page" not in text


@pytest.mark.parametrize("language", ["en", "zh-Hans"])
def test_the_team_schedule_refuses_a_member_with_the_sites_403(
    member: PageClient, language: str
) -> None:
    text = _page(member.get("/team/schedule/", HTTP_ACCEPT_LANGUAGE=language), 403)
    if language == "en":
        assert 'lang="en"' in text
        assert "Back to the settings page" in text
    else:
        assert 'lang="zh-Hans"' in text
        assert ZH_BACK in text
        assert "Back to the settings page" not in text


def test_the_accounts_language_chooses_the_page(stranger: PageClient) -> None:
    """No Accept-Language: the language the account chose (its cookie) says it."""
    saved = stranger.post("/account/language/", {"language": "zh-hans"})
    assert saved.status_code == 302
    text = _page(stranger.get("/team/"), 404)
    assert 'lang="zh-Hans"' in text
    assert ZH_BACK in text


@pytest.mark.parametrize("language", ["en", "zh-Hans"])
def test_a_missing_page_offers_a_signed_out_person_the_sign_in(
    anonymous: PageClient, language: str
) -> None:
    text = _page(anonymous.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE=language), 404)
    assert SIGN_IN in text
    if language == "zh-Hans":
        assert ZH_SIGN_IN in text
        assert "Sign in" not in text


@pytest.mark.parametrize(
    ("language", "words"), [("en", "Something went wrong"), ("zh-hans", "出错了")]
)
def test_the_500_page_renders_with_no_request(language: str, words: str) -> None:
    with translation.override(language):
        text = render_to_string("500.html")
    assert STYLESHEET.search(text)
    assert HOME in text
    assert words in text


def test_the_500_view_answers_the_page_with_a_bare_request(db: None) -> None:
    """Django's own ``server_error`` (no context processors, no user) and the
    site's ``handler500`` both answer the styled page."""
    from django.views.defaults import server_error

    from curfew_site.urls import handler500

    request = RequestFactory().get("/")
    for view in (server_error, _resolve(handler500)):
        response = view(request)
        assert response.status_code == 500
        text = response.content.decode()
        assert STYLESHEET.search(text)
        assert HOME in text
        assert "<h1>Server Error (500)</h1>" not in text


def _resolve(dotted: str) -> Any:
    from django.utils.module_loading import import_string

    return import_string(dotted)


def test_a_bad_request_is_the_sites_400_page(settings: Any) -> None:
    """Django's ``bad_request`` (a SuspiciousOperation, e.g. too many fields) is
    the site's page, not "Bad Request (400)"."""
    from django.core.exceptions import SuspiciousOperation
    from django.views.defaults import bad_request

    request = RequestFactory().post("/")
    with translation.override("zh-hans"):
        response = bad_request(request, SuspiciousOperation("too many fields"))
    assert response.status_code == 400
    text = response.content.decode()
    assert STYLESHEET.search(text)
    assert HOME in text
    assert ZH_BACK in text
    assert "<h1>Bad Request (400)</h1>" not in text


def test_the_api_door_still_answers_json(api: Any) -> None:
    """Control: a missing API path is the API's JSON, never the page."""
    response = api.get("/api/v1/nope")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert "error" in body
    assert "<html" not in response.content.decode()
