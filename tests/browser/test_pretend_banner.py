""" "Pretend it is ..." in real headless Chromium: while gateways are told another
moment, every signed-in page (settings, the capsule's /embed/ page) carries the
warning banner, on a phone without sideways scroll, light and dark, with no CSP
violation; its Stop button is a plain form that ends it. Screenshots go to the
artifacts folder.

Its own account, so its pretend never leaks into another module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, api_post, assert_fits, open_context, sign_in

pytestmark = pytest.mark.browser

USER = "web-browser-pretend"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def token(served_app: ServedApp) -> str:
    return served_app.create_user(USER, PASSWORD)


def pretend(app: ServedApp, token: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = api_post(app, token, "/api/v1/overrides", body)
    return answer


@pytest.fixture(params=[("light", 1280), ("dark", 390)], ids=["desktop-light", "phone-dark"])
def watched(request: Any, browser: Any, token: str) -> Iterator[Watched]:
    scheme, width = request.param
    context = open_context(browser, width=width, height=800, scheme=scheme)
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def test_the_banner_warns_on_every_page_and_stops_without_javascript(
    watched: Watched, served_app: ServedApp, token: str, artifacts_dir: str, request: Any
) -> None:
    name = request.node.callspec.id
    page = watched.page
    sign_in(page, served_app, USER, PASSWORD, landing=None)
    assert page.locator("#pretend-banner").count() == 0
    pretend(served_app, token, {"debug": "2026-09-30 01:30", "duration": "4h"})
    for path in ("/", "/embed/"):
        page.goto(f"{served_app.base_url}{path}")
        banner = page.locator("#pretend-banner")
        assert banner.is_visible()
        text = " ".join(banner.inner_text().split())
        assert "Pretending: gateways are being told it is 2026-09-30 01:30" in text
        assert "left" in text
        # The warning colours of curfew.css, not the page's own background.
        colours = banner.evaluate(
            "el => [getComputedStyle(el).backgroundColor, getComputedStyle(document.body)"
            ".backgroundColor, getComputedStyle(el).borderBottomStyle]"
        )
        assert colours[0] != colours[1]
        assert colours[0] not in ("rgba(0, 0, 0, 0)", "transparent")
        assert colours[2] == "solid"
        # Nothing sideways on a phone.
        assert_fits(page)
        banner.screenshot(
            path=os.path.join(
                artifacts_dir, f"pretend-banner-{path.strip('/') or 'settings'}-{name}.png"
            )
        )
    page.screenshot(path=os.path.join(artifacts_dir, f"pretend-embed-page-{name}.png"))
    # The stop button, on the /embed/ page, as a plain form post.
    with page.expect_navigation():
        page.click("#pretend-stop")
    assert page.url == f"{served_app.base_url}/"
    assert page.locator("#pretend-banner").count() == 0
    page.goto(f"{served_app.base_url}/embed/")
    assert page.locator("#pretend-banner").count() == 0
    watched.assert_clean()
