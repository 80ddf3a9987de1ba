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
USER_LONG = "web-activity-columns-long"
PASSWORD = "correct horse battery"
#: A team member's reason: their own side and the team's, long enough to wrap.
REASON = "winding 21% · budget 1662 · team: winding 21% · team: budget 1662"

#: A session id far wider than its column can be.
LONG_SESSION = "agent-run-" + "5f0c2e9a7b1d4c3e" * 5

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
            "session_id": f"chat-{'abc'[n]}",
            "reason": REASON,
            "budget_before": 4000,
            "budget_after": 1662,
        }
        for n in range(3)
    ]
    answer = api_post(served_app, token, "/api/v1/decisions", {"decisions": decisions})
    assert answer["stored"] == len(decisions)
    return token


@pytest.fixture(scope="module")
def seeded_long(served_app: ServedApp) -> str:
    """Another person, whose sessions include one with a long id (beside the
    short ones its width would otherwise hide)."""
    token = served_app.create_user(USER_LONG, PASSWORD)
    at = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=1)
    decisions = [
        {
            "id": f"columns-long-{n}",
            "at": (at - dt.timedelta(minutes=n)).isoformat(),
            "state": "winding",
            "action": "clamp",
            "session_id": session,
            "reason": REASON,
            "budget_before": 4000,
            "budget_after": 1662,
        }
        for n, session in enumerate(["chat-a", LONG_SESSION])
    ]
    answer = api_post(served_app, token, "/api/v1/decisions", {"decisions": decisions})
    assert answer["stored"] == len(decisions)
    return token


def _activity(
    browser: Any, app: ServedApp, *, width: int, lang: str, user: str = USER
) -> tuple[Any, Watched]:
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
    support.sign_in(watched.page, app, user, PASSWORD)
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
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_short_session_id_keeps_whole(browser: Any, served_app: ServedApp, lang: str) -> None:
    # The session column is as narrow as its heading: "chat-a" broke at its
    # hyphen ("chat-" / "a") in zh.
    context, watched = _activity(browser, served_app, width=1280, lang=lang)
    try:
        page = watched.page
        cells = "#decision-table td:nth-child(2)"
        texts = [t.strip() for t in page.locator(cells).all_inner_texts()]
        assert texts == ["chat-a", "chat-b", "chat-c"]
        assert page.evaluate(WRAPPED, cells) == []
        assert_fits(page, inside="#decision-table")
        watched.assert_clean()
    finally:
        context.close()


@pytest.mark.usefixtures("seeded_long")
@pytest.mark.parametrize(("lang", "width"), [("en", 1280), ("zh", 1280), ("zh", 390)])
def test_a_long_session_id_breaks_inside_the_card(
    browser: Any, served_app: ServedApp, lang: str, width: int
) -> None:
    context, watched = _activity(browser, served_app, width=width, lang=lang, user=USER_LONG)
    try:
        page = watched.page
        wrapped = page.evaluate(WRAPPED, "#decision-table td:nth-child(2)")
        assert [t for t in wrapped if t.startswith("agent-run-")] != []
        assert [t for t in wrapped if t.startswith("chat-")] == []
        assert_fits(page, inside="#decision-table")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
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
