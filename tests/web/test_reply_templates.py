"""Replies that say "curfew" (issue 24 item 4) on the pages: the overview tells
the filled reply, the Replies page lists the placeholder, offers the terse
pair one click away and flags a typo at its field, in English and Chinese;
a sign-up gets informative replies in the page's language."""

from __future__ import annotations

import datetime as dt
import html as html_lib
import re
import zoneinfo

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.utils import timezone

from curfew_core.models import Schedule
from curfew_core.services.schedules import schedule_update
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
NEW_PASSWORD = "a brand new passphrase 42"


def _replies_form(page: PageClient, **extra: str) -> list[tuple[str, str]]:
    return form_fields(page.get("/replies/", **extra).content.decode(), "replies-form")


def _field_error(html: str, field: str) -> str:
    error = html.split(f'id="err-{field}" aria-live="polite">')[1].split("</p>")[0]
    return html_lib.unescape(error)


def test_the_overview_tells_the_filled_reply(
    page: PageClient, user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule_update(
        user=user, changes={"off_duty_reply": "Curfew: peak hours until {until}."}, source="test"
    )
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI))
    html = html_lib.unescape(page.get("/").content.decode())
    card = re.search(r'<article class="card now-card".*?</article>', html, re.S)
    assert card is not None
    assert "“Curfew: peak hours until 12:00.”" in card.group(0)
    assert "{until}" not in html.split('id="schedule-form"')[0]


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({}, "'{untill}' is not a placeholder; a reply may use {until}"),
        (ZH, "'{untill}' 不是可用的占位符；回复里可以用 {until}"),
    ],
)
def test_a_typo_is_flagged_at_its_field(
    page: PageClient, user: User, extra: dict[str, str], error: str
) -> None:
    data = as_post(_replies_form(page), lights_out_reply="Back at {untill}.")
    response = page.post("/replies/", data, **extra)
    assert response.status_code == 400
    assert _field_error(response.content.decode(), "lights_out_reply") == error
    assert not Schedule.objects.filter(user=user).exists()


@pytest.mark.parametrize(
    ("extra", "hint"),
    [({}, "Write {until} where the time it ends"), (ZH, "在要写结束时间的地方写 {until}")],
)
def test_the_page_lists_the_placeholder(page: PageClient, extra: dict[str, str], hint: str) -> None:
    html = page.get("/replies/", **extra).content.decode()
    assert hint in html
    assert 'data-reply-preset="terse"' in html
    assert 'id="reply-presets"' in html


def test_the_terse_pair_is_one_click_away(page: PageClient, user: User) -> None:
    schedule_update(
        user=user,
        changes={"off_duty_reply": "x {until}", "lights_out_reply": "y {until}"},
        source="test",
    )
    # Without script the button posts the form: filled in, not saved.
    data = as_post(_replies_form(page), reply_preset="terse")
    response = page.post("/replies/", data)
    assert response.status_code == 200
    fields = dict(form_fields(response.content.decode(), "replies-form"))
    assert (fields["off_duty_reply"], fields["lights_out_reply"]) == ("。", "明天再说。")
    assert Schedule.objects.get(user=user).config["off_duty_reply"] == "x {until}"
    saved = page.post("/replies/", as_post(list(fields.items())))
    assert saved.status_code == 302
    config = Schedule.objects.get(user=user).config
    assert (config["off_duty_reply"], config["lights_out_reply"]) == ("。", "明天再说。")


@override_settings(CURFEW_SIGNUP=True)
@pytest.mark.parametrize(
    ("extra", "off", "dark"),
    [
        ({}, "Curfew: peak hours until {until}.", "Curfew: lights out until {until}."),
        (ZH, "Curfew：高峰时段，{until} 后再来。", "Curfew：已熄灯，{until} 再说。"),
    ],
)
def test_a_sign_up_gets_replies_in_the_page_language(
    db: None, extra: dict[str, str], off: str, dark: str
) -> None:
    response = Client().post(
        "/account/signup/",
        {"username": "eve", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        **extra,
    )
    assert response.status_code == 302
    config = Schedule.objects.get(user__username="eve").config
    assert (config["off_duty_reply"], config["lights_out_reply"]) == (off, dark)
