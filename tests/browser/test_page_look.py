"""What a person sees, in real headless Chromium, that no other suite measures.

- On the capsule's own page (``/embed/``), the pretend banner is the card-like
  strip curfew.css draws there (rounded, a gap before the page's link), not the
  settings pages' full-width bar butting against the text below it.
- On the overview, each step's time ("星期日 03:00" on the Chinese page) stays
  on one line, on a desktop and on a phone, and the words of every step start
  at the same place.

Its own account, so its pretend never leaks into another module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, api_post, assert_fits, open_context, sign_in

pytestmark = pytest.mark.browser

USER = "web-browser-look"
PASSWORD = "correct horse battery"

#: How many lines each step's time takes (its text's distinct line boxes).
TIME_LINES = """() => Array.from(document.querySelectorAll('#now-steps .step-time')).map(el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
})"""

#: Where each step's words start, from the left of the page.
WORDS_LEFT = """() => Array.from(document.querySelectorAll('#now-steps .step-words'))
  .map(el => Math.round(el.getBoundingClientRect().left))"""


@pytest.fixture(scope="module")
def token(served_app: ServedApp) -> str:
    return served_app.create_user(USER, PASSWORD)


@pytest.fixture(params=[(1280, "light"), (390, "dark")], ids=["desktop-light", "phone-dark"])
def watched(request: Any, browser: Any, served_app: ServedApp) -> Iterator[Watched]:
    width, scheme = request.param
    context = open_context(
        browser, width=width, scheme=scheme, locale="zh-CN", language=(served_app, "zh-hans")
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def test_the_embed_pages_pretend_banner_is_a_strip_with_room_below(
    watched: Watched, served_app: ServedApp, token: str
) -> None:
    page = watched.page
    sign_in(page, served_app, USER, PASSWORD)
    api_post(
        served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "1h"}
    )
    try:
        page.goto(f"{served_app.base_url}/embed/")
        banner = page.locator("#pretend-banner")
        assert banner.is_visible()
        radius, gap = page.evaluate(
            """() => {
              const banner = document.getElementById('pretend-banner');
              const link = document.querySelector('main a');
              return [getComputedStyle(banner).borderTopLeftRadius,
                      link.getBoundingClientRect().top - banner.getBoundingClientRect().bottom];
            }"""
        )
        assert radius != "0px"
        assert gap >= 8, f"the banner touches the link below it ({gap}px apart)"
        assert_fits(page)
    finally:
        api_post(served_app, token, "/api/v1/overrides", {"auto": True})
    watched.assert_clean()


def test_each_steps_time_is_one_line_in_chinese(
    watched: Watched, served_app: ServedApp, token: str
) -> None:
    page = watched.page
    sign_in(page, served_app, USER, PASSWORD)
    # 10:00 on a workday: the steps reach tomorrow, so times carry a weekday (星期四 03:00).
    api_post(
        served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 10:00", "duration": "1h"}
    )
    try:
        page.goto(f"{served_app.base_url}/")
        times = page.locator("#now-steps .step-time").all_inner_texts()
        assert any("星期" in time for time in times), times
        assert page.evaluate(TIME_LINES) == [1] * len(times), times
        assert len(set(page.evaluate(WORDS_LEFT))) == 1
        assert_fits(page, inside="#now")
    finally:
        api_post(served_app, token, "/api/v1/overrides", {"auto": True})
    watched.assert_clean()
