"""The curve you can touch, in real headless Chromium: drag an anchor on the
chart (mouse, and touch on a phone) or move it from the keyboard, watch its
table row follow, save, and read the saved schedule back through the API.
Anchors the curve shape ignores are drawn hollow and their rows marked. Each
session logs no console error and no CSP violation.
"""

from __future__ import annotations

import itertools
import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, assert_fits, open_context, sign_in
from tests.browser.test_settings_page import PASSWORD, drawn, wait_drawn, wait_until

pytestmark = pytest.mark.browser

_users = itertools.count()


class Session:
    def __init__(self, watched: Watched, app: ServedApp, user: str, token: str) -> None:
        self.watched = watched
        self.page = watched.page
        self.app = app
        self.user = user
        self.token = token

    def saved_anchors(self) -> list[list[Any]]:
        request = urllib.request.Request(
            f"{self.app.base_url}/api/v1/schedule",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            anchors: list[list[Any]] = json.load(response)["anchors"]
        return anchors


def _session(
    browser: Any, app: ServedApp, *, width: int, height: int, **context_args: Any
) -> Iterator[Session]:
    user = f"curve-drag-{os.getpid()}-{next(_users)}"
    token = app.create_user(user, PASSWORD)
    context = open_context(browser, width=width, height=height, **context_args)
    session = Session(Watched(context.new_page()), app, user, token)
    page = sign_in(session.page, app, user, PASSWORD, start="/", landing=None)
    page.goto(f"{app.base_url}/schedule/")
    wait_drawn(page, 0)
    wait_until(page, "document.querySelector('#curve-chart').getAttribute('tabindex') === '0'")
    try:
        yield session
    finally:
        context.close()


@pytest.fixture
def desktop(browser: Any, served_app: ServedApp) -> Iterator[Session]:
    yield from _session(browser, served_app, width=1280, height=800)


@pytest.fixture
def phone(browser: Any, served_app: ServedApp) -> Iterator[Session]:
    yield from _session(
        browser,
        served_app,
        width=390,
        height=844,
        scheme="dark",
        has_touch=True,
        is_mobile=True,
        device_scale_factor=2,
    )


def anchor(page: Any, at: str) -> dict[str, float]:
    """Where the anchor at ``at`` is drawn (page pixels) and the axes' scale."""
    page.locator("#curve-chart").scroll_into_view_if_needed()
    found: dict[str, float] = page.evaluate(
        """(at) => {
          const gd = document.getElementById("curve-chart");
          const edit = JSON.parse(document.getElementById("curve-figure").textContent).edit;
          const a = edit.anchors.find((item) => item.at === at);
          const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
          const box = gd.getBoundingClientRect();
          return {
            x: box.left + xa._offset + xa.l2p(a.x),
            y: box.top + ya._offset + ya.l2p(a.tokens),
            tokens: a.tokens,
            tokensPerPx: (ya.range[1] - ya.range[0]) / ya._length,
            minutesPerPx: (xa.range[1] - xa.range[0]) / xa._length,
          };
        }""",
        at,
    )
    return found


def row_of(page: Any, at: str) -> Any:
    index = page.locator("#anchor-rows input[name$='-time']").evaluate_all(
        f"inputs => inputs.findIndex(i => i.value === {at!r})"
    )
    assert index >= 0, f"no row at {at}"
    return page.locator("#anchor-rows [data-row]").nth(index)


def drawn_anchors(page: Any) -> list[list[Any]]:
    result: list[list[Any]] = page.evaluate(
        """JSON.parse(document.getElementById("curve-figure").textContent)
             .edit.anchors.map((a) => [a.at, a.tokens])"""
    )
    return result


def save(session: Session) -> None:
    """Save (the form is swapped in place, with a toast) and wait for the redraw."""
    page = session.page
    count = drawn(page)
    page.click("#save-schedule")
    page.wait_for_selector("#toast .toast-success")
    wait_drawn(page, count)


def shot(page: Any, artifacts_dir: str, name: str) -> None:
    # caret="initial": hiding the caret leaves an empty style attribute on every
    # input, which htmx's settle then copies onto the swapped-in form (a CSP report).
    page.locator("#curve-editor").screenshot(
        path=os.path.join(artifacts_dir, name), caret="initial"
    )


def test_mouse_drag_edits_the_row_and_saves(desktop: Session, artifacts_dir: str) -> None:
    page = desktop.page
    count = drawn(page)
    # Up: 01:00's 800 tokens grow by what 60 px is worth on the axis.
    start = anchor(page, "01:00")
    assert start["tokens"] == 800
    page.mouse.move(start["x"], start["y"])
    wait_until(page, "document.querySelector('#curve-chart').classList.contains('is-over-anchor')")
    page.mouse.down()
    page.mouse.move(start["x"], start["y"] - 30, steps=5)
    page.mouse.move(start["x"], start["y"] - 60, steps=5)
    row = row_of(page, "01:00")
    tokens = int(row.locator("input[name$='-tokens']").input_value())
    expected = 800 + 60 * start["tokensPerPx"]
    assert abs(tokens - expected) <= 16, (tokens, expected)
    assert tokens % 16 == 0
    # The row follows while the button is still down; the chart waits for the release.
    assert drawn(page) == count
    assert page.is_visible("#curve-chart .anchor-handle")
    assert f"01:00 · {tokens}" in page.inner_text("#curve-chart .anchor-handle")
    shot(page, artifacts_dir, "curve-drag-desktop-dragging.png")
    page.mouse.up()
    count = wait_drawn(page, count)
    wait_until(page, f"document.getElementById('curve-figure').textContent.includes('{tokens}')")
    assert ["01:00", tokens] in drawn_anchors(page)
    assert "is-changed" in (row.get_attribute("class") or "")

    # Sideways: 00:00 moves later, snapped to 5 minutes; its tokens stay.
    start = anchor(page, "00:00")
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"] + 12 / start["minutesPerPx"], start["y"], steps=6)
    page.mouse.up()
    row = page.locator("#anchor-rows [data-row]").nth(1)
    assert row.locator("input[name$='-time']").input_value() == "00:10"
    assert row.locator("input[name$='-tokens']").input_value() == "1600"
    wait_drawn(page, count)
    wait_until(page, "document.getElementById('curve-figure').textContent.includes('00:10')")

    # A drag far below the axis stops at the declared floor (1 token).
    start = anchor(page, "02:00")
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"], start["y"] + 400, steps=8)
    page.mouse.up()
    assert row_of(page, "02:00").locator("input[name$='-tokens']").input_value() == "1"
    shot(page, artifacts_dir, "curve-drag-desktop-dragged.png")

    save(desktop)
    saved = desktop.saved_anchors()
    assert ["01:00", tokens] in saved
    assert ["00:10", 1600] in saved
    assert ["02:00", 1] in saved
    desktop.watched.assert_clean()


def test_keyboard_edits_the_row_and_saves(desktop: Session, artifacts_dir: str) -> None:
    page = desktop.page
    label = page.get_attribute("#curve-chart", "aria-label") or ""
    assert "Up and Down" in label
    assert page.get_attribute("#curve-chart", "role") == "application"
    page.focus("#curve-chart")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    status = "#curve-drag-status"
    assert page.text_content(status) == "Anchor 3: 01:00, 800 tokens"
    assert page.is_visible("#curve-chart .anchor-handle")
    count = drawn(page)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Shift+ArrowUp")
    assert page.text_content(status) == "Anchor 3: 01:00, 1072 tokens"
    row = row_of(page, "01:00")
    assert row.locator("input[name$='-tokens']").input_value() == "1072"
    count = wait_drawn(page, count)
    wait_until(page, "document.getElementById('curve-figure').textContent.includes('1072')")
    # The preview swapped the chart; the keyboard keeps its place on it.
    wait_until(page, "document.activeElement && document.activeElement.id === 'curve-chart'")
    page.keyboard.press("PageUp")
    assert page.text_content(status) == "Anchor 3: 01:05, 1072 tokens"
    page.keyboard.press("Alt+ArrowRight")
    assert row.locator("input[name$='-time']").input_value() == "01:10"
    page.keyboard.press("ArrowDown")
    assert page.text_content(status) == "Anchor 3: 01:10, 1056 tokens"
    # Left selects the previous anchor, which Down then lowers.
    page.keyboard.press("ArrowLeft")
    assert page.text_content(status) == "Anchor 2: 00:00, 1600 tokens"
    page.keyboard.press("PageDown")  # still inside the window, 23:00-03:00
    assert page.text_content(status) == "Anchor 2: 23:55, 1600 tokens"
    wait_drawn(page, count)
    wait_until(page, "document.getElementById('curve-figure').textContent.includes('23:55')")
    shot(page, artifacts_dir, "curve-drag-desktop-keyboard.png")
    save(desktop)
    saved = desktop.saved_anchors()
    assert ["01:10", 1056] in saved
    assert ["23:55", 1600] in saved
    assert ["01:00", 800] not in saved
    desktop.watched.assert_clean()


def test_anchors_ease_in_ignores_are_marked(desktop: Session, artifacts_dir: str) -> None:
    page = desktop.page
    assert page.locator("#anchor-rows .row.is-ignored").count() == 0
    count = drawn(page)
    page.select_option("#f-curve", "ease_in")
    count = wait_drawn(page, count)
    wait_until(page, "document.querySelectorAll('#anchor-rows .row.is-ignored').length === 3")
    times = page.locator("#anchor-rows .row.is-ignored input[name$='-time']").evaluate_all(
        "inputs => inputs.map(i => i.value)"
    )
    assert times == ["00:00", "01:00", "02:00"]
    # (text_content: the table may be folded away under "Shape it yourself")
    hint = page.locator("#anchor-rows .row.is-ignored .row-hint").first.text_content() or ""
    assert "ignored by ease-in" in hint
    # Drawn apart: a hollow trace of their own, off the line.
    traces = page.evaluate(
        """Array.from(document.getElementById("curve-chart").data)
             .map((t) => [t.meta || "", (t.x || []).length, t.marker && t.marker.symbol])"""
    )
    assert ["anchors-ignored", 3, "diamond-open"] in traces
    assert ["anchors", 2, "diamond"] in traces
    # The keyboard says so too.
    page.focus("#curve-chart")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert "ignored by ease-in" in (page.text_content("#curve-drag-status") or "")
    shot(page, artifacts_dir, "curve-drag-ease-in.png")
    # Back to linear: every anchor counts again.
    page.select_option("#f-curve", "linear")
    wait_drawn(page, count)
    wait_until(page, "document.querySelectorAll('#anchor-rows .row.is-ignored').length === 0")
    assert page.locator("#anchor-rows .row-hint").count() == 0
    desktop.watched.assert_clean()


def test_the_night_is_shaded_in_the_nights_colour(desktop: Session) -> None:
    """The chart's night (shaded after lights-out) and its dashed line take
    ``--c-night`` from the stylesheet: the shapes charts.py names are the ones
    settings.js colours (named "night", no state's wire value)."""
    page = desktop.page
    shapes = page.evaluate(
        """(() => {
             const night = getComputedStyle(document.documentElement)
               .getPropertyValue("--c-night").trim();
             const shapes = document.getElementById("curve-chart").layout.shapes || [];
             return {night, shapes: shapes.map((s) => [s.name || "", s.type,
               s.type === "rect" ? s.fillcolor : (s.line || {}).color, s.opacity ?? null])};
           })()"""
    )
    night = shapes["night"]
    assert night
    assert ["night", "rect", night, 0.22] in shapes["shapes"], shapes
    assert any(
        name == "night-line" and kind == "line" and colour == night
        for name, kind, colour, _ in shapes["shapes"]
    ), shapes
    desktop.watched.assert_clean()


def test_touch_drag_on_a_phone(phone: Session, artifacts_dir: str) -> None:
    page = phone.page
    assert_fits(page)
    start = anchor(page, "01:00")
    scroll = page.evaluate("window.scrollY")
    count = drawn(page)
    cdp = page.context.new_cdp_session(page)

    def touch(kind: str, x: float, y: float) -> None:
        points = [] if kind == "touchEnd" else [{"x": x, "y": y}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", start["x"], start["y"])
    for step in range(1, 9):
        touch("touchMove", start["x"], start["y"] - 5 * step)
    touch("touchEnd", start["x"], start["y"] - 40)
    tokens = int(row_of(page, "01:00").locator("input[name$='-tokens']").input_value())
    expected = 800 + 40 * start["tokensPerPx"]
    assert abs(tokens - expected) <= 16, (tokens, expected)
    # The finger dragged the anchor, not the page.
    assert page.evaluate("window.scrollY") == scroll
    wait_drawn(page, count)
    wait_until(page, f"document.getElementById('curve-figure').textContent.includes('{tokens}')")
    shot(page, artifacts_dir, "curve-drag-phone.png")
    assert_fits(page)
    save(phone)
    assert ["01:00", tokens] in phone.saved_anchors()
    # Ease-in on a phone: the marked rows and their hints fit the narrow form.
    count = drawn(page)
    page.select_option("#f-curve", "ease_in")
    wait_drawn(page, count)
    wait_until(page, "document.querySelectorAll('#anchor-rows .row.is-ignored').length === 3")
    assert_fits(page)
    shot(page, artifacts_dir, "curve-drag-phone-ease-in-dark.png")
    phone.watched.assert_clean()
