"""Overrides, tokens and the decision preview from the settings page."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re

from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.models import ApiToken, Override
from curfew_core.selectors.tokens import identify
from curfew_core.services.tokens import token_create
from tests.web.conftest import PageClient


def _override(user: User) -> Override | None:
    return Override.objects.filter(user=user).first()


def test_overtime_button_suspends_the_curfew(page: PageClient, user: User) -> None:
    before = timezone.now()
    response = page.post("/overrides/", {"verb": "overtime", "duration": "30m"})
    assert response.status_code == 302
    override = _override(user)
    assert override is not None
    assert override.overtime_until is not None
    assert dt.timedelta(minutes=29) < override.overtime_until - before < dt.timedelta(minutes=31)
    html = page.get("/").content.decode()
    assert 'id="now-override"' in html
    assert "Overtime until" in html
    assert 'data-state="on-duty"' in html


def test_custom_overtime_and_htmx_answer_the_status_partial(page: PageClient, user: User) -> None:
    response = page.post("/overrides/", {"verb": "overtime", "custom_duration": "1h30m"}, htmx=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="status"')
    assert "Override in force" in html
    override = _override(user)
    assert override is not None
    assert override.overtime_until is not None
    assert override.overtime_until - timezone.now() > dt.timedelta(minutes=85)


def test_bad_duration_says_why_and_changes_nothing(page: PageClient, user: User) -> None:
    response = page.post("/overrides/", {"verb": "overtime", "custom_duration": "soon"})
    assert response.status_code == 400
    assert "is not a duration" in response.content.decode()
    assert _override(user) is None
    partial = page.post("/overrides/", {"verb": "overtime", "custom_duration": "99h"}, htmx=True)
    # 422 to htmx: django-htmx's debug script would swap a 400 over the whole page.
    assert partial.status_code == 422
    assert 'id="override-error"' in partial.content.decode()
    assert _override(user) is None


def test_force_off_then_back_to_schedule(page: PageClient, user: User) -> None:
    page.post("/overrides/", {"verb": "off"})
    override = _override(user)
    assert override is not None
    assert override.forced_off_until is not None
    html = page.get("/").content.decode()
    assert 'id="now-state" data-state="lights-out"' in html
    assert "Forced off until" in html
    # "Back to schedule" reloads the page (it also clears the time machine).
    response = page.post("/overrides/", {"verb": "auto"}, htmx=True)
    assert response["HX-Refresh"] == "true"
    override.refresh_from_db()
    assert override.forced_off_until is None
    assert 'id="now-override"' not in page.get("/").content.decode()


def test_time_machine_shows_the_page_as_of_then(page: PageClient, user: User) -> None:
    page.post("/overrides/", {"verb": "debug", "moment": "2026-09-29T10:00"})
    override = _override(user)
    assert override is not None
    assert override.debug_at is not None
    html = page.get("/").content.decode()
    assert re.search(
        r'class="muted as-of">Tue 10:00 · <span translate="no">Shanghai</span>\s', html
    )
    assert "pretending" in html
    assert 'id="now-state" data-state="off-duty"' in html
    assert 'data-date="2026-09-29"' in html  # the band is that day's
    assert re.search(r'class="cell s-off-duty is-now"', html)
    page.post("/overrides/", {"verb": "debug-clear"})
    override.refresh_from_db()
    assert override.debug_at is None


def test_token_is_shown_once_and_stored_hashed(page: PageClient, user: User) -> None:
    response = page.post("/tokens/", {"name": "laptop gateway", "kind": "api"})
    assert response.status_code == 201
    match = re.search(r'value="(cfw_[^"]+)"', response.content.decode())
    assert match
    secret = match.group(1)
    token = ApiToken.objects.get(user=user, name="laptop gateway")
    assert token.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {token.prefix, token.digest, token.name}
    assert response["Cache-Control"] == "no-store"
    identity = identify(secret, kind="api")
    assert identity is not None
    assert identity.user_id == user.pk
    later = page.get("/integrations/").content.decode()
    assert secret not in later
    assert token.prefix in later
    assert "laptop gateway" in later


def test_embed_token_over_htmx(page: PageClient, user: User) -> None:
    response = page.post("/tokens/", {"name": "dash", "kind": "embed"}, htmx=True)
    assert response.status_code == 201
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="tokens"')
    secret = re.search(r'value="(cfe_[^"]+)"', html)
    assert secret
    assert identify(secret.group(1), kind="embed") is not None
    assert 'data-kind="embed"' in html


def test_unknown_token_kind_is_refused(page: PageClient, user: User) -> None:
    assert page.post("/tokens/", {"name": "x", "kind": "root"}).status_code == 404
    assert not ApiToken.objects.filter(user=user).exists()


def test_a_team_key_is_not_made_on_the_personal_page(page: PageClient, user: User) -> None:
    # A team key belongs to a team: asked for here it is refused, not a 500.
    assert page.post("/tokens/", {"name": "x", "kind": "team"}).status_code == 404
    assert not ApiToken.objects.filter(user=user).exists()


def test_revoke_asks_first_and_names_the_key(page: PageClient, user: User) -> None:
    mine, mine_raw = token_create(user=user, name="my laptop")
    response = page.post(f"/tokens/{mine.id}/revoke/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="revoke-confirm"' in html
    assert "Revoke “my laptop”?" in html
    # The page's button posts the confirmation to the same door.
    assert re.search(
        rf'<form method="post" action="/tokens/{mine.id}/revoke/">\s*'
        r'<input type="hidden" name="csrfmiddlewaretoken"[^>]*>'
        r'<input type="hidden" name="confirm" value="1">',
        html,
    )
    mine.refresh_from_db()
    assert mine.revoked_at is None
    assert identify(mine_raw, kind="api") is not None
    # A name-less key is named by its prefix.
    bare, _ = token_create(user=user, name="")
    assert f"Revoke “{bare.prefix}”?" in page.post(f"/tokens/{bare.id}/revoke/").content.decode()


def test_confirmed_revoke_without_script_goes_back_to_integrations(
    page: PageClient, user: User
) -> None:
    mine, mine_raw = token_create(user=user, name="mine")
    response = page.post(f"/tokens/{mine.id}/revoke/", {"confirm": "1"})
    assert response.status_code == 302
    assert response["Location"] == "/integrations/"
    mine.refresh_from_db()
    assert mine.revoked_at is not None
    assert identify(mine_raw, kind="api") is None
    html = page.get("/integrations/").content.decode()
    assert "Key revoked." in html
    assert mine.prefix not in html


def test_the_key_list_confirms_over_htmx(page: PageClient, user: User) -> None:
    mine, _ = token_create(user=user, name="mine")
    html = page.get("/integrations/").content.decode()
    row = html.split(f'data-token-id="{mine.id}"')[1].split("</tr>")[0]
    # htmx asks in a dialog, then posts confirm=1 with the form.
    assert 'hx-vals=\'{"confirm": "1"}\'' in row
    assert "hx-confirm=" in row


def test_revoke_own_token_only(page: PageClient, user: User, other_user: User) -> None:
    mine, mine_raw = token_create(user=user, name="mine")
    theirs, _ = token_create(user=other_user, name="theirs")
    for data in ({}, {"confirm": "1"}):
        response = page.post(f"/tokens/{theirs.id}/revoke/", data)
        assert response.status_code == 404
        assert "theirs" not in response.content.decode()
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    response = page.post(f"/tokens/{mine.id}/revoke/", {"confirm": "1"}, htmx=True)
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<section class="card" id="tokens"')
    mine.refresh_from_db()
    assert mine.revoked_at is not None
    assert identify(mine_raw, kind="api") is None
    assert mine.prefix not in response.content.decode()
    # Revoking twice is a clear 404, not a silent success (nor a question).
    assert page.post(f"/tokens/{mine.id}/revoke/").status_code == 404
    assert page.post(f"/tokens/{mine.id}/revoke/", {"confirm": "1"}).status_code == 404


def test_decision_preview_for_a_chosen_moment(page: PageClient) -> None:
    response = page.get("/decision/", {"at": "2026-09-29T10:00"}, htmx=True)
    assert response.status_code == 200
    body = re.search(
        r'<pre class="json" id="decision-json" tabindex="0">(.*?)</pre>',
        response.content.decode(),
        re.S,
    )
    assert body
    payload = json.loads(
        body.group(1)
        .replace("&quot;", '"')
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
    )
    assert payload["state"] == "off-duty"
    assert payload["reply"] == "。"
    assert payload["stream"][3] == {
        "type": "usage",
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
    }
    assert payload["at"].startswith("2026-09-29T10:00:00+08:00")


def test_decision_preview_with_a_request_and_bad_input(page: PageClient) -> None:
    html = page.get(
        "/decision/", {"at": "2026-09-29T23:30", "max_tokens": "1000"}, htmx=True
    ).content.decode()
    assert "&quot;max_tokens&quot;: 1000" in html  # min(1000, 1824): the clamp never raises
    bad = page.get("/decision/", {"at": "tuesday", "max_tokens": "-3"}, htmx=True)
    assert bad.status_code == 422  # a 4xx django-htmx's debug script leaves to htmx
    text = bad.content.decode()
    assert "at: " in text
    assert "max_tokens: " in text
    assert 'id="decision-json"' not in text


def test_decision_preview_works_without_script(page: PageClient) -> None:
    html = page.get("/integrations/", {"at": "2026-09-30T01:30"}).content.decode()
    assert "&quot;budget&quot;: 560" in html
    assert 'id="decision-at" value="2026-09-30T01:30"' in html or (
        'value="2026-09-30T01:30" id="decision-at"' in html
    )
