"""The Pretend banner's countdown runs, and the Pretend box takes typing
(issue 39), in real headless Chromium.

The issue's page: "14 minutes left" for all 15 minutes of a pretend (the
server's words, floored, never updated), and a ``datetime-local`` box that
ate what was typed into it. Now the countdown is right on load (to the
minute, rounded up: a pretend just begun for 15 minutes has 15 left), ticks
each minute on the page's clock (Playwright's, fast-forwarded), and the box is
plain text that takes a date and time as typed.

Their own accounts, so their pretends never leak into another module.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, api_post, open_context, sign_in, wait_until

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"


def _banner_text(page: Any) -> str:
    return " ".join(page.inner_text("#pretend-banner").split())


def test_the_countdown_ticks_each_minute(browser: Any, served_app: ServedApp) -> None:
    token = served_app.create_user("web-pretend-tick", PASSWORD)
    context = open_context(browser, width=1280, height=900)
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app, "web-pretend-tick", PASSWORD)
        api_post(
            served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "15m"}
        )
        page.clock.install()
        page.goto(f"{served_app.base_url}/activity/")
        assert "(until" in _banner_text(page)
        assert "15 minutes left" in _banner_text(page)
        page.clock.fast_forward("02:00")
        wait_until(
            page,
            "document.getElementById('pretend-banner').innerText.includes('13 minutes left')",
        )
        page.clock.fast_forward("10:00")
        wait_until(
            page,
            "document.getElementById('pretend-banner').innerText.includes('3 minutes left')",
        )
        watched.assert_clean()
    finally:
        context.close()


def test_the_countdown_is_right_without_javascript(browser: Any, served_app: ServedApp) -> None:
    token = served_app.create_user("web-pretend-nojs", PASSWORD)
    context = open_context(browser, width=390, height=800, java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, served_app, "web-pretend-nojs", PASSWORD)
        api_post(
            served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "15m"}
        )
        page.goto(f"{served_app.base_url}/")
        # Just begun: 15 minutes left, not "14 minutes" (the seconds gone floored).
        assert "15 minutes left" in _banner_text(page)
        api_post(
            served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "4h"}
        )
        page.goto(f"{served_app.base_url}/")
        assert "4 hours left" in _banner_text(page)
    finally:
        context.close()


@pytest.mark.parametrize(("typed", "told"), [("2026-09-30 01:30", "2026-09-30 01:30")])
def test_the_pretend_box_takes_typing(
    browser: Any, served_app: ServedApp, typed: str, told: str
) -> None:
    served_app.create_user("web-pretend-type", PASSWORD)
    context = open_context(browser, width=1280, height=900)
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app, "web-pretend-type", PASSWORD)
        box = page.locator("#time-machine")
        box.click()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.press("Backspace")
        page.keyboard.type(typed, delay=20)
        # What was typed is what the box holds, character for character.
        assert box.input_value() == typed
        page.select_option("#pretend-duration", "15m")
        page.click("#pretend-start")
        page.wait_for_selector("#pretend-banner")
        assert f"gateways are being told it is {told}" in _banner_text(page)
        assert re.search(r"1[45] minutes left", _banner_text(page))
        # And the box now shows the moment pretended, ready to be typed over.
        assert page.locator("#time-machine").input_value() == told
        watched.assert_clean()
    finally:
        context.close()
