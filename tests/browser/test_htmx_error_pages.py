"""Whatever a form is answered with, the person sees it, in real headless
Chromium, on production's settings (debug off).

A form's own refusal (422: the fields flagged; 409: saved elsewhere) is a
fragment swapped where it was aimed (base.html's htmx-config: htmx 2 swaps
no 4xx by default). But some answers to a person's Save or Revoke are the
site's whole error pages: a key revoked in another tab (404), a form whose
page expired (403, CSRF), a server error (500). Swapped as fragments they
showed a page inside a card (a second top bar, the form gone); a 5xx was not
swapped at all, so nothing showed. Each now takes the page's main, as
following a link would show it, and nothing was saved. In en and zh.
"""

from __future__ import annotations

from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, open_context

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
USER = "web-htmx-errors"

#: How many top bars the page shows, and the error card's heading in main.
BARS = "document.querySelectorAll('header.topbar').length"
HEADING = "(document.querySelector('#main h1') || {}).textContent || ''"
#: A server error as the site answers it (templates/500.html's shape): one
#: document, its main the card.
SERVER_ERROR = (
    "<!doctype html><html><head><title>Something went wrong · Curfew</title></head>"
    '<body><header class="topbar"><a class="brand" href="/">Curfew</a></header>'
    '<main id="main" class="page page-narrow"><section class="card" role="alert">'
    "<h1>Something went wrong</h1><p>Nothing was changed.</p></section></main></body></html>"
)


