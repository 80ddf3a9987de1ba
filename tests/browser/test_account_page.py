"""The Account section in real headless Chromium, desktop (1280×800) and phone
(390×844), English and Chinese: each form saves in place with htmx, bad input
is flagged in its card, the page never scrolls sideways on a phone, and no
console error or CSP violation happens along the way. Screenshots go to the
artifacts folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, assert_fits, open_context

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase 42"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def _open(browser: Any, viewport: dict[str, int], scheme: str = "light") -> Iterator[Watched]:
    context = open_context(
        browser, width=viewport["width"], height=viewport["height"], scheme=scheme
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


@pytest.fixture
def desktop(browser: Any) -> Iterator[Watched]:
    yield from _open(browser, DESKTOP)


@pytest.fixture
def phone(browser: Any) -> Iterator[Watched]:
    yield from _open(browser, PHONE, scheme="dark")


def sign_in(watched: Watched, app: ServedApp, username: str, password: str = PASSWORD) -> Any:
    return support.sign_in(
        watched.page,
        app,
        username,
        password,
        start="/login/?next=/account/",
        arrive="/account/",
        landing=None,
    )


def test_account_forms_save_in_place_on_desktop(
    desktop: Watched, served_app: ServedApp, artifacts_dir: str
) -> None:
    served_app.create_user("web-account-desk", PASSWORD)
    page = sign_in(desktop, served_app, "web-account-desk")
    for card in ("#password", "#sessions", "#language", "#timezone"):
        assert page.locator(card).is_visible()
    page.screenshot(path=os.path.join(artifacts_dir, "account-desktop-en.png"), full_page=True)

    # Timezone: saved in place (htmx), no reload.
    page.evaluate("window.__stayed = true")
    page.select_option("#id_timezone", "Europe/Berlin")
    page.click("#timezone button[type=submit]")
    page.wait_for_selector("#timezone .banner-success")
    assert "Europe/Berlin" in page.inner_text("#timezone .banner-success")
    assert page.evaluate("window.__stayed === true"), "the page did not reload"

    # A wrong current password is flagged in its card; nothing else moves.
    page.fill("#id_old_password", "not my password")
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.click("#password button[type=submit]")
    page.wait_for_selector("#id_old_password[aria-invalid=true]")
    # Chromium logs the 422 that carries the flagged card; nothing else may be logged.
    assert [p for p in desktop.problems if "status of 422" not in p] == []
    desktop.problems.clear()
    assert page.inner_text("#err-old_password").strip()
    page.screenshot(path=os.path.join(artifacts_dir, "account-desktop-flagged.png"), full_page=True)

    # Sign out other sessions: none here.
    page.click("#sign-out-others")
    page.wait_for_selector("#sessions .banner-success")

    # The right password: changed, and this browser stays signed in.
    page.fill("#id_old_password", PASSWORD)
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.click("#password button[type=submit]")
    page.wait_for_selector("#password .banner-success")
    page.goto(f"{served_app.base_url}/account/")
    assert page.url.endswith("/account/"), "still signed in"

    # Language: the whole page switches, and stays so.
    page.select_option("#id_language", "zh-hans")
    with page.expect_navigation():
        page.click("#language button[type=submit]")
    page.wait_for_selector("html[lang=zh-Hans]")
    assert "语言已保存" in page.inner_text("#account-messages")
    page.screenshot(path=os.path.join(artifacts_dir, "account-desktop-zh.png"), full_page=True)
    assert_fits(page)
    desktop.assert_clean()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_account_fits_a_phone(
    phone: Watched, served_app: ServedApp, artifacts_dir: str, language: str
) -> None:
    username = f"web-account-phone-{language}"
    served_app.create_user(username, PASSWORD)
    page = sign_in(phone, served_app, username)
    if language != "en":
        page.click(f"button[name=language][value={language}]")
        page.wait_for_selector("html[lang=zh-Hans]")
        page.goto(f"{served_app.base_url}/account/")
    assert_fits(page)
    # A refused zone cannot come from the picker: send one as a client without script would.
    page.evaluate(
        "document.querySelector('#id_timezone').insertAdjacentHTML('beforeend',"
        " '<option value=\"Mars/Olympus\">Mars/Olympus</option>')"
    )
    page.select_option("#id_timezone", "Mars/Olympus")
    page.click("#timezone button[type=submit]")
    page.wait_for_selector("#id_timezone[aria-invalid=true]")
    assert [p for p in phone.problems if "status of 422" not in p] == []
    phone.problems.clear()
    error = page.inner_text("#err-timezone").strip()
    assert error
    if language == "zh-hans":
        assert not error.isascii(), error
    assert_fits(page)
    page.screenshot(
        path=os.path.join(artifacts_dir, f"account-phone-{language}.png"), full_page=True
    )
    # The login page links neither sign-up nor reset while they are off.
    page.goto(f"{served_app.base_url}/login/")
    assert page.locator("#forgot-password, #sign-up").count() == 0
    phone.assert_clean()
