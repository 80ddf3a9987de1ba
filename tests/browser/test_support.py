"""Controls for the shared browser helpers: ``assert_fits`` fails on a page that
scrolls sideways and on an element that sticks out, and passes a page that fits,
so every suite's "nothing spills sideways" check can fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.support import assert_fits, open_context

pytestmark = pytest.mark.browser

WIDTH = 400


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = open_context(browser, width=WIDTH, height=300)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_page_that_fits_passes(page: Any) -> None:
    page.set_content("<main><p>Short.</p></main>")
    assert_fits(page)
    assert_fits(page, WIDTH, inside="main")


def test_a_page_wider_than_the_window_fails(page: Any) -> None:
    page.set_content('<main><div style="width: 600px">Wide.</div></main>')
    with pytest.raises(AssertionError, match=r"sideways scroll: 6\d\d > 400"):
        assert_fits(page)
    with pytest.raises(AssertionError, match="sideways scroll"):
        assert_fits(page, WIDTH)


def test_an_element_sticking_out_of_main_fails(page: Any) -> None:
    # Clipped, so the page itself does not scroll; the element still sticks out.
    page.set_content(
        '<main><div style="overflow: clip; width: 100px">'
        '<span id="out" style="display: inline-block; width: 600px">Out.</span></div></main>'
    )
    assert_fits(page)
    with pytest.raises(AssertionError, match="SPAN#out"):
        assert_fits(page, WIDTH, inside="main")
