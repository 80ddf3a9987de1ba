"""The forms' widgets render through Django's Jinja2 renderer (``FORM_RENDERER``):
every page with a form is the same page it was with Django's template renderer.

Django ships both sets of widget templates and keeps them in step; the pages
themselves stay Django templates. Only white space between tags and the
spelling of an escaped apostrophe or quote (``&#39;`` and ``&#34;``, Django's
``&#x27;`` and ``&quot;``) may differ: a browser reads both alike. The
clock is pinned, so both renders of a page tell the same time; the CSRF token
is masked anew on every render, so its value is left out.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import team_create
from curfew_core.web.sections import SECTIONS
from tests.web.conftest import PageClient

NOW = dt.datetime(2026, 9, 29, 11, 0, tzinfo=dt.UTC)
DJANGO_TEMPLATES = "django.forms.renderers.DjangoTemplates"
#: Every section of the site (``web.sections``): a person's, and a team's.
PERSONS = [section.url_name for section in SECTIONS if not section.members_only]
TEAMS = [section.url_name for section in SECTIONS if section.members_only]
#: A form's own fields, where a page has one.
FIELD = re.compile(r"<(?:input|select|textarea|option)\b")


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def _markup(text: str) -> str:
    text = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1…", text)
    text = re.sub(r'("X-CSRFToken": ")[^"]+', r"\1…", text)
    text = text.replace("&#39;", "&#x27;").replace("&#34;", "&quot;")
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", text))


def _both(client: PageClient, path: str) -> tuple[str, str]:
    with override_settings(FORM_RENDERER=DJANGO_TEMPLATES):
        before = client.get(path)
    now = client.get(path)
    assert before.status_code == now.status_code == 200, path
    return _markup(before.content.decode()), _markup(now.content.decode())


def test_the_setting_is_jinja2s_renderer() -> None:
    # The control for the comparisons below: they compare two renderers.
    assert settings.FORM_RENDERER == "django.forms.renderers.Jinja2"


@pytest.mark.parametrize("name", PERSONS)
def test_a_persons_page_is_the_same_page(page: PageClient, name: str) -> None:
    before, now = _both(page, reverse(name))
    assert len(FIELD.findall(now)) > 0, f"{name}: no form field rendered"
    assert now == before


@pytest.mark.parametrize("name", TEAMS)
def test_a_team_admins_page_is_the_same_page(user: User, name: str) -> None:
    team_create(name="renderers", admin=user)
    before, now = _both(PageClient(user), reverse(name))
    assert len(FIELD.findall(now)) > 0, f"{name}: no form field rendered"
    assert now == before


def test_the_sign_in_page_is_the_same_page(anonymous: PageClient) -> None:
    before, now = _both(anonymous, "/login/")
    assert 'name="password"' in now
    assert now == before


def test_a_saved_text_with_markup_is_escaped_alike(user: User) -> None:
    # An attacker's words in a field the page draws back into an <input value>.
    words = 'Off "now"\'s <script>alert(1)</script> & <b>ok</b>'
    schedule_update(user=user, changes={"off_duty_reply": words}, source="api")
    client = PageClient(user)
    with override_settings(FORM_RENDERER=DJANGO_TEMPLATES):
        before = client.get(reverse("settings-replies")).content.decode()
    now = client.get(reverse("settings-replies")).content.decode()
    assert "<script>alert" not in now
    assert 'value="Off &#34;now&#34;&#39;s &lt;script&gt;alert(1)&lt;/script&gt; &amp;' in now
    assert _markup(now) == _markup(before)
