"""The settings page in real headless Chromium, as a person uses it.

One served app and one browser for the module: sign in, edit the curfew and
the curve and watch the chart and band redraw, save and reload, fail on a bad
time with nothing saved, apply and cancel an override. Every page load is
watched for console errors and CSP violations, and screenshots (desktop and
phone) go to the artifacts folder.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, assert_fits, open_context, wait_until

pytestmark = pytest.mark.browser

USER = "web-browser"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def account(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


def _open(browser: Any, app: ServedApp, *, width: int, scheme: str = "light") -> Iterator[Watched]:
    context = open_context(browser, width=width, scheme=scheme)
    watched = Watched(context.new_page())
    try:
        yield watched
    finally:
        context.close()


@pytest.fixture
def desktop(browser: Any, served_app: ServedApp, account: str) -> Iterator[Watched]:
    yield from _open(browser, served_app, width=1280)


@pytest.fixture
def phone(browser: Any, served_app: ServedApp, account: str) -> Iterator[Watched]:
    yield from _open(browser, served_app, width=390)


@pytest.fixture
def dark(browser: Any, served_app: ServedApp, account: str) -> Iterator[Watched]:
    yield from _open(browser, served_app, width=1280, scheme="dark")


def sign_in(watched: Watched, app: ServedApp) -> Any:
    """Sign in; the first screen is the overview (no chart there)."""
    page = watched.page
    page.goto(f"{app.base_url}/")
    assert "/login/" in page.url  # the page needs sign-in
    return support.sign_in(page, app, USER, PASSWORD, start=None)


def open_schedule(page: Any, app: ServedApp) -> Any:
    """The Schedule section, with its chart drawn."""
    page.goto(f"{app.base_url}/schedule/")
    wait_drawn(page, 0)
    return page


def drawn(page: Any) -> int:
    return int(page.get_attribute("#curve-chart", "data-drawn") or 0)


def wait_drawn(page: Any, after: int) -> int:
    wait_until(
        page, f"Number(document.querySelector('#curve-chart')?.dataset.drawn || 0) > {after}"
    )
    return drawn(page)


def cells(page: Any, state: str) -> int:
    return int(page.locator(f"#band .band .cell.s-{state}").count())


def screenshot(page: Any, artifacts_dir: str, name: str) -> None:
    # At the bottom, the sticky save bar sits where it belongs in a full-page shot.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.screenshot(path=os.path.join(artifacts_dir, name), full_page=True)


def assert_layout(page: Any, *, labels: str) -> None:
    """Band has 96+ cells, swatches have size, axis labels do not overlap."""
    band = page.locator("#band .band").first
    assert band.locator(".cell").count() >= 96
    box = band.bounding_box()
    assert box["width"] > 300
    assert box["height"] >= 20
    for swatch in page.locator(".legend .swatch").all():
        size = swatch.bounding_box()
        assert size["width"] > 0
        assert size["height"] > 0
    boxes = [b.bounding_box() for b in page.locator(labels).all() if b.is_visible()]
    assert len(boxes) >= 5
    for left, right in itertools.pairwise(boxes):
        assert left["x"] + left["width"] <= right["x"], f"axis labels overlap: {left} {right}"
    # Labels stay inside the band's width (00:00 at the left edge, 24:00 at the right).
    assert boxes[0]["x"] >= box["x"] - 1
    assert boxes[-1]["x"] + boxes[-1]["width"] <= box["x"] + box["width"] + 1
    # Nothing spills sideways off the page.
    assert_fits(page)


def test_edit_save_reload_and_override(
    desktop: Watched, served_app: ServedApp, artifacts_dir: str
) -> None:
    page = sign_in(desktop, served_app)
    # The overview: the now card and the day band.
    assert page.locator("#now-state").is_visible()
    assert_layout(page, labels="#band .tick.major .tick-label")
    screenshot(page, artifacts_dir, "settings-desktop.png")

    # Schedule: change the curfew start, and chart and band redraw without a reload.
    open_schedule(page, served_app)
    assert_layout(page, labels="#band .tick.major .tick-label")
    count = drawn(page)
    line = page.get_attribute("#curve-chart .scatterlayer .trace path.js-line", "d")
    winding = cells(page, "winding")
    page.fill("#f-curfew_start", "21:00")
    count = wait_drawn(page, count)
    wait_until(
        page, f"document.querySelectorAll('#band .band .cell.s-winding').length === {winding + 8}"
    )
    assert page.get_attribute("#curve-chart .scatterlayer .trace path.js-line", "d") != line
    assert "21:00" in page.inner_text("#curve-panel .chart-caption")

    # Add an anchor: one more marker on the chart.
    markers = page.locator("#curve-chart .scatterlayer .trace").nth(1).locator("path.point")
    assert markers.count() == 5
    # The anchor table is under "Shape it yourself".
    page.click(".shape-yourself > summary")
    page.click("#add-anchor")
    row = page.locator("#anchor-rows [data-row]").last
    # The rows are a formset: the script names a new row's boxes by its index
    # (5 anchors and the spare row before it) and counts it in TOTAL_FORMS.
    assert row.locator("input[name$='-time']").get_attribute("name") == "anchors-6-time"
    assert page.input_value("input[name=anchors-TOTAL_FORMS]") == "7"
    row.locator("input[name$='-time']").fill("22:00")
    row.locator("input[name$='-tokens']").fill("2100")
    count = wait_drawn(page, count)
    wait_until(
        page,
        "document.querySelectorAll('#curve-chart .scatterlayer .trace:nth-child(2) path.point')"
        ".length === 6",
    )

    # Save (in place, with a toast), reload, and it is all still there.
    page.click("#save-schedule")
    page.wait_for_selector("#toast .toast-success")
    assert "Saved" in page.inner_text("#toast")
    assert page.url == f"{served_app.base_url}/schedule/"
    page.reload()
    wait_drawn(page, 0)
    assert page.input_value("#f-curfew_start") == "21:00"
    times = page.locator("#anchor-rows input[name$='-time']").evaluate_all(
        "inputs => inputs.map(i => i.value)"
    )
    # The curve followed the night (23:00-03:00 stretched over 21:00-03:00),
    # and the anchor added by hand at 22:00 stayed where it was put.
    assert times[:4] == ["21:00", "22:00", "22:30", "00:00"]
    screenshot(page, artifacts_dir, "settings-desktop-edited.png")

    # A bad time: flagged as you type, refused on save, nothing saved.
    page.fill("#f-curfew_start", "24:61")
    wait_until(page, "document.querySelector('#err-curfew_start').textContent.includes('24:61')")
    assert "not a time" in page.inner_text("#err-curfew_start")
    page.click("#save-schedule")
    page.wait_for_selector("#form-errors")
    assert "Nothing was saved" in page.inner_text("#form-errors")
    assert page.input_value("#f-curfew_start") == "24:61"  # kept for fixing
    # The refused htmx save answers 422, which Chromium logs; that one is expected.
    assert [p for p in desktop.problems if "status of 422" not in p] == []
    desktop.problems.clear()
    # Discarding the edit goes back to what was saved.
    with page.expect_navigation():
        page.click("#schedule-form [data-discard]")
    wait_drawn(page, 0)
    assert page.input_value("#f-curfew_start") == "21:00"

    # Week view through htmx: seven bands.
    page.click("label:has(input[name=band_view][value=week])")
    wait_until(page, "document.querySelectorAll('#band .band').length === 7")

    # On the overview: apply an override, then go back to the schedule.
    page.goto(f"{served_app.base_url}/")
    page.click("#overrides button[value='30m']")
    page.wait_for_selector("#now-override")
    assert "Overtime until" in page.inner_text("#now-override")
    assert page.get_attribute("#now-state", "data-state") == "on-duty"
    page.click("#back-to-schedule")
    # The page reloads (going back also clears the time machine, which moves everything).
    wait_until(page, "!document.querySelector('#now-override')")
    page.wait_for_load_state("load")
    page.wait_for_selector("#now-headline")
    assert page.locator("#now-override").count() == 0
    desktop.assert_clean()


def test_phone_layout(phone: Watched, served_app: ServedApp, artifacts_dir: str) -> None:
    page = sign_in(phone, served_app)
    assert_layout(page, labels="#band .tick.six .tick-label")
    screenshot(page, artifacts_dir, "settings-phone.png")
    open_schedule(page, served_app)
    assert_layout(page, labels="#band .tick.six .tick-label")
    # On a phone the form is one column and the chart still has room to draw.
    chart = page.locator("#curve-chart").bounding_box()
    assert chart["width"] > 300
    screenshot(page, artifacts_dir, "settings-phone-schedule.png")
    # The same page in Chinese: the declared labels and help texts, translated.
    page.click("button[name=language][value=zh-hans]")
    page.wait_for_selector("html[lang=zh-Hans]")
    wait_drawn(page, 0)
    assert page.url == f"{served_app.base_url}/schedule/"
    assert "宵禁开启" in page.inner_text("#schedule-form")
    screenshot(page, artifacts_dir, "settings-phone-zh.png")
    page.click("button[name=language][value=en]")
    page.wait_for_selector("html[lang=en]")
    phone.assert_clean()


def test_dark_mode_and_chinese(dark: Watched, served_app: ServedApp, artifacts_dir: str) -> None:
    page = sign_in(dark, served_app)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(244, 245, 250)"  # the light page colour
    open_schedule(page, served_app)
    page.click("button[name=language][value=zh-hans]")
    page.wait_for_selector("html[lang=zh-Hans]")
    wait_drawn(page, 0)
    # The save bar is hidden until an edit; its button is translated.
    assert page.inner_text("#schedule-form legend >> nth=0") == "夜晚"
    page.fill("#f-curfew_start", "21:15")
    page.wait_for_selector("#save-schedule", state="visible")
    assert page.inner_text("#save-schedule").strip() == "保存"
    screenshot(page, artifacts_dir, "settings-desktop-dark-zh.png")
    with page.expect_navigation():
        page.click("#schedule-form [data-discard]")
    page.click("button[name=language][value=en]")
    page.wait_for_selector("html[lang=en]")
    dark.assert_clean()
