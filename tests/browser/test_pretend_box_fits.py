"""The Pretend box shows its example whole, in real headless Chromium, on a
desktop and a phone, in English and Chinese. Its placeholder ("e.g.
2026-09-30 01:30, or 01:30") was cut off in its field, and the hint under it
said the same again; the box now shows the form a moment is typed in, whole,
and the hint alone gives the examples. Nothing scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, assert_fits, open_context, sign_in

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
USER = "web-pretend-fits"

#: Whether the placeholder's text, in the box's own font, fits its box: the
#: box holds it as a value for the measure, then gets its value back.
FITS = """(el) => {
  const kept = el.value;
  el.value = el.placeholder;
  const fits = el.scrollWidth <= el.clientWidth;
  el.value = kept;
  return fits;
}"""


@pytest.fixture(scope="module")
def user(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_pretend_box_shows_its_example_whole(
    browser: Any, served_app: ServedApp, user: str, width: int, language: str
) -> None:
    context = open_context(
        browser,
        width=width,
        height=900,
        language=(served_app, language),
        is_mobile=width < 600,
        has_touch=width < 600,
    )
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app, user, PASSWORD)
        box = page.locator("#time-machine")
        placeholder = box.get_attribute("placeholder") or ""
        assert placeholder
        assert box.evaluate(FITS), f"cut off at {width}px: {placeholder!r}"
        # The hint under the box gives the examples; the box does not repeat them.
        hint = page.inner_text("#pretend-typing")
        assert placeholder not in hint
        assert "2026-09-30 01:30" in hint
        assert_fits(page)
        watched.assert_clean()
    finally:
        context.close()
