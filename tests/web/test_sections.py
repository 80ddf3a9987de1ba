"""The settings site's sections: one navigation naming where you are, and the
Activity section's audit trail of what was changed, by whom, through which door."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from curfew_core.services.schedules import schedule_update
from curfew_core.web.sections import SECTIONS
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

PATHS = {
    "overview": "/",
    "schedule": "/schedule/",
    "replies": "/replies/",
    "integrations": "/integrations/",
    "activity": "/activity/",
}


@pytest.mark.parametrize(("code", "path"), list(PATHS.items()))
def test_the_navigation_marks_the_current_section(page: PageClient, code: str, path: str) -> None:
    response = page.get(path)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    nav = html.split('<nav class="section-nav"')[1].split("</nav>")[0]
    links = dict(re.findall(r'<a href="([^"]+)"[^>]*data-section="([a-z]+)"', nav))
    for section_code, section_path in PATHS.items():
        assert links.get(section_path) == section_code
    current = re.findall(r'aria-current="page" data-section="([a-z]+)"', nav)
    assert current == [code]


def test_every_declared_section_with_a_page_is_in_the_table() -> None:
    # A new section joins the tests above (the account page lives elsewhere; the
    # Team page, shown to a team's members only, in tests/web/test_team_page.py).
    assert {s.code for s in SECTIONS} - {"account", "team"} == set(PATHS)


def test_activity_lists_your_changes_and_their_door(
    page: PageClient, user: User, other_user: User
) -> None:
    html = page.get("/activity/").content.decode()
    assert "None yet." in html
    fields = form_fields(page.get("/replies/").content.decode(), "replies-form")
    page.post("/replies/", as_post(fields, off_duty_reply="Busy."))
    schedule_update(
        user=other_user, changes={"off_duty_reply": "theirs"}, source="test", actor=other_user
    )
    html = page.get("/activity/").content.decode()
    assert "None yet." not in html
    rows = re.findall(r'<tr data-subject="[^"]*">(.*?)</tr>', html, re.S)
    assert len(rows) == 1
    assert "Busy." in rows[0]
    assert "page" in rows[0]
    assert user.get_username() in rows[0]
    assert "theirs" not in html


def test_activity_says_what_happened_in_the_readers_language(page: PageClient, user: User) -> None:
    from curfew_core.services.tokens import token_create, token_revoke

    token, _raw = token_create(user=user, name="laptop", kind="api", actor=user, channel="page")
    token_revoke(user=user, token_id=token.pk, actor=user, channel="page")
    english = page.get("/activity/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Key revoked" in english
    assert "settings page" in english
    chinese = page.get("/activity/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "已吊销密钥" in chinese
    assert "已创建密钥" in chinese
    assert "设置页面" in chinese
    assert "token revoked" not in chinese
