"""The Activity page's decision table at desktop width, in real headless
Chromium: each column heading and the short cells (a time, a budget, the
tokens used, where it was decided) keep to one line, in English and in
Chinese ("已用 token" and "裁决 API" wrapped onto two), while a long reason
wraps; on a phone the table is still a block per decision that fits.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api_post, assert_fits

pytestmark = pytest.mark.browser

USER = "web-activity-columns"
PASSWORD = "correct horse battery"
#: A team member's reason: their own side and the team's, long enough to wrap.
REASON = "winding 21% · budget 1662 · team: winding 21% · team: budget 1662"

#: The short columns: when, budget, tokens used, origin.
SHORT_CELLS = ", ".join(f"#decision-table td:nth-child({n})" for n in (1, 5, 6, 7))
#: Text of the elements under ``sel`` whose text lays out on more than one line.
WRAPPED = """(sel) => Array.from(document.querySelectorAll(sel)).filter(el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
  return tops.size > 1;
}).map(el => el.textContent.trim())"""


@pytest.fixture(scope="module")
def seeded(served_app: ServedApp) -> str:
    token = served_app.create_user(USER, PASSWORD)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    # No tokens used reported: "not known", a short cell beside a long reason.
    decisions = [
        {
            "id": f"columns-{n}",
            "at": (now - dt.timedelta(minutes=n + 1)).isoformat(),
            "state": "winding",
            "action": "clamp",
            "session_id": f"chat-{n}",
            "reason": REASON,
            "budget_before": 4000,
            "budget_after": 1662,
        }
        for n in range(3)
    ]
    answer = api_post(served_app, token, "/api/v1/decisions", {"decisions": decisions})
    assert answer["stored"] == len(decisions)
    return token


def _activity(browser: Any, app: ServedApp, *, width: int, lang: str) -> tuple[Any, Watched]:
    context = support.open_context(
        browser,
        width=width,
        height=900,
        locale="zh-CN" if lang == "zh" else "en-US",
        language=(app, "zh-hans" if lang == "zh" else "en"),
        is_mobile=width < 600,
        has_touch=width < 600,
    )
    watched = Watched(context.new_page())
    support.sign_in(watched.page, app, USER, PASSWORD)
    watched.page.goto(f"{app.base_url}/activity/")
    watched.page.wait_for_selector("#decision-table")
    return context, watched


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_headings_and_short_cells_keep_to_one_line_on_a_desktop(
    browser: Any, served_app: ServedApp, lang: str
) -> None:
    context, watched = _activity(browser, served_app, width=1280, lang=lang)
    try:
        page = watched.page
        assert page.evaluate(WRAPPED, "#decision-table th") == []
        assert page.evaluate(WRAPPED, SHORT_CELLS) == []
        # The reason is what takes the slack: it wraps, nothing spills.
        assert page.evaluate(WRAPPED, "#decision-table td.reason") != []
        assert_fits(page, inside="#decision-table")
        watched.assert_clean()
    finally:
        context.close()


@pytest.mark.usefixtures("seeded")
def test_on_a_phone_each_decision_is_a_block_that_fits(browser: Any, served_app: ServedApp) -> None:
    context, watched = _activity(browser, served_app, width=390, lang="zh")
    try:
        page = watched.page
        assert not page.locator("#decision-table thead").is_visible()
        cell = page.locator("#decision-table tbody tr:first-child td.reason")
        assert cell.evaluate("el => getComputedStyle(el).display") == "block"
        assert_fits(page, inside="#decision-table")
        watched.assert_clean()
    finally:
        context.close()
