"""A person's Save or Revoke that does not go through says so, beside what
failed, in real headless Chromium, in en and zh.

Two ways it fails: the server cannot be reached at all (down, connection
refused, offline: htmx's ``sendError``, not a response), and a bare 5xx (a
proxy's 502, not one of the site's pages). A network failure showed nothing,
so a Save looked done. A Revoke's failure said "nothing was saved" (nothing
is saved by a Revoke) inside the narrow cell of its button, a word or two a
line. Now: the form keeps what was typed; a Save's line is in its save bar
(on screen beside the button, not above a form scrolled away); a Revoke's is
under its own key's row, as wide as the row; the next try takes it away.
"""

from __future__ import annotations

from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, assert_fits, failing_posts, open_context

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
USER = "web-send-failures"

#: What the line says, by language and way of failing.
UNREACHED = {"en": "could not be reached", "zh": "连不上服务器"}
NOT_SAVED = {"en": "nothing was saved", "zh": "什么都没有保存"}
NOT_REVOKED = {"en": "nothing was revoked", "zh": "什么都没有吊销"}
DID_NOT_GO = {"en": "did not go through", "zh": "没有成功"}

LINE = "p.not-saved[role=alert]"
KEYS = "document.querySelectorAll('#tokens tr[data-token-id]').length"


@pytest.fixture(scope="module")
def user(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


def _open(browser: Any, app: ServedApp, lang: str, width: int) -> tuple[Any, Watched]:
    context = open_context(
        browser,
        width=width,
        height=900,
        locale="zh-CN" if lang == "zh" else "en-US",
        language=(app, "zh-hans" if lang == "zh" else "en"),
        is_mobile=width < 600,
        has_touch=width < 600,
    )
    watched = Watched(context.new_page())
    support.sign_in(watched.page, app, USER, PASSWORD)
    return context, watched


def _on_screen(page: Any, selector: str) -> bool:
    return bool(
        page.evaluate(
            """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
              return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""",
            selector,
        )
    )


@pytest.mark.parametrize(
    ("lang", "width", "how"),
    [("en", 1280, "abort"), ("zh", 1280, "abort"), ("zh", 390, "abort"), ("en", 390, "502")],
)
def test_a_save_that_does_not_go_through_says_so_in_its_save_bar(
    browser: Any, served_app: ServedApp, user: str, lang: str, width: int, how: str
) -> None:
    context, watched = _open(browser, served_app, lang, width)
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/schedule/")
        before = page.locator("input[name=curfew_start]").input_value()
        wanted = "21:15" if before != "21:15" else "21:45"
        page.route("**/schedule/", failing_posts(how))
        page.locator("input[name=curfew_start]").fill(wanted)
        page.click("#save-schedule")
        support.wait_until(page, f"document.querySelector({LINE!r}) !== null")
        line = page.locator(LINE)
        assert line.count() == 1
        words = line.inner_text()
        assert (UNREACHED if how == "abort" else DID_NOT_GO)[lang] in words
        assert NOT_SAVED[lang] in words
        # Beside the Save the person pressed: in the save bar, on screen.
        assert page.locator(f"[data-savebar] {LINE}").count() == 1
        assert _on_screen(page, LINE)
        assert_fits(page, inside="[data-savebar]")
        # Nothing swapped: the form keeps what was typed, its Save works again.
        assert page.locator("input[name=curfew_start]").input_value() == wanted
        assert page.locator("#save-schedule").is_enabled()
        assert page.locator("[data-toast]").count() == 0
        # The server answers again: the next Save goes through, the line goes.
        page.unroute("**/schedule/")
        with page.expect_response(
            lambda r: r.request.method == "POST" and r.url.endswith("/schedule/")
        ):
            page.click("#save-schedule")
        support.wait_until(page, "document.querySelector('p.not-saved') === null")
        page.goto(f"{served_app.base_url}/schedule/")
        assert page.locator("input[name=curfew_start]").input_value() == wanted
    finally:
        context.close()


@pytest.mark.parametrize(
    ("lang", "width", "how"),
    [
        ("en", 1280, "502"),
        ("zh", 1280, "502"),
        ("en", 1280, "abort"),
        ("zh", 390, "abort"),
        ("zh", 390, "502"),
    ],
)
def test_a_revoke_that_does_not_go_through_says_so_under_its_row(
    browser: Any, served_app: ServedApp, user: str, lang: str, width: int, how: str
) -> None:
    context, watched = _open(browser, served_app, lang, width)
    try:
        page = watched.page
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{served_app.base_url}/integrations/")
        for name in ("first", "second"):
            page.fill("#token-name", f"{how} {width} {name}")
            with page.expect_response(lambda r: r.request.method == "POST"):
                page.locator("#token-create").click()
            page.wait_for_selector("#new-token-value")
        page.goto(f"{served_app.base_url}/integrations/")
        keys = page.evaluate(KEYS)
        row = page.locator("#tokens tr[data-token-id]").first
        token_id = row.get_attribute("data-token-id")
        page.route(f"**/tokens/{token_id}/revoke/", failing_posts(how))
        row.locator("button[type=submit]").click()
        support.wait_until(page, f"document.querySelector({LINE!r}) !== null")
        line = page.locator(LINE)
        assert line.count() == 1
        words = line.inner_text()
        assert (UNREACHED if how == "abort" else DID_NOT_GO)[lang] in words
        assert NOT_REVOKED[lang] in words
        assert NOT_SAVED[lang] not in words
        # Under the row whose Revoke failed, not squeezed into its button's cell.
        under = page.evaluate(
            """(id) => { const row = document.querySelector(`tr[data-token-id="${id}"]`);
              const next = row.nextElementSibling;
              return !!next && !row.querySelector('p.not-saved')
                && !!next.querySelector('p.not-saved'); }""",
            token_id,
        )
        assert under, "the line is not in the row under the failed key's row"
        box, table = page.evaluate(
            """() => [document.querySelector('p.not-saved').getBoundingClientRect().width,
              document.querySelector('#key-list').getBoundingClientRect().width]"""
        )
        assert box >= min(table, 300) * 0.6, f"line squeezed: {box}px in a {table}px table"
        assert_fits(page, inside="#tokens")
        assert page.evaluate(KEYS) == keys
        # The server answers again: the Revoke goes through and the line goes.
        page.unroute(f"**/tokens/{token_id}/revoke/")
        page.locator(f'tr[data-token-id="{token_id}"] button[type=submit]').click()
        support.wait_until(page, f"{KEYS} === {keys - 1}")
        assert page.locator("p.not-saved").count() == 0
    finally:
        context.close()
