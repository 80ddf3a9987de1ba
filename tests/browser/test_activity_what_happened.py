"""The Activity page's "What happened" cell keeps each of its words whole,
in real headless Chromium, in Chinese as in English, on a desktop and a phone.

Chinese may break between any two characters, so beside a wide column (a
long session id, a session's purpose) the table squeezed "What happened" to
a few characters and split its words: "高峰休息中 · 未请" / "求即作答",
"睡着了 · 未请求即" / "作答". A cell now wraps only between its words (the
state, the "·", what the curfew did, the tags), as English does.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api_post, assert_fits

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
USER_LONG = "web-what-happened-long"
USER_PURPOSE = "web-what-happened-purpose"
#: A session id far wider than its column can be, as a gateway may send one.
LONG_SESSION = "agent-run-" + "5f0c2e9a7b1d4c3e" * 5
REASON = "winding 21% · budget 1662 · team: winding 21% · team: budget 1662"
#: The longest words the cell says, with its tags.
KINDS = [
    ("on-duty", "pass", False, False),
    ("winding", "clamp", False, False),
    ("off-duty", "short-circuit", False, False),
    ("lights-out", "short-circuit", True, False),
    ("winding", "clamp", False, True),
    ("off-duty", "short-circuit", True, True),
]

#: Each cell's words (its own text split at its spaces, and each tag) that
#: lay out on more than one line.
SPLIT_WORDS = """(sel) => {
  const split = [];
  const lines = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, end);
    return new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
      .map(r => Math.round(r.top))).size;
  };
  for (const cell of document.querySelectorAll(sel)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const text = node.data;
      const words = /\\S+/g;
      let m;
      while ((m = words.exec(text))) {
        if (lines(node, m.index, m.index + m[0].length) > 1) split.push(m[0]);
      }
    }
  }
  return split;
}"""
CELLS = "#decision-table td:nth-child(3)"


def _seed(app: ServedApp, user: str, *, session: str, purpose: str | None) -> None:
    token = app.create_user(user, PASSWORD)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    decisions = []
    for n, (state, action, exempt, dry_run) in enumerate(KINDS):
        decision: dict[str, Any] = {
            "id": f"{user}-{n}",
            "at": (now - dt.timedelta(minutes=n + 1)).isoformat(),
            "state": state,
            "action": action,
            "exempt": exempt,
            "dry_run": dry_run,
            "session_id": session,
            "reason": REASON,
            "budget_before": 4000,
            "budget_after": 1662,
        }
        if purpose is not None:
            decision["purpose"] = purpose
        decisions.append(decision)
    answer = api_post(app, token, "/api/v1/decisions", {"decisions": decisions})
    assert answer["stored"] == len(decisions)


@pytest.fixture(scope="module")
def seeded(served_app: ServedApp) -> None:
    _seed(served_app, USER_LONG, session=LONG_SESSION, purpose=None)
    _seed(served_app, USER_PURPOSE, session="chat-a", purpose="title-generation")


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(
    ("lang", "width", "user"),
    [
        ("zh", 1280, USER_LONG),
        ("zh", 1280, USER_PURPOSE),
        ("zh", 390, USER_LONG),
        ("en", 1280, USER_LONG),
        ("en", 390, USER_PURPOSE),
    ],
    ids=["zh-1280-long-session", "zh-1280-purpose", "zh-390", "en-1280", "en-390"],
)
def test_what_happened_keeps_its_words_whole(
    browser: Any, served_app: ServedApp, lang: str, width: int, user: str
) -> None:
    context = support.open_context(
        browser,
        width=width,
        height=900,
        locale="zh-CN" if lang == "zh" else "en-US",
        language=(served_app, "zh-hans" if lang == "zh" else "en"),
        is_mobile=width < 600,
        has_touch=width < 600,
    )
    try:
        watched = Watched(context.new_page())
        page = watched.page
        support.sign_in(page, served_app, user, PASSWORD)
        page.goto(f"{served_app.base_url}/activity/")
        page.wait_for_selector("#decision-table")
        assert page.locator(CELLS).count() == len(KINDS)
        assert page.evaluate(SPLIT_WORDS, CELLS) == []
        assert_fits(page, inside="#decision-table")
        watched.assert_clean()
    finally:
        context.close()
