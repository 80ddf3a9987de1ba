"""The Account section: each form works without script (POST, redirect, a
message) and with htmx (the card in place); bad input re-renders with the field
flagged and changes nothing; sign-up and reset exist only where turned on."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.core.mail.backends import locmem
from django.test import override_settings

from curfew_core.models import AccountPreference, AuditEntry, Schedule
from curfew_core.services.schedules import schedule_update
from curfew_core.web import outbox
from curfew_testkit.asgi_client import Client
from tests.web.conftest import PageClient

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase 42"
ACCOUNT_POSTS = [
    "/account/password/",
    "/account/sessions/",
    "/account/language/",
    "/account/timezone/",
]


def _messages(response: object) -> list[str]:
    return [str(m) for m in response.context["messages"]]  # type: ignore[attr-defined]


def _flagged(html: str, name: str) -> bool:
    """The field ``name`` is marked invalid and its error line is not empty."""
    tag = re.search(rf'<(?:input|select)[^>]*name="{name}"[^>]*>', html)
    error = re.search(rf'id="err-{name}"[^>]*>([^<]+)<', html)
    return bool(tag and 'aria-invalid="true"' in tag.group(0) and error)


def _audit(user: User) -> list[tuple[str, str]]:
    return list(
        AuditEntry.objects.filter(user=user, subject="account").values_list("action", "channel")
    )


# -- the page ------------------------------------------------------------------


def test_the_page_shows_every_section(page: PageClient) -> None:
    response = page.get("/account/")
    assert response.status_code == 200
    html = response.content.decode()
    for card in ('id="password"', 'id="sessions"', 'id="language"', 'id="timezone"'):
        assert card in html
    assert response["Cache-Control"] == "no-store"
    # The schedule's zone is the one selected.
    assert '<option value="Asia/Shanghai" selected>' in html


@pytest.mark.parametrize("path", ["/account/", *ACCOUNT_POSTS])
def test_every_account_route_needs_sign_in(anonymous: PageClient, path: str) -> None:
    response = anonymous.post(path) if path in ACCOUNT_POSTS else anonymous.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", ACCOUNT_POSTS)
def test_posts_need_the_csrf_token(user: User, path: str) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(path, {"language": "zh-hans", "timezone": "Europe/Berlin"})
    assert response.status_code == 403
    assert not AccountPreference.objects.filter(user=user).exists()
    assert not Schedule.objects.filter(user=user).exists()


@pytest.mark.parametrize("path", ["/account/", *ACCOUNT_POSTS])
def test_wrong_methods_are_refused(page: PageClient, path: str) -> None:
    response = page.get(path) if path in ACCOUNT_POSTS else page.post(path)
    assert response.status_code == 405


# -- password ------------------------------------------------------------------


def test_password_change_keeps_this_session_and_ends_the_others(user: User) -> None:
    here = PageClient(user)
    elsewhere = Client()
    elsewhere.force_login(user)
    assert elsewhere.get("/account/").status_code == 200

    response = here.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/account/"
    followed = here.get("/account/")
    assert followed.status_code == 200, "this browser is still signed in"
    assert any("Password changed" in m for m in _messages(followed))
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert elsewhere.get("/account/").status_code == 302, "the other browser is signed out"
    assert _audit(user) == [("password changed", "page")]
    # No secret on record.
    entry = AuditEntry.objects.get(user=user, subject="account")
    assert NEW_PASSWORD not in str(entry.changes)
    assert PASSWORD not in str(entry.changes)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (
            {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
            "old_password",
        ),
        (
            {
                "old_password": PASSWORD,
                "new_password1": NEW_PASSWORD,
                "new_password2": "other 42 xyz",
            },
            "new_password2",
        ),
        (
            {"old_password": PASSWORD, "new_password1": "123", "new_password2": "123"},
            "new_password2",
        ),
    ],
)
def test_bad_password_change_is_flagged_and_changes_nothing(
    page: PageClient, user: User, data: dict[str, str], field: str
) -> None:
    response = page.post("/account/password/", data)
    assert response.status_code == 400
    assert _flagged(response.content.decode(), field)
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    assert _audit(user) == []

    htmx = page.post("/account/password/", data, htmx=True)
    assert htmx.status_code == 422
    body = htmx.content.decode()
    assert body.lstrip().startswith('<section class="card" id="password"'), "only the card"
    assert _flagged(body, field)


def test_password_change_with_htmx_answers_the_card(user: User) -> None:
    here = PageClient(user)
    response = here.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        htmx=True,
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="password"' in body
    assert "Password changed" in body
    assert here.get("/account/").status_code == 200


# -- other sessions ----------------------------------------------------------


def test_sign_out_other_sessions_keeps_this_one(user: User, other_user: User) -> None:
    here = PageClient(user)
    phone, laptop, someone_else = Client(), Client(), Client()
    phone.force_login(user)
    laptop.force_login(user)
    someone_else.force_login(other_user)
    assert "2 other browsers" in here.get("/account/").content.decode()

    response = here.post("/account/sessions/")
    assert response.status_code == 302
    followed = here.get("/account/")
    assert followed.status_code == 200
    assert "Signed out 2 other sessions." in _messages(followed)
    assert "signed in here only" in followed.content.decode()
    for client in (phone, laptop):
        assert client.get("/account/").status_code == 302
    assert someone_else.get("/account/").status_code == 200, "only this person's sessions"
    assert _audit(user) == [("signed out other sessions", "page")]
    entry = AuditEntry.objects.get(user=user, subject="account")
    assert entry.changes == {"sessions": 2}, "a count, never a session key"


def test_sign_out_other_sessions_with_htmx_and_none_left(page: PageClient) -> None:
    response = page.post("/account/sessions/", htmx=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card" id="sessions"')
    assert "no other sessions" in body


# -- language ----------------------------------------------------------------


def test_language_is_saved_applied_now_and_on_sign_in(user: User) -> None:
    here = PageClient(user)
    response = here.post("/account/language/", {"language": "zh-hans"})
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert AccountPreference.objects.get(user=user).language == "zh-hans"
    followed = here.get("/account/")
    assert '<html lang="zh-Hans">' in followed.content.decode()
    assert _audit(user) == [("language saved", "page")]

    # A new browser, no cookie: signing in brings the language along.
    fresh = Client()
    signed_in = fresh.post("/login/", {"username": "ada", "password": PASSWORD})
    assert signed_in.status_code == 302
    assert signed_in.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"


def test_sign_in_without_a_preference_sets_no_language(user: User) -> None:
    response = Client().post("/login/", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies


def test_unknown_language_is_flagged_and_changes_nothing(page: PageClient, user: User) -> None:
    response = page.post("/account/language/", {"language": "klingon"})
    assert response.status_code == 400
    assert _flagged(response.content.decode(), "language")
    assert not AccountPreference.objects.filter(user=user).exists()
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies


# -- timezone ----------------------------------------------------------------


def test_timezone_saves_through_the_schedule_service(page: PageClient, user: User) -> None:
    response = page.post("/account/timezone/", {"timezone": "Europe/Berlin", "version": "0"})
    assert response.status_code == 302
    schedule = Schedule.objects.get(user=user)
    assert schedule.config["timezone"] == "Europe/Berlin"
    followed = page.get("/account/")
    assert any("Europe/Berlin" in m for m in _messages(followed))
    assert '<option value="Europe/Berlin" selected>' in followed.content.decode()
    entry = AuditEntry.objects.get(user=user, subject="schedule")
    assert entry.channel == "page"
    assert entry.changes["fields"]["timezone"]["new"] == "Europe/Berlin"


def test_bad_zone_is_flagged_and_changes_nothing(page: PageClient, user: User) -> None:
    schedule_update(user=user, changes={"timezone": "Europe/Paris"}, source="test")
    version = Schedule.objects.get(user=user).version
    response = page.post("/account/timezone/", {"timezone": "Mars/Olympus", "version": version})
    assert response.status_code == 400
    html = response.content.decode()
    assert _flagged(html, "timezone")
    assert '<option value="Mars/Olympus" selected>' in html, "what was sent stays in view"
    htmx = page.post(
        "/account/timezone/", {"timezone": "Mars/Olympus", "version": version}, htmx=True
    )
    assert htmx.status_code == 422
    assert _flagged(htmx.content.decode(), "timezone")
    assert Schedule.objects.get(user=user).config["timezone"] == "Europe/Paris"


def test_bad_zone_is_flagged_in_chinese(page: PageClient, user: User) -> None:
    page.client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    response = page.post("/account/timezone/", {"timezone": "Mars/Olympus", "version": "0"})
    assert response.status_code == 400
    error = re.search(r'id="err-timezone"[^>]*>([^<]+)<', response.content.decode())
    assert error
    assert not error.group(1).isascii(), error.group(1)


def test_stale_timezone_form_is_refused_and_shows_the_saved_zone(
    page: PageClient, user: User
) -> None:
    schedule_update(user=user, changes={"timezone": "Europe/Paris"}, source="test")
    response = page.post("/account/timezone/", {"timezone": "Europe/Berlin", "version": "0"})
    assert response.status_code == 409
    html = response.content.decode()
    assert 'id="timezone-stale"' in html
    assert '<option value="Europe/Paris" selected>' in html
    assert Schedule.objects.get(user=user).config["timezone"] == "Europe/Paris"


def test_timezone_with_htmx_answers_the_card(page: PageClient, user: User) -> None:
    response = page.post(
        "/account/timezone/", {"timezone": "Asia/Tokyo", "version": "0"}, htmx=True
    )
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<section class="card" id="timezone"')
    assert Schedule.objects.get(user=user).config["timezone"] == "Asia/Tokyo"


# -- sign-up -------------------------------------------------------------------


def test_signup_is_off_by_default(db: None) -> None:
    assert settings.CURFEW_SIGNUP is False
    client = Client()
    assert client.get("/account/signup/").status_code == 404
    assert client.post("/account/signup/", {"username": "eve"}).status_code == 404
    assert "/account/signup/" not in client.get("/login/").content.decode()
    assert not User.objects.filter(username="eve").exists()


@override_settings(CURFEW_SIGNUP=True)
def test_signup_on_creates_signs_in_and_lands_on_settings(db: None) -> None:
    client = Client()
    assert 'href="/account/signup/"' in client.get("/login/").content.decode()
    assert client.get("/account/signup/").status_code == 200
    response = client.post(
        "/account/signup/",
        {"username": "eve", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    eve = User.objects.get(username="eve")
    assert eve.check_password(NEW_PASSWORD)
    assert client.get("/").status_code == 200, "signed in"
    assert list(AuditEntry.objects.filter(user=eve).values_list("action", flat=True)) == [
        "signed up"
    ]


@override_settings(CURFEW_SIGNUP=True)
@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"username": "ada", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}, "username"),
        ({"username": "eve", "password1": NEW_PASSWORD, "password2": "nope 42 xyz"}, "password2"),
        ({"username": "eve", "password1": "eve", "password2": "eve"}, "password2"),
    ],
)
def test_bad_signup_is_flagged_and_creates_nobody(
    user: User, data: dict[str, str], field: str
) -> None:
    response = Client().post("/account/signup/", data)
    assert response.status_code == 400
    assert _flagged(response.content.decode(), field)
    assert not User.objects.filter(username="eve").exists()
    assert User.objects.count() == 1


@override_settings(CURFEW_SIGNUP=True)
def test_signup_needs_the_csrf_token(db: None) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/account/signup/",
        {"username": "eve", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 403
    assert not User.objects.filter(username="eve").exists()


# -- password reset by email -------------------------------------------------------

RESET_PATHS = [
    "/account/reset/",
    "/account/reset/done/",
    "/account/reset/MQ/set-password/",
    "/account/reset/complete/",
]


@pytest.mark.parametrize("path", RESET_PATHS)
def test_reset_is_off_without_email(db: None, path: str) -> None:
    assert settings.CURFEW_PASSWORD_RESET is False
    assert Client().get(path).status_code == 404


def test_login_offers_no_reset_without_email(db: None) -> None:
    assert "/account/reset/" not in Client().get("/login/").content.decode()


@override_settings(CURFEW_PASSWORD_RESET=True)
def test_reset_on_mails_a_link_that_sets_the_password(user: User) -> None:
    user.email = "ada@example.com"
    user.save()
    client = Client()
    assert 'href="/account/reset/"' in client.get("/login/").content.decode()
    response = client.post("/account/reset/", {"email": "ada@example.com"})
    assert response.status_code == 302
    assert response["Location"] == "/account/reset/done/"
    assert client.get("/account/reset/done/").status_code == 200
    outbox.drain()  # sent after the answer (see test_reset_answers_before_the_mail_is_sent)
    assert len(mail.outbox) == 1
    body = str(mail.outbox[0].body)
    link = re.search(r"http://testserver(/account/reset/\S+/)", body)
    assert link, body

    form = client.get(link.group(1), follow=True)
    assert form.status_code == 200
    assert form.context["validlink"] is True
    set_url = form.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302
    assert done["Location"] == "/account/reset/complete/"
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert _audit(user) == [("password changed", "page")]
    # The link works once.
    again = client.get(link.group(1), follow=True)
    assert again.context["validlink"] is False


@override_settings(CURFEW_PASSWORD_RESET=True)
def test_reset_for_an_unknown_address_sends_nothing(user: User) -> None:
    response = Client().post("/account/reset/", {"email": "nobody@example.com"})
    assert response.status_code == 302, "the same answer: no account is revealed"
    outbox.drain()
    assert mail.outbox == []


class SlowMail(locmem.EmailBackend):
    """A mail server that takes its time, as a real one over the network does."""

    def send_messages(self, messages: Any) -> int:
        time.sleep(SLOW_MAIL_SECONDS)
        return super().send_messages(messages)


SLOW_MAIL_SECONDS = 1.5


@override_settings(
    CURFEW_PASSWORD_RESET=True, EMAIL_BACKEND=f"{__name__}.SlowMail", LANGUAGE_CODE="en"
)
def test_reset_answers_before_the_mail_is_sent(user: User) -> None:
    # Issue 23, finding 6: the mail was sent before the answer, so an address
    # with an account was answered a mail server's time later than one
    # without. Both are now answered at once; the mail follows.
    user.email = "ada@example.com"
    user.save()
    took = {}
    for email in ("ada@example.com", "nobody@example.com"):
        started = time.monotonic()
        response = Client().post("/account/reset/", {"email": email})
        took[email] = time.monotonic() - started
        assert response.status_code == 302
    assert max(took.values()) < SLOW_MAIL_SECONDS / 2, took
    assert mail.outbox == [], "not sent yet: the mail server is still at it"
    outbox.drain()
    assert [message.to for message in mail.outbox] == [["ada@example.com"]]
    assert "http://testserver/account/reset/" in str(mail.outbox[0].body)


@override_settings(CURFEW_PASSWORD_RESET=True)
def test_the_reset_mail_is_in_the_language_it_was_asked_in(user: User) -> None:
    user.email = "ada@example.com"
    user.save()
    Client().post("/account/reset/", {"email": user.email}, HTTP_ACCEPT_LANGUAGE="zh-Hans")
    outbox.drain()
    english = Client()
    english.post("/account/reset/", {"email": user.email}, HTTP_ACCEPT_LANGUAGE="en")
    outbox.drain()
    chinese, plain = (str(message.subject) for message in mail.outbox)
    assert chinese != plain


@override_settings(CURFEW_PASSWORD_RESET=True)
def test_bad_reset_password_is_flagged_and_changes_nothing(user: User) -> None:
    user.email = "ada@example.com"
    user.save()
    client = Client()
    client.post("/account/reset/", {"email": "ada@example.com"})
    outbox.drain()
    link = re.search(r"http://testserver(/account/reset/\S+/)", str(mail.outbox[0].body))
    assert link
    form = client.get(link.group(1), follow=True)
    set_url = form.redirect_chain[-1][0]
    response = client.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": "x"})
    assert response.status_code == 200  # Django's own view re-renders with 200
    assert _flagged(response.content.decode(), "new_password2")
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_the_page_reads_in_chinese(user: User) -> None:
    here = PageClient(user)
    phone = Client()
    phone.force_login(user)
    here.client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    html = here.get("/account/").content.decode()
    for words in ("账户", "修改密码", "退出其他会话", "保存时区", "跟随浏览器语言", "旧密码"):
        assert words in html, words
    assert "你还在另外 1 个浏览器或设备上登录着。" in html
    for english in ("Change password", "Other sessions", "Save timezone", "Old password"):
        assert english not in html, english
    response = here.post("/account/sessions/")
    assert "已让另外 1 个会话退出登录。" in _messages(here.get("/account/"))
    assert response.status_code == 302


def test_the_page_does_not_jump_to_the_password(page: PageClient) -> None:
    assert "autofocus" not in page.get("/account/").content.decode()


def test_account_changes_show_in_the_audit_trail(page: PageClient, user: User) -> None:
    from curfew_core.selectors.audit import audit_recent

    page.post("/account/language/", {"language": "zh-hans"})
    page.post("/account/sessions/")
    rows = audit_recent(user, 10)
    assert [(row.subject, row.action) for row in rows] == [
        ("account", "signed out other sessions"),
        ("account", "language saved"),
    ]
    assert rows[0].details == ("sessions: 0",)
    assert rows[1].details == ("language: — → zh-hans",)


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_guessing_the_current_password_locks_like_failed_sign_ins(
    page: PageClient, user: User
) -> None:
    wrong = {"old_password": "guess", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    for _ in range(3):
        assert page.post("/account/password/", wrong).status_code == 400
    right = {**wrong, "old_password": PASSWORD}
    response = page.post("/account/password/", right)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert _flagged(response.content.decode(), "old_password")
    htmx = page.post("/account/password/", right, htmx=True)
    assert htmx.status_code == 429
    assert "Too many failed sign-ins" in htmx.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD), "refused even with the right password"
    # The same lock as the sign-in page's.
    assert Client().post("/login/", {"username": "ada", "password": PASSWORD}).status_code == 429
