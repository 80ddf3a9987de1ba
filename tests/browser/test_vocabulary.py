"""One vocabulary and one palette on the settings pages and in the live capsule.

Real Chromium on the served app: with the time machine at an instant, the
overview's Now card and band legend, and the capsule on the
Integrations section, must show the same progress number, the same state name
(English and Chinese) and the same colour.
The numbers and names come from ``curfew_core.vocabulary``, the colours from
``static/curfew/states.css``; before they did, the capsule said "winding 13 %"
beside the page's 12 %, "上班中" beside the legend's "值班", green beside blue.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import (
    api,
    api_post,
    assert_fits,
    open_context,
    sign_in,
    wait_until,
)

pytestmark = pytest.mark.browser

USER = "vocabulary-browser"
PASSWORD = "correct horse battery"
CAPSULE = "document.querySelector('#capsule curfew-capsule')"


@pytest.fixture(scope="module")
def api_token(served_app: ServedApp) -> str:
    return served_app.create_user(USER, PASSWORD)


@pytest.fixture
def time_machine(served_app: ServedApp, api_token: str) -> Iterator[Any]:
    def travel(to: str) -> Any:
        return api_post(served_app, api_token, "/api/v1/overrides", {"debug": to})

    yield travel
    travel("clear")


def open_page(browser: Any, app: ServedApp, *, width: int, scheme: str = "light") -> Any:
    context = open_context(browser, width=width, scheme=scheme)
    return sign_in(context.new_page(), app, USER, PASSWORD, start="/", landing=None)


def capsule_live(page: Any, state: str) -> None:
    wait_until(
        page,
        f"(() => {{ const h = {CAPSULE}; return !!h && h.dataset.link === 'live' "
        f"&& h.dataset.state === {state!r} && h.dataset.css === 'loaded'; }})()",
    )


def capsule_label(page: Any) -> str:
    return str(page.evaluate(f"{CAPSULE}.shadowRoot.querySelector('.label').textContent"))


def legend_name(page: Any, state: str) -> str:
    return str(page.inner_text(f".legend .legend-item:has(.s-{state}) .legend-name")).strip()


def percent(text: str) -> int:
    found = re.search(r"(\d+)\s*%", text)
    assert found, f"no percent in {text!r}"
    return int(found.group(1))


def shot(page: Any, artifacts_dir: str, name: str) -> None:
    page.screenshot(path=os.path.join(artifacts_dir, name), full_page=True)


def to_chinese(page: Any) -> None:
    page.click("button[name=language][value=zh-hans]")
    page.wait_for_selector("html[lang=zh-Hans]")


def to_english(page: Any) -> None:
    page.click("button[name=language][value=en]")
    page.wait_for_selector("html[lang=en]")


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_winding_progress_and_names_agree_on_page_and_capsule(
    browser: Any, served_app: ServedApp, time_machine: Any, artifacts_dir: str, width: int
) -> None:
    # 23:30 is 12.5 % of the night's winding: Python's round says 12, JavaScript's 13.
    # Floor (declared once, on the server) says 12 for the next 2.4 minutes of the night.
    state = time_machine("23:30")
    assert state["state"] == "winding"
    page = open_page(browser, served_app, width=width)
    base = served_app.base_url
    try:
        for language in ("en", "zh"):
            if language == "zh":
                to_chinese(page)
            # The overview: the Now card's state and its Details' reason, the band's legend.
            page.goto(f"{base}/")
            page.wait_for_selector("#now-headline")
            page_number = percent(page.inner_text("#now-progress"))
            # The same number as the reason in Details (the engine's own).
            assert percent(page.text_content("#now-reason") or "") == page_number
            name = legend_name(page, "winding")
            assert page.inner_text("#now-state").strip() == name
            # The capsule, on the Integrations section.
            page.goto(f"{base}/integrations/")
            capsule_live(page, "winding")
            label = capsule_label(page)
            assert percent(label) == page_number == 12, (language, label)
            assert label.startswith(name + " "), (language, label, name)
            # The declared name is longer than the capsule's old one: still no sideways spill.
            assert_fits(page)
            page.locator("#capsule").scroll_into_view_if_needed()
            kind = "desktop" if width > 600 else "phone"
            shot(page, artifacts_dir, f"vocabulary-winding-{kind}-{language}.png")
        to_english(page)
    finally:
        page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_on_duty_is_one_colour_and_one_name(
    browser: Any, served_app: ServedApp, time_machine: Any, artifacts_dir: str, scheme: str
) -> None:
    assert time_machine("20:00")["state"] == "on-duty"
    page = open_page(browser, served_app, width=1280, scheme=scheme)
    try:
        to_chinese(page)
        page.wait_for_selector("#now-headline")
        band = page.evaluate(
            "getComputedStyle(document.querySelector('#band .band .cell.s-on-duty'))"
            ".backgroundColor"
        )
        legend = page.evaluate(
            "getComputedStyle(document.querySelector('.legend .swatch.s-on-duty')).backgroundColor"
        )
        name = legend_name(page, "on-duty")
        page.goto(f"{served_app.base_url}/integrations/")
        capsule_live(page, "on-duty")
        capsule = page.evaluate(
            f"getComputedStyle({CAPSULE}.shadowRoot.querySelector('.capsule')).borderTopColor"
        )
        assert band == legend == capsule, (band, legend, capsule)
        assert capsule_label(page) == name == "工作中"
        shot(page, artifacts_dir, f"vocabulary-on-duty-desktop-zh-{scheme}.png")
        to_english(page)
    finally:
        page.context.close()


def capsule_detail(page: Any) -> str:
    return str(page.evaluate(f"{CAPSULE}.shadowRoot.querySelector('.detail').textContent"))


def test_the_capsule_says_what_is_beside_the_state_in_the_readers_words(
    browser: Any, served_app: ServedApp, api_token: str, time_machine: Any, artifacts_dir: str
) -> None:
    """The budget and only-watching are the pushed words (curfew_core/vocabulary.py):
    in Chinese no English is left; before, the capsule said "预算 320 · 演练"
    beside a page that said neither, and "budget 320 · dry run" in English."""
    from tests.web.test_plain_words import CJK, KEPT, WORD

    assert time_machine("23:30")["state"] == "winding"
    api(served_app, api_token, "PATCH", "/api/v1/schedule", {"dry_run": True})
    page = open_page(browser, served_app, width=390, scheme="dark")
    try:
        page.goto(f"{served_app.base_url}/integrations/")
        capsule_live(page, "winding")
        english = capsule_detail(page)
        assert re.fullmatch(r"answers up to \d+ tokens · only watching", english), english
        to_chinese(page)
        page.goto(f"{served_app.base_url}/integrations/")
        capsule_live(page, "winding")
        chinese = capsule_detail(page)
        assert CJK.search(chinese), chinese
        assert "仅观察" in chinese, chinese
        assert not [w for w in WORD.findall(chinese) if w not in KEPT], chinese
        page.locator("#capsule").scroll_into_view_if_needed()
        shot(page, artifacts_dir, "vocabulary-capsule-detail-phone-zh.png")
        to_english(page)
    finally:
        api(served_app, api_token, "PATCH", "/api/v1/schedule", {"dry_run": False})
        page.context.close()
