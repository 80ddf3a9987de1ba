"""The Integrations page's setup snippets in real headless Chromium: a Copy
button puts exactly its snippet's text, with this server's address, on the
clipboard and says so; without script the buttons are gone and the snippets
are still there to select by hand. One page load each, no CSP violation."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, open_context, sign_in

pytestmark = pytest.mark.browser

USER = "web-browser-setups"
PASSWORD = "correct horse battery"
SNIPPET = "#setup-codex-config"


@pytest.fixture(scope="module")
def user(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


def test_copy_puts_the_snippet_on_the_clipboard(
    browser: Any, served_app: ServedApp, user: str
) -> None:
    context = open_context(browser, width=1280, permissions=["clipboard-read", "clipboard-write"])
    try:
        watched = Watched(context.new_page())
        page = watched.page
        sign_in(page, served_app, user, PASSWORD, landing=None)
        page.goto(f"{served_app.base_url}/integrations/")
        page.locator("#setup-codex summary").click()
        button = page.locator(f"[data-copy-text='{SNIPPET}']")
        assert button.is_visible()
        button.click()
        page.wait_for_function(
            f"document.querySelector(\"[data-copy-text='{SNIPPET}']\").textContent === 'Copied'"
        )
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator(SNIPPET).text_content()
        assert f'base_url = "{served_app.base_url}/v1"' in copied
        watched.assert_clean()
    finally:
        context.close()


def test_without_script_the_snippets_stay_and_the_buttons_go(
    browser: Any, served_app: ServedApp, user: str
) -> None:
    context = open_context(browser, width=390, java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, served_app, user, PASSWORD, landing=None)
        page.goto(f"{served_app.base_url}/integrations/")
        page.locator("#setup-codex summary").click()
        assert page.locator(SNIPPET).is_visible()
        assert f"{served_app.base_url}/v1" in (page.locator(SNIPPET).text_content() or "")
        assert not page.locator(f"[data-copy-text='{SNIPPET}']").is_visible()
    finally:
        context.close()
