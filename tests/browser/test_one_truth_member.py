"""Issue 39 in real Chromium: a team member at the team's night. The team is
sleepy at 21:00 and asleep at 22:00 (wake 09:00); the member's own night is
23:00 / 03:00 (wake 08:00 on weekdays). Pretending, the member's overview
(desktop in English, a phone in Chinese) says what ``GET /api/v1/state``
says: the badge is its state, the next-change line and the heads-up are the
team's boundary, and every band cell is its ``day``. No console error or
CSP violation along the way; screenshots go to the artifacts folder.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api, api_post, assert_fits

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
TEAM = "ot-owls"
ADMIN = "ot-boss"
MEMBER = "ot-alice"
SHANGHAI = dt.timezone(dt.timedelta(hours=8))

#: Cell states of the day band, from midnight.
BAND_CELLS = (
    "() => Array.from(document.querySelectorAll("
    "'#band .band-row:not(.band-axis-row) .cell')).map(c => c.dataset.state)"
)


@pytest.fixture(scope="module")
def member(served_app: ServedApp) -> str:
    """The member's own API key; the team made as the manual says, from a terminal."""
    token = support.served_team_member(
        served_app,
        team=TEAM,
        admin=ADMIN,
        member=MEMBER,
        password=PASSWORD,
        night={
            "curfew_start": "21:00",
            "lights_out": "22:00",
            "wake_up": "09:00",
            "anchors": [["21:00", 1024], ["22:00", 64]],
        },
    )
    weekdays = {day: {"wake_up": "08:00"} for day in ("mon", "tue", "wed", "thu", "fri")}
    api(served_app, token, "PATCH", "/api/v1/schedule", {"weekdays": weekdays})
    return token


def _pretend(app: ServedApp, token: str, moment: str) -> None:
    api_post(app, token, "/api/v1/overrides", {"debug": moment, "duration": "1h"})


def _cells(day: list[dict[str, Any]]) -> list[str]:
    def minutes(text: str) -> int:
        hours, mins = text.split(":")
        return int(hours) * 60 + int(mins)

    cells: list[str] = []
    for index in range(96):
        middle = index * 15 + 7.5
        for segment in day:
            if minutes(segment["start"]) <= middle < minutes(segment["end"]):
                cells.append(segment["state"])
                break
    return cells


def _open(browser: Any, app: ServedApp, *, lang: str) -> Iterator[Watched]:
    phone = lang == "zh"
    context = support.open_context(
        browser,
        width=390 if phone else 1280,
        height=844 if phone else 900,
        scheme="dark" if phone else "light",
        locale="zh-CN" if phone else "en-US",
        language=(app, "zh-hans" if phone else "en"),
        **({"has_touch": True, "is_mobile": True} if phone else {}),
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


def _agrees_with_the_state(page: Any, app: ServedApp, token: str) -> dict[str, Any]:
    """Badge, band and next line against ``GET /api/v1/state``; the state."""
    state: dict[str, Any] = api(app, token, "GET", "/api/v1/state")
    assert page.get_attribute("#now-state", "data-state") == state["state"]
    cells = page.evaluate(BAND_CELLS)
    assert len(cells) == 96
    assert cells == _cells(state["day"])
    # The team's night is in the band: sleepy 21:00, asleep from 22:00.
    assert cells[21 * 4 : 22 * 4] == ["winding"] * 4
    assert cells[22 * 4 :] == ["lights-out"] * 8
    facts = page.evaluate("JSON.parse(document.getElementById('heads-up-facts').textContent)")
    line_at = dt.datetime.fromisoformat(str(page.get_attribute("#now-next", "data-at")))
    assert dt.datetime.fromisoformat(facts["next"]["at"]) == line_at
    return state


def test_a_member_before_the_teams_lights_out_on_a_desktop(
    browser: Any, served_app: ServedApp, member: str, artifacts_dir: str
) -> None:
    _pretend(served_app, member, "2026-12-02 21:55")
    for watched in _open(browser, served_app, lang="en"):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        state = _agrees_with_the_state(page, served_app, member)
        assert state["state"] == "winding"
        # The next change is the team's lights-out at 22:00, not the member's own 23:00.
        assert page.inner_text("#now-next").startswith("Asleep in 5 min (22:00).")
        assert page.inner_text("#now-next-side") == "by your team's schedule"
        line_at = dt.datetime.fromisoformat(str(page.get_attribute("#now-next", "data-at")))
        assert line_at == dt.datetime(2026, 12, 2, 22, 0, tzinfo=SHANGHAI)
        # The heads-up is due at once (inside its 10 minutes), for the team's boundary.
        page.wait_for_selector("#heads-up")
        words = page.inner_text("#heads-up .heads-up-words")
        assert words.startswith("Your AI falls asleep in ")
        assert words.endswith(" min (22:00).")
        assert_fits(page)
        page.screenshot(path=str(Path(artifacts_dir) / "one-truth-member-en.png"), full_page=True)
        watched.assert_clean()


def test_a_member_at_the_teams_lights_out_on_a_phone_in_chinese(
    browser: Any, served_app: ServedApp, member: str, artifacts_dir: str
) -> None:
    _pretend(served_app, member, "2026-12-02 22:30")
    for watched in _open(browser, served_app, lang="zh"):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        state = _agrees_with_the_state(page, served_app, member)
        assert state["state"] == "lights-out"
        # Asleep by the team's night; next, the team's 09:00 wake-up into peak hours.
        line_at = dt.datetime.fromisoformat(str(page.get_attribute("#now-next", "data-at")))
        assert line_at == dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
        steps = page.evaluate(
            "Array.from(document.querySelectorAll('#now-steps .step')).map(s => s.dataset.state)"
        )
        assert steps[:2] == ["lights-out", "off-duty"]
        assert_fits(page)
        page.screenshot(path=str(Path(artifacts_dir) / "one-truth-member-zh.png"), full_page=True)
        watched.assert_clean()


def test_a_member_at_the_teams_lights_out_on_a_desktop_in_english(
    browser: Any, served_app: ServedApp, member: str, artifacts_dir: str
) -> None:
    """The team's lights-out as an English member sees it: asleep by the
    team's night, the team's wake-up next, and the reply that says why in
    the member's language, not the team's seed words."""
    _pretend(served_app, member, "2026-12-02 22:30")
    for watched in _open(browser, served_app, lang="en"):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        # The member chooses English on the Account page, as a person would
        # (their own replies, made from a terminal, are the terse Chinese seeds).
        page.goto(f"{served_app.base_url}/account/")
        page.select_option("#language select[name=language]", "en")
        page.click("#language button[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{served_app.base_url}/")
        state = _agrees_with_the_state(page, served_app, member)
        assert state["state"] == "lights-out"
        assert state["reply"] == "Curfew: lights out until 09:00."
        line_at = dt.datetime.fromisoformat(str(page.get_attribute("#now-next", "data-at")))
        assert line_at == dt.datetime(2026, 12, 3, 9, 0, tzinfo=SHANGHAI)
        assert "明天再说" not in page.inner_text("body")
        assert_fits(page)
        page.screenshot(
            path=str(Path(artifacts_dir) / "one-truth-member-en-asleep.png"), full_page=True
        )
        watched.assert_clean()
