"""The capsule's HTTP side: polling fallback, iframe page, embed tokens, panel, assets."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.test import RequestFactory

from curfew_core.models import ApiToken
from curfew_core.selectors.tokens import identify
from curfew_core.selectors.verdicts import CAPSULE_WORDS
from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import embed_token, local

pytestmark = pytest.mark.django_db


# -- /embed/state: the fallback when sockets fail --------------------------------------


def test_state_by_embed_token_is_the_api_state_and_readable_cross_origin(user, api, set_clock):
    set_clock(local("2026-09-29 23:30"))
    response = Client().get("/embed/state", {"token": embed_token(user)})
    assert response.status_code == 200
    body = response.json()
    assert (body["state"], body["budget"]) == ("winding", 1824)
    # The API's state fields, plus the words the capsule shows (declared on the server).
    assert set(body) == set(api.get("/api/v1/state").json()) | CAPSULE_WORDS
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("case", ["missing", "unknown", "revoked", "api-kind"])
def test_state_refuses_bad_embed_tokens_with_a_readable_401(user, case):
    raw = {
        "missing": lambda: "",
        "unknown": lambda: "cfe_nope",
        "api-kind": lambda: token_create(user=user, name="api")[1],
        "revoked": lambda: _revoked(user),
    }[case]()
    # A signed-in session does not rescue a bad token: the token path is token-only.
    client = Client()
    client.force_login(user)
    response = client.get("/embed/state", {"token": raw})
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    expected = "missing embed token" if case == "missing" else "unknown or revoked embed token"
    assert response.json()["message"] == expected
    assert response["Access-Control-Allow-Origin"] == "*"  # so the capsule can read why


def _revoked(user: User) -> str:
    token, raw = token_create(user=user, name="old", kind=ApiToken.Kind.EMBED)
    token_revoke(user=user, token_id=token.pk)
    return raw


def test_state_by_session_is_same_origin_only(user):
    client = Client()
    assert client.get("/embed/state").status_code == 401
    client.force_login(user)
    response = client.get("/embed/state")
    assert response.status_code == 200
    assert response.json()["state"]
    assert "Access-Control-Allow-Origin" not in response  # other sites cannot read it


def test_state_is_read_only(user):
    response = Client().post("/embed/state?token=" + embed_token(user))
    assert response.status_code == 405


# -- /embed/capsule/: the iframe page ----------------------------------------------------


def test_iframe_page_may_be_framed_by_any_site_but_only_it(user):
    raw = embed_token(user)
    response = Client().get("/embed/capsule/", {"token": raw, "mode": "narrow"})
    assert response.status_code == 200
    assert "X-Frame-Options" not in response
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors *" in csp
    assert "script-src 'self'" in csp
    html = response.content.decode()
    assert f'data-token="{raw}"' in html
    assert 'data-mode="narrow"' in html
    assert re.search(r'<script src="/static/curfew/capsule[^"]*\.js"', html)
    # Control: every other page keeps the site-wide anti-framing headers.
    client = Client()
    client.force_login(user)
    other = client.get("/embed/")
    assert other["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'self'" in other["Content-Security-Policy"]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({}, 401, "missing embed token"),
        ({"token": "cfe_nope"}, 401, "unknown or revoked embed token"),
        ({"token": "cfe_nope", "mode": "huge"}, 400, "mode must be one of wide, narrow"),
    ],
)
def test_iframe_page_explains_what_is_wrong(db, query, status, message):
    response = Client().get("/embed/capsule/", query)
    assert response.status_code == status
    html = response.content.decode()
    assert message in html
    assert "data-token" not in html


# -- embed tokens from the settings panel --------------------------------------------------


def test_creating_an_embed_token_shows_it_once_in_the_snippet(user):
    client = Client()
    client.force_login(user)
    response = client.post("/embed/tokens/", {"name": "dashboard"})
    assert response.status_code == 200
    html = response.content.decode()
    raw = re.search(r'data-token="(cfe_[A-Za-z0-9_-]+)"', html).group(1)
    identity = identify(raw, kind="embed")
    assert identity is not None
    assert identity.user_id == user.pk
    assert "shown once" in html
    assert f"/embed/capsule/?token={raw}" in html
    assert "http://testserver/static/curfew/capsule.js" in html  # the stable, unhashed path
    token = ApiToken.objects.get(user=user, kind=ApiToken.Kind.EMBED)
    assert token.name == "dashboard"
    assert raw.startswith(token.prefix)
    assert token.digest != raw
    # Shown once: the page never shows it again.
    assert raw not in client.get("/embed/").content.decode()


def test_htmx_gets_only_the_snippet_block(user):
    client = Client()
    client.force_login(user)
    response = client.post("/embed/tokens/", {}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div class="capsule-snippet" id="capsule-snippet">')
    assert "<html" not in html
    assert 'data-token="cfe_' in html


def test_token_forms_need_sign_in_and_csrf(user):
    assert Client().post("/embed/tokens/").status_code == 302
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/embed/tokens/").status_code == 403
    assert not ApiToken.objects.filter(user=user).exists()


def test_revoking_only_touches_your_own_embed_tokens(user, other_user):
    mine, _ = token_create(user=user, name="mine", kind=ApiToken.Kind.EMBED)
    api_token, _ = token_create(user=user, name="api")
    theirs, _ = token_create(user=other_user, name="theirs", kind=ApiToken.Kind.EMBED)
    client = Client()
    client.force_login(user)
    assert client.post(f"/embed/tokens/{theirs.pk}/revoke").status_code == 404
    assert client.post(f"/embed/tokens/{api_token.pk}/revoke").status_code == 404
    assert client.post(f"/embed/tokens/{mine.pk}/revoke").status_code == 302
    revoked = {t.name for t in ApiToken.objects.filter(revoked_at__isnull=False)}
    assert revoked == {"mine"}
    assert client.post(f"/embed/tokens/{mine.pk}/revoke").status_code == 404


def test_manage_page_lists_live_embed_tokens_by_prefix(user):
    live, raw = token_create(user=user, name="kitchen screen", kind=ApiToken.Kind.EMBED)
    gone, _ = token_create(user=user, name="old laptop", kind=ApiToken.Kind.EMBED)
    token_revoke(user=user, token_id=gone.pk)
    client = Client()
    client.force_login(user)
    html = client.get("/embed/").content.decode()
    assert "kitchen screen" in html
    assert live.prefix in html
    assert "old laptop" not in html
    assert raw not in html


# -- the settings panel, included by the settings page as is ------------------------------


def test_settings_panel_renders_alone_with_the_live_capsule_and_snippet(user):
    request = RequestFactory().get("/")
    request.user = user
    html = render_to_string("curfew/capsule/settings_panel.html", request=request)
    assert re.search(r'<script src="/static/curfew/capsule[^"]*\.js" data-css="/static/', html)
    assert "data-token" not in html.split("<pre")[0], "the page's own capsule uses the session"
    assert "YOUR_EMBED_TOKEN" in html
    assert 'action="/embed/tokens/"' in html
    assert 'href="/embed/"' in html  # token list lives on the manage page when not passed in


def test_capsule_ships_its_own_stylesheet():
    """An optional stylesheet is not permission to ship no styles."""
    for name in ("curfew/capsule.js", "curfew/capsule.css", "curfew/capsule-embed.css"):
        assert finders.find(name), f"{name} is missing"
    with open(finders.find("curfew/capsule.css"), encoding="utf-8") as css:
        text = css.read()
    for selector in (":host", ".capsule", "var(--state)", '[data-mode="narrow"]'):
        assert selector in text
    # Each state's look (--state …) comes from the declaration it imports.
    assert '@import url("states.css")' in text
    with open(finders.find("curfew/states.css"), encoding="utf-8") as css:
        assert '[data-state="winding"]' in css.read()
    with open(finders.find("curfew/capsule.js"), encoding="utf-8") as js:
        script = js.read()
    assert "attachShadow" in script
    assert "capsule.css" in script
    assert "4401" in script
    assert "4403" in script