@pytest.fixture(scope="module")
def user(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


def _open(browser: Any, app: ServedApp, lang: str) -> tuple[Any, Watched]:
    context = open_context(
        browser, width=1280, height=900, language=(app, "zh-hans" if lang == "zh" else "en")
    )
    watched = Watched(context.new_page())
    support.sign_in(watched.page, app, USER, PASSWORD)
    return context, watched


def _save_time(page: Any, value: str) -> None:
    box = page.locator("input[name=curfew_start]")
    box.fill(value)
    page.click("#save-schedule")


@pytest.mark.parametrize(("lang", "expired"), [("en", "expired"), ("zh", "已过期")])
def test_an_expired_form_says_so_and_saves_nothing(
    browser: Any, served_app: ServedApp, user: str, lang: str, expired: str
) -> None:
    context, watched = _open(browser, served_app, lang)
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/schedule/")
        before = page.locator("input[name=curfew_start]").input_value()
        # The form's page has expired: its CSRF token no longer matches any cookie.
        page.evaluate(
            "document.querySelectorAll('input[name=csrfmiddlewaretoken]')"
            ".forEach(e => { e.value = 'x'.repeat(64); })"
        )
        context.clear_cookies(name="csrftoken")
        with page.expect_response(lambda r: r.request.method == "POST") as answer:
            _save_time(page, "21:15" if before != "21:15" else "21:45")
        assert answer.value.status == 403
        support.wait_until(page, f"({HEADING}).includes({expired!r})")
        assert page.evaluate(BARS) == 1, "a page inside the page"
        page.goto(f"{served_app.base_url}/schedule/")
        assert page.locator("input[name=curfew_start]").input_value() == before
    finally:
        context.close()


def test_a_key_revoked_in_another_tab_says_it_is_gone(
    browser: Any, served_app: ServedApp, user: str
) -> None:
    context, watched = _open(browser, served_app, "en")
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/integrations/")
        page.fill("#token-name", "two tabs")
        page.locator(".token-form button[type=submit]").click()
        page.wait_for_selector("#new-token-value")
        other = context.new_page()
        other.goto(f"{served_app.base_url}/integrations/")
        page.goto(f"{served_app.base_url}/integrations/")
        revoke = "#tokens form[hx-confirm] button"
        for tab in (page, other):
            tab.on("dialog", lambda dialog: dialog.accept())
        keys = "document.querySelectorAll('#tokens form[hx-confirm]').length"
        live = page.evaluate(keys)
        page.locator(revoke).first.click()
        support.wait_until(page, f"{keys} === {live - 1}")
        with other.expect_response(lambda r: r.request.method == "POST") as answer:
            other.locator(revoke).first.click()
        assert answer.value.status == 404
        support.wait_until(other, f"({HEADING}).includes('Page not found')")
        assert other.evaluate(BARS) == 1, "a page inside the page"
    finally:
        context.close()


def test_a_server_error_on_save_is_shown(browser: Any, served_app: ServedApp, user: str) -> None:
    context, watched = _open(browser, served_app, "en")
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/schedule/")
        before = page.locator("input[name=curfew_start]").input_value()

        def _fail(route: Any) -> None:
            # The save never reaches the server: it answers as the site does when it fails.
            if route.request.method == "POST" and route.request.url.endswith("/schedule/"):
                route.fulfill(status=500, content_type="text/html", body=SERVER_ERROR)
            else:
                route.continue_()

        page.route("**/schedule/**", _fail)
        _save_time(page, "21:15" if before != "21:15" else "21:45")
        support.wait_until(page, f"({HEADING}).includes('Something went wrong')")
        assert page.evaluate(BARS) == 1
        page.unroute("**/schedule/**")
        page.goto(f"{served_app.base_url}/schedule/")
        assert page.locator("input[name=curfew_start]").input_value() == before
    finally:
        context.close()


@pytest.mark.parametrize(
    ("lang", "summary"), [("en", "Nothing was saved"), ("zh", "没有保存")], ids=["en", "zh"]
)
def test_a_refused_save_flags_the_field_in_place(
    browser: Any, served_app: ServedApp, user: str, lang: str, summary: str
) -> None:
    """The control: a form's own refusal (422) stays a fragment in its form,
    the field flagged, the page around it kept; nothing is saved."""
    context, watched = _open(browser, served_app, lang)
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/schedule/")
        before = page.locator("input[name=curfew_start]").input_value()
        with page.expect_response(
            lambda r: r.request.method == "POST" and "preview" not in r.url
        ) as answer:
            _save_time(page, "25:99")
        assert answer.value.status == 422
        support.wait_until(
            page, "document.getElementById('err-curfew_start').textContent.includes('25:99')"
        )
        assert summary in page.inner_text("#schedule-form")
        assert page.evaluate(BARS) == 1
        assert page.locator("#schedule-form").count() == 1
        page.goto(f"{served_app.base_url}/schedule/")
        assert page.locator("input[name=curfew_start]").input_value() == before
    finally:
        context.close()


@pytest.mark.parametrize(
    ("lang", "status", "body", "words"),
    [
        (
            "en",
            502,
            "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>",
            "nothing was saved",
        ),
        (
            "zh",
            502,
            "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>",
            "什么都没有保存",
        ),
        ("en", 503, "", "Please try again"),
    ],
    ids=["en-502", "zh-502", "en-empty-503"],
)
def test_a_bare_server_error_on_save_says_it_did_not_go_through(
    browser: Any, served_app: ServedApp, user: str, lang: str, status: int, body: str, words: str
) -> None:
    """A 5xx that is not one of the site's pages (a proxy's 502, an empty
    503) was not swapped and showed nothing: the person thought it saved.
    Now a line above the form says it did not go through, in their
    language; the form keeps what they filled in, and the next try clears
    the line."""
    context, watched = _open(browser, served_app, lang)
    try:
        page = watched.page
        page.goto(f"{served_app.base_url}/schedule/")
        before = page.locator("input[name=curfew_start]").input_value()
        wanted = "21:15" if before != "21:15" else "21:45"

        def _fail(route: Any) -> None:
            if route.request.method == "POST" and route.request.url.endswith("/schedule/"):
                route.fulfill(status=status, content_type="text/html", body=body)
            else:
                route.continue_()

        page.route("**/schedule/**", _fail)
        _save_time(page, wanted)
        support.wait_until(page, "document.querySelector('p.not-saved[role=alert]') !== null")
        line = page.locator("p.not-saved")
        assert line.count() == 1
        assert words in line.inner_text()
        assert line.is_visible()
        # Nothing swapped: the form is whole and keeps the person's value.
        assert page.locator("#schedule-form").count() == 1
        assert page.locator("input[name=curfew_start]").input_value() == wanted
        assert page.evaluate(BARS) == 1
        assert "Bad Gateway" not in page.inner_text("body")
        # The next try (the server answering again) takes the line away.
        page.unroute("**/schedule/**")
        with page.expect_response(
            lambda r: r.request.method == "POST" and r.url.endswith("/schedule/")
        ):
            page.click("#save-schedule")
        support.wait_until(page, "document.querySelector('p.not-saved') === null")
        page.goto(f"{served_app.base_url}/schedule/")
        assert page.locator("input[name=curfew_start]").input_value() == wanted
    finally:
        context.close()
