"""Controls for the shared browser helpers: ``assert_fits`` fails on a page that
scrolls sideways and on an element that sticks out, and passes a page that fits,
so every suite's "nothing spills sideways" check can fail. ``sign_in`` hands a
user's session to the next context, fills the form again once that session
has ended, and with ``form=True``; each read from the requests the form sends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
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


PASSWORD = "correct horse battery"


def _signed_in(browser: Any, app: ServedApp, user: str, **options: Any) -> tuple[Any, int]:
    """A new context signed in as ``user``; how many times it posted the login form."""
    context = open_context(browser, width=1280)
    page = context.new_page()
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    support.sign_in(page, app, user, PASSWORD, **options)
    return context, sum("/login/" in url for url in posts)


def test_a_users_next_sign_in_takes_the_kept_session(browser: Any, served_app: ServedApp) -> None:
    user = "support-kept"
    served_app.create_user(user, PASSWORD)
    first, posted = _signed_in(browser, served_app, user)
    assert posted == 1
    second, posted = _signed_in(browser, served_app, user)
    assert posted == 0
    assert second.new_page().goto(f"{served_app.base_url}/account/").url.endswith("/account/")
    # The control: asked for the form, it is posted.
    third, posted = _signed_in(browser, served_app, user, form=True)
    assert posted == 1
    for context in (first, second, third):
        context.close()


def test_an_ended_session_is_signed_in_through_the_form(
    browser: Any, served_app: ServedApp
) -> None:
    user = "support-ended"
    served_app.create_user(user, PASSWORD)
    first, _ = _signed_in(browser, served_app, user)
    page = first.new_page()
    page.goto(f"{served_app.base_url}/account/")
    page.click("#sign-out")
    page.wait_for_url(f"{served_app.base_url}/login/")
    second, posted = _signed_in(browser, served_app, user)
    assert posted == 1
    assert second.new_page().goto(f"{served_app.base_url}/").url == f"{served_app.base_url}/"
    for context in (first, second):
        context.close()
