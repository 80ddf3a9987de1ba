"""What a person sees, in real headless Chromium, that no other suite measures.

- On the capsule's own page (``/embed/``), the pretend banner is the card-like
  strip curfew.css draws there (rounded, a gap before the page's link), not the
  settings pages' full-width bar butting against the text below it.
- On the overview, each step's time ("星期日 03:00" on the Chinese page) stays
  on one line, on a desktop and on a phone, and the words of every step start
  at the same place.
- On the Team page of an admin, each count in the savings table sits under
  its heading (the key table's right-aligned last cell, for Revoke, pushed
  the last count to the far edge, away from its left-aligned heading).
- On the Activity page on a desktop, the recent changes' "Who" column and the
  headings keep a name and a word whole beside a long change.

Its own account, so its pretend never leaks into another module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import (
    Watched,
    api,
    api_post,
    assert_fits,
    open_context,
    served_team_member,
    sign_in,
    wait_until,
)

pytestmark = pytest.mark.browser

USER = "web-browser-look"
PASSWORD = "correct horse battery"

#: How many lines each step's time takes (its text's distinct line boxes).
TIME_LINES = """() => Array.from(document.querySelectorAll('#now-steps .step-time')).map(el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
})"""

#: Where each step's words start, from the left of the page.
WORDS_LEFT = """() => Array.from(document.querySelectorAll('#now-steps .step-words'))
  .map(el => Math.round(el.getBoundingClientRect().left))"""


@pytest.fixture(scope="module")
def token(served_app: ServedApp) -> str:
    return served_app.create_user(USER, PASSWORD)


@pytest.fixture(params=[(1280, "light"), (390, "dark")], ids=["desktop-light", "phone-dark"])
def watched(request: Any, browser: Any, served_app: ServedApp) -> Iterator[Watched]:
    width, scheme = request.param
    context = open_context(
        browser, width=width, scheme=scheme, locale="zh-CN", language=(served_app, "zh-hans")
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def test_the_embed_pages_pretend_banner_is_a_strip_with_room_below(
    watched: Watched, served_app: ServedApp, token: str
) -> None:
    page = watched.page
    sign_in(page, served_app, USER, PASSWORD)
    api_post(
        served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "1h"}
    )
    try:
        page.goto(f"{served_app.base_url}/embed/")
        banner = page.locator("#pretend-banner")
        assert banner.is_visible()
        radius, gap = page.evaluate(
            """() => {
              const banner = document.getElementById('pretend-banner');
              const link = document.querySelector('main a');
              return [getComputedStyle(banner).borderTopLeftRadius,
                      link.getBoundingClientRect().top - banner.getBoundingClientRect().bottom];
            }"""
        )
        assert radius != "0px"
        assert gap >= 8, f"the banner touches the link below it ({gap}px apart)"
        assert_fits(page)
    finally:
        api_post(served_app, token, "/api/v1/overrides", {"auto": True})
    watched.assert_clean()


def test_each_steps_time_is_one_line_in_chinese(
    watched: Watched, served_app: ServedApp, token: str
) -> None:
    page = watched.page
    sign_in(page, served_app, USER, PASSWORD)
    # 10:00 on a workday: the steps reach tomorrow, so times carry a weekday (星期四 03:00).
    api_post(
        served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 10:00", "duration": "1h"}
    )
    try:
        page.goto(f"{served_app.base_url}/")
        times = page.locator("#now-steps .step-time").all_inner_texts()
        assert any("星期" in time for time in times), times
        assert page.evaluate(TIME_LINES) == [1] * len(times), times
        assert len(set(page.evaluate(WORDS_LEFT))) == 1
        assert_fits(page, inside="#now")
    finally:
        api_post(served_app, token, "/api/v1/overrides", {"auto": True})
    watched.assert_clean()


#: Per column of the savings table after the member's: whether each count's
#: text lines up with its heading's, on the left or on the right.
COUNTS_UNDER_HEADINGS = """() => {
  const text = el => { const r = document.createRange(); r.selectNodeContents(el);
                       return r.getBoundingClientRect(); };
  const heads = Array.from(document.querySelectorAll('#savings-table thead th'));
  return Array.from(document.querySelectorAll('#savings-table tbody tr')).flatMap(row =>
    Array.from(row.querySelectorAll('td')).map((cell, i) => {
      const h = text(heads[i + 1]), c = text(cell);
      return Math.abs(h.left - c.left) <= 2 || Math.abs(h.right - c.right) <= 2;
    }));
}"""


@pytest.fixture(scope="module")
def team_member(served_app: ServedApp) -> str:
    """A member's key, its team's admin ``look-boss``; one decision of the
    member's, turned away at peak hours, so the savings have a row."""
    member = served_team_member(
        served_app,
        team="look-owls",
        admin="look-boss",
        member="look-alice",
        password=PASSWORD,
        night={"curfew_start": "21:00", "lights_out": "22:00", "wake_up": "09:00"},
    )
    api_post(
        served_app, member, "/api/v1/overrides", {"debug": "2026-09-30 10:00", "duration": "1h"}
    )
    api_post(served_app, member, "/api/v1/verdict", {"session_id": "look", "max_tokens": 512})
    return member


def test_the_savings_counts_sit_under_their_headings(
    watched: Watched, served_app: ServedApp, team_member: str
) -> None:
    page = watched.page
    sign_in(page, served_app, "look-boss", PASSWORD)
    page.goto(f"{served_app.base_url}/team/")
    deadline = 20
    while page.locator("#savings-table").count() == 0 and deadline:
        page.wait_for_timeout(1000)
        page.reload()
        deadline -= 1
    wait_until(page, "document.querySelectorAll('#savings-table tbody td').length > 0")
    placed = page.evaluate(COUNTS_UNDER_HEADINGS)
    assert placed
    assert all(placed), placed
    watched.assert_clean()


#: Lines of text in each "Who" cell and in each heading of the recent changes.
AUDIT_LINES = """() => {
  const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
    return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size; };
  const table = document.querySelector('#audit .audit-table');
  return [Array.from(table.querySelectorAll('thead th')).map(lines),
          Array.from(table.querySelectorAll('tbody td:nth-child(3)')).map(lines)];
}"""


def test_who_made_a_change_is_not_cut_mid_name(browser: Any, served_app: ServedApp) -> None:
    """Beside a long "what", the desktop's recent changes cut a name ("alic/e")
    and the Chinese heading 操作者 in two: the narrow columns shrank to a letter."""
    key = served_app.create_user("look-audit", PASSWORD)
    api(served_app, key, "PATCH", "/api/v1/schedule", {"tired_persona": "很困了。" * 60})
    context = open_context(browser, width=1280, locale="zh-CN", language=(served_app, "zh-hans"))
    try:
        watched = Watched(context.new_page())
        sign_in(watched.page, served_app, "look-audit", PASSWORD)
        watched.page.goto(f"{served_app.base_url}/activity/")
        headings, who = watched.page.evaluate(AUDIT_LINES)
        assert who, "no recent changes"
        assert headings == [1] * len(headings), headings
        assert who == [1] * len(who), who
        watched.assert_clean()
    finally:
        context.close()
