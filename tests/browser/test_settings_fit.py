"""The settings page's parts fit and stay visible, in real headless Chromium.

Regressions from issue 12 ("Bugs seen"): the band's now marker vanished in
the first quarter of each hour (a hairline rule outranked it), holiday names
were cut to "National Day · vall…" in the week view, and on a phone the
chart's "Lights out 03:00" and the curve-shape picker were clipped. Each test
measures the rendered page (computed style, element boxes) rather than
trusting the stylesheet, and leaves screenshots in the artifacts folder, in
English and Chinese.

Its own account. The now marker is checked at chosen moments through the
overview's page-only preview (``?at=``), which stores nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, assert_fits, open_context
from tests.browser.test_settings_page import wait_drawn

pytestmark = pytest.mark.browser

USER = "web-browser-fit"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def account(served_app: ServedApp) -> str:
    served_app.create_user(USER, PASSWORD)
    return USER


def _open(browser: Any, *, width: int) -> Iterator[Watched]:
    context = open_context(browser, width=width)
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


@pytest.fixture
def desktop(browser: Any, account: str) -> Iterator[Watched]:
    yield from _open(browser, width=1280)


@pytest.fixture
def phone(browser: Any, account: str) -> Iterator[Watched]:
    yield from _open(browser, width=390)


def sign_in(watched: Watched, app: ServedApp) -> Any:
    return support.sign_in(watched.page, app, USER, PASSWORD)


def language(page: Any, code: str, *, chart: bool = False) -> None:
    page.click(f"button[name=language][value={code}]")
    page.wait_for_selector(f"html[lang={'zh-Hans' if code == 'zh-hans' else 'en'}]")
    if chart:
        wait_drawn(page, 0)


def look_at(page: Any, app: ServedApp, moment: str) -> None:
    """Show the overview as of a moment (the page-only preview: nothing stored)."""
    page.goto(f"{app.base_url}/?at={moment}")
    page.wait_for_selector("#look-banner .look-banner")


def shot(page: Any, artifacts_dir: str, name: str, selector: str) -> None:
    # At the top of the viewport, clear of the sticky save bar at the bottom.
    page.locator(selector).evaluate("el => el.scrollIntoView({block: 'start'})")
    page.locator(selector).screenshot(path=os.path.join(artifacts_dir, name))


#: Marker rule of the now cell: a 2.5px inset ring (curfew.css ``.cell.is-now``).
NOW_RING = "2.5px"


def test_now_marker_shows_in_the_first_quarter_of_an_hour(
    desktop: Watched, served_app: ServedApp, artifacts_dir: str
) -> None:
    page = sign_in(desktop, served_app)
    # 10:05: the now cell is 10:00–10:15, the 41st (4n+1), which also
    # carries the faint hour rule; the marker must win.
    look_at(page, served_app, "2026-09-29T10:05")
    now = page.locator("#band .band .cell.is-now")
    assert now.count() == 1
    assert now.evaluate("cell => Array.from(cell.parentNode.children).indexOf(cell)") == 40
    assert NOW_RING in now.evaluate("cell => getComputedStyle(cell).boxShadow")
    shot(page, artifacts_dir, "fit-now-marker-10-05.png", "#band")
    # Control: at 10:20 (not a first-of-hour cell) the same marker shows,
    # and a first-of-hour cell that is not now keeps only its hour rule.
    look_at(page, served_app, "2026-09-29T10:20")
    assert NOW_RING in page.locator("#band .band .cell.is-now").evaluate(
        "cell => getComputedStyle(cell).boxShadow"
    )
    rule = page.locator("#band .band .cell:nth-child(41)").evaluate(
        "cell => getComputedStyle(cell).boxShadow"
    )
    assert NOW_RING not in rule
    assert rule != "none"
    desktop.assert_clean()


#: Each day tag's text against the tag's own content box. An ellipsis may hide
#: the end of the text without growing ``scrollWidth`` (seen: "National Day ·
#: vall…" at scrollWidth == clientWidth), so the laid-out text (a Range) and,
#: for a one-line tag, the text's one-line width are measured too.
CLIPPED_TAGS = """
() => Array.from(document.querySelectorAll('#band .band-label .tag')).map(tag => {
  const box = tag.getBoundingClientRect();
  const style = getComputedStyle(tag);
  const range = document.createRange();
  range.selectNodeContents(tag);
  const text = range.getBoundingClientRect();
  // The text on one line in the tag's font: what a one-line tag must hold.
  const probe = document.createElement('span');
  probe.style.font = style.font;
  probe.style.whiteSpace = 'pre';
  probe.style.position = 'absolute';
  probe.textContent = tag.textContent.trim();
  document.body.appendChild(probe);
  const line = probe.getBoundingClientRect().width;
  probe.remove();
  return {
    text: tag.textContent.trim(),
    scroll: tag.scrollWidth,
    client: tag.clientWidth,
    textRight: text.right,
    boxRight: box.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth),
    oneLine: style.whiteSpace === 'nowrap' || style.whiteSpace === 'pre',
    line,
    inner: tag.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
    visible: box.width > 0,
  };
})
"""


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_holiday_names_are_whole_in_the_week_view(
    desktop: Watched, served_app: ServedApp, artifacts_dir: str, lang: str
) -> None:
    page = sign_in(desktop, served_app)
    if lang != "en":
        language(page, lang)
    try:
        names: list[str] = []
        # The 2026 National Day week and the one after (its observed day and
        # the 调休 days off have the long names).
        for day in ("2026-10-01", "2026-10-05"):
            page.goto(f"{served_app.base_url}/?band_date={day}&band_view=week")
            page.wait_for_selector("#band[data-view=week]")
            shot(page, artifacts_dir, f"fit-week-{day}-{lang}.png", "#band-section")
            tags = page.evaluate(CLIPPED_TAGS)
            names += [tag["text"] for tag in tags]
            for tag in tags:
                assert tag["visible"], tag
                assert tag["scroll"] <= tag["client"], f"clipped: {tag}"
                assert tag["textRight"] <= tag["boxRight"] + 0.5, f"clipped: {tag}"
                assert not tag["oneLine"] or tag["line"] <= tag["inner"] + 0.5, f"cut: {tag}"
        assert len(names) >= 7, names
        # The long ones were among them (Chinese names are shorter in characters, wider each).
        longest = 30 if lang == "en" else 20
        assert any(len(name) > longest for name in names), names
    finally:
        if lang != "en":
            language(page, "en")
    desktop.assert_clean()


#: Elements inside the curve editor that stick out of it sideways, and
#: Plotly's SVG text that sticks out of the chart (the SVG clips it).
OVERFLOWS = """
() => {
  const editor = document.querySelector('#curve-editor');
  const box = editor.getBoundingClientRect();
  const out = [];
  for (const el of editor.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || el.closest('.sr-only')) continue;
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5) {
      const name = `${el.tagName}.${el.className.baseVal ?? el.className}`;
      out.push(`${name} ${r.left}-${r.right} of ${box.left}-${box.right}`);
    }
    if ((el.tagName === 'SELECT' || el.tagName === 'INPUT') && el.scrollWidth > el.clientWidth) {
      out.push(`${el.tagName}#${el.id} scrolls ${el.scrollWidth} > ${el.clientWidth}`);
    }
  }
  const chart = document.querySelector('#curve-chart').getBoundingClientRect();
  for (const text of document.querySelectorAll('#curve-chart text')) {
    const r = text.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < chart.left - 0.5 || r.right > chart.right + 0.5) {
      out.push(`text "${text.textContent}" ${r.left}-${r.right} of ${chart.left}-${chart.right}`);
    }
  }
  return out;
}
"""

#: The widest option of the curve-shape picker fits the closed picker.
SELECT_FITS = """
() => {
  const select = document.querySelector('#curve-editor select');
  const probe = document.createElement('span');
  const style = getComputedStyle(select);
  probe.style.font = style.font;
  probe.style.whiteSpace = 'pre';
  probe.style.position = 'absolute';
  document.body.appendChild(probe);
  let widest = 0;
  for (const option of select.options) {
    probe.textContent = option.textContent;
    widest = Math.max(widest, probe.getBoundingClientRect().width);
  }
  probe.remove();
  const inner = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return {widest, inner};
}
"""


@pytest.mark.parametrize("lang", ["en", "zh-hans"])
def test_curve_panel_fits_a_phone(
    phone: Watched, served_app: ServedApp, artifacts_dir: str, lang: str
) -> None:
    page = sign_in(phone, served_app)
    page.goto(f"{served_app.base_url}/schedule/")
    wait_drawn(page, 0)
    if lang != "en":
        language(page, lang, chart=True)
    try:
        # First the picture, so a failure leaves evidence.
        shot(page, artifacts_dir, f"fit-phone-curve-shape-{lang}.png", "#curve-editor .field")
        shot(page, artifacts_dir, f"fit-phone-chart-{lang}.png", "#curve-chart")
        lights_out = page.locator("#curve-chart .annotation-text").first
        assert "03:00" in (lights_out.text_content() or "")
        assert page.evaluate(OVERFLOWS) == []
        fit = page.evaluate(SELECT_FITS)
        # Room for the arrow too: the widest option and ~1.5rem to spare.
        assert fit["widest"] <= fit["inner"] - 16, fit
        assert_fits(page)
    finally:
        if lang != "en":
            language(page, "en", chart=True)
    phone.assert_clean()
