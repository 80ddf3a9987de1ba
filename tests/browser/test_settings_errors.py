"""Bad input on the settings page, in real Chromium, with debug on and off.

Under ``make run`` (CURFEW_DEBUG=1) django-htmx adds a debug script that
replaces the whole document with any 400/403/404/500 answer to an htmx
request (meant for Django's yellow error pages). A refused override must
still land in its panel, with the page's stylesheet kept, in both modes.
A whole session of ordinary interactions logs no console error and no CSP
violation, and ``/favicon.ico`` is served.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_core.schedules.config import PERSONA_PRESETS, TERSE_REPLIES
from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, open_context
from tests.browser.test_settings_page import PASSWORD, drawn, wait_drawn, wait_until

pytestmark = pytest.mark.browser

USER = "web-errors"


@pytest.fixture(scope="module")
def debug_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """The app as ``make run`` serves it: debug on (django-htmx's debug script loaded)."""
    app = ServedApp(tmp_path_factory.mktemp("served-debug"), env={"CURFEW_DEBUG": "1"})
    app.prepare()
    app.start()
    app.create_user(USER, PASSWORD)
    yield app
    app.stop()


@pytest.fixture(scope="module")
def plain_app(served_app: ServedApp) -> ServedApp:
    served_app.create_user(USER, PASSWORD)
    return served_app


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = open_context(browser, width=1280)
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def _sign_in(watched: Watched, app: ServedApp) -> Any:
    return support.sign_in(watched.page, app, USER, PASSWORD, start="/")


def _refused_overtime_stays_in_its_panel(watched: Watched, app: ServedApp) -> None:
    page = _sign_in(watched, app)
    page.fill("#custom-duration", "forever")
    page.click("#overrides .inline-field button[type=submit]")
    page.wait_for_selector("#override-error")
    assert "forever" in page.inner_text("#overrides #override-error")
    # Swapped into its panel, not the whole document: the page and its stylesheet are still there.
    assert page.locator("link[rel=stylesheet][href*='curfew/curfew.']").count() == 1
    assert page.locator("#now-headline").count() == 1
    assert page.locator("#band-section").count() == 1
    assert page.locator("nav.section-nav").count() == 1
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "")  # styled, not a bare fragment
    # The refused request is a 4xx, which Chromium logs; nothing else went wrong.
    assert [p for p in watched.problems if "status of 422" not in p] == []
    watched.problems.clear()
    watched.assert_clean()


def test_refused_overtime_stays_in_its_panel_with_debug_on(
    watched: Watched, debug_app: ServedApp
) -> None:
    _refused_overtime_stays_in_its_panel(watched, debug_app)


def test_refused_overtime_stays_in_its_panel_with_debug_off(
    watched: Watched, plain_app: ServedApp
) -> None:
    _refused_overtime_stays_in_its_panel(watched, plain_app)


def test_refused_decision_query_stays_in_its_panel_with_debug_on(
    watched: Watched, debug_app: ServedApp
) -> None:
    page = _sign_in(watched, debug_app)
    page.goto(f"{debug_app.base_url}/integrations/")
    page.fill("#decision input[name=max_tokens]", "lots")
    page.click("#decision-ask")
    page.wait_for_selector("#decision-result .banner-error")
    assert page.locator("#tokens").count() == 1
    assert page.locator("#setup").count() == 1
    assert page.locator("link[rel=stylesheet][href*='curfew/curfew.']").count() == 1
    watched.problems.clear()
    watched.assert_clean()


@pytest.mark.parametrize("app_name", ["plain_app", "debug_app"])
def test_a_whole_session_logs_no_error_and_no_csp_violation(
    watched: Watched, app_name: str, request: pytest.FixtureRequest
) -> None:
    plain_app: ServedApp = request.getfixturevalue(app_name)
    page = _sign_in(watched, plain_app)
    base = plain_app.base_url
    # Schedule: edit a field, and the chart and band redraw.
    page.goto(f"{base}/schedule/")
    count = wait_drawn(page, 0)
    page.fill("#f-curfew_start", "21:30")
    count = wait_drawn(page, count)
    # Add an anchor, fill it, then remove it again.
    # The anchor table is under "Shape it yourself".
    page.click(".shape-yourself > summary")
    page.click("#add-anchor")
    row = page.locator("#anchor-rows [data-row]").last
    row.locator("input[name$='-time']").fill("22:15")
    row.locator("input[name$='-tokens']").fill("2000")
    count = wait_drawn(page, count)
    # Drawn with the new anchor (the answer to the last edit is in, none in flight).
    wait_until(
        page,
        "document.querySelectorAll('#curve-chart .scatterlayer .trace:nth-child(2) path.point')"
        ".length === 6",
    )
    count = drawn(page)
    page.locator("#anchor-rows [data-row]").last.locator("[data-remove-row]").click()
    count = wait_drawn(page, count)
    # Hover the chart (Plotly's hover label), then save in place (a toast).
    page.hover("#curve-chart")
    page.click("#save-schedule")
    page.wait_for_selector("#toast .toast-success")
    # Overview: an overtime and back (a reload), and a look at another time.
    page.goto(f"{base}/")
    page.click("#overrides button[value='30m']")
    page.wait_for_selector("#now-override")
    page.click("#back-to-schedule")
    wait_until(page, "!document.querySelector('#now-override')")
    page.wait_for_load_state("load")
    page.wait_for_selector("#now-headline")
    page.fill("#look-at", "2026-12-01T23:30")
    page.dispatch_event("#look-at", "change")
    page.wait_for_selector("#look-banner .look-banner")
    # Replies: a preset filled in, then discarded.
    page.goto(f"{base}/replies/")
    # Signed in in English, the saved persona is the English one (issue 25).
    page.click("button[data-preset=zh]")
    page.wait_for_selector("#replies-form .savebar.is-dirty")
    # Filled in place by script, the texts a post without script fills in.
    persona, tiers = PERSONA_PRESETS["zh"]
    assert page.input_value("#f-tired_persona") == persona
    assert page.input_value("#f-tier_texts") == "\n".join(tiers)
    page.click("button[data-reply-preset=terse]")
    assert page.input_value("#f-off_duty_reply") == TERSE_REPLIES["off_duty_reply"]
    assert page.input_value("#f-lights_out_reply") == TERSE_REPLIES["lights_out_reply"]
    with page.expect_navigation():
        page.click("#replies-form [data-discard]")
    # Integrations: ask the decision preview.
    page.goto(f"{base}/integrations/")
    page.click("#decision-ask")
    page.wait_for_selector("#decision-json")
    # Activity.
    page.goto(f"{base}/activity/")
    # The browser's own favicon request finds one.
    watched.assert_clean()


@pytest.mark.parametrize("app_name", ["plain_app", "debug_app"])
def test_favicon_ico_is_served(app_name: str, request: pytest.FixtureRequest) -> None:
    app: ServedApp = request.getfixturevalue(app_name)
    try:
        with urllib.request.urlopen(f"{app.base_url}/favicon.ico", timeout=10) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("image/svg+xml")
            assert b"<svg" in response.read()
    except urllib.error.HTTPError as exc:  # pragma: no cover - the failure being guarded
        pytest.fail(f"/favicon.ico answered {exc.code}")
