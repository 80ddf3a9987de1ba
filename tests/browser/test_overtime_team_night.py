"""QA "look" finding 1 in real Chromium: a member whose team (sleepy 21:00,
asleep 01:00) lets no member's overtime lift its night. Before 21:00 the
heads-up names the team's boundary and offers no snooze; after an overtime at
21:10 the Now card and the capsule say what ``GET /api/v1/state`` says
(getting sleepy), not "On overtime" / "works normally". Desktop in English,
a phone in Chinese; screenshots go to the artifacts folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api, api_post, assert_fits, wait_until

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
TEAM = "ot-night"
ADMIN = "ot-night-boss"
MEMBER = "ot-night-alice"
CAPSULE_LABEL = (
    "() => { const h = document.querySelector('curfew-capsule');"
    " const r = h && h.shadowRoot; if (!r || h.dataset.link !== 'live') return null;"
    " return [h.dataset.state, r.querySelector('.label').textContent,"
    " r.querySelector('.detail').textContent]; }"
)


@pytest.fixture(scope="module")
def member(served_app: ServedApp) -> str:
    return support.served_team_member(
        served_app,
        team=TEAM,
        admin=ADMIN,
        member=MEMBER,
        password=PASSWORD,
        night={
            "curfew_start": "21:00",
            "lights_out": "01:00",
            "wake_up": "10:00",
            "anchors": [["21:00", 2048], ["01:00", 64]],
            "member_overtime_minutes": 0,
        },
    )


def _open(browser: Any, app: ServedApp, *, lang: str) -> Iterator[Watched]:
    phone = lang == "zh"
    context = support.open_context(
        browser,
        width=390 if phone else 1280,
        height=844 if phone else 900,
        locale="zh-CN" if phone else "en-US",
        language=(app, "zh-hans" if phone else "en"),
        **({"has_touch": True, "is_mobile": True} if phone else {}),
    )
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_snooze_for_the_teams_boundary_and_overtime_told_truly(
    browser: Any, served_app: ServedApp, member: str, artifacts_dir: str, lang: str
) -> None:
    api_post(served_app, member, "/api/v1/overrides", {"auto": True})
    api_post(
        served_app, member, "/api/v1/overrides", {"debug": "2026-12-07 20:55", "duration": "1h"}
    )
    for watched in _open(browser, served_app, lang=lang):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        page.wait_for_selector("#heads-up")
        # The heads-up tells the team's boundary; its snooze could not move it.
        assert page.locator("#heads-up-snooze").count() == 0
        page.screenshot(path=str(Path(artifacts_dir) / f"overtime-team-headsup-{lang}.png"))

        # An overtime taken anyway (the overview's own form, or the API) at 21:10.
        api_post(
            served_app, member, "/api/v1/overrides", {"debug": "2026-12-07 21:10", "duration": "1h"}
        )
        api_post(served_app, member, "/api/v1/overrides", {"overtime": "30m"})
        state = api(served_app, member, "GET", "/api/v1/state")
        assert (state["state"], state["override"]) == ("winding", "overtime")
        page.goto(f"{served_app.base_url}/")
        assert page.get_attribute("#now-state", "data-state") == "winding"
        headline = page.inner_text("#now-headline")
        assert "works normally" not in headline
        assert "不论作息表如何" not in headline
        assert_fits(page)
        page.screenshot(
            path=str(Path(artifacts_dir) / f"overtime-team-overview-{lang}.png"), full_page=True
        )
        # The capsule (on Integrations) says the engine's state, the overtime beside it.
        page.goto(f"{served_app.base_url}/integrations/")
        wait_until(page, f"({CAPSULE_LABEL})() !== null")
        capsule_state, label, detail = page.evaluate(CAPSULE_LABEL)
        assert capsule_state == "winding"
        assert label not in ("On overtime", "加班中")
        if lang == "en":
            assert label.startswith("Getting sleepy")
            assert "overtime does not lift your team's night" in detail
        else:
            assert label.startswith("犯困中")
        page.locator("curfew-capsule").first.scroll_into_view_if_needed()
        page.screenshot(path=str(Path(artifacts_dir) / f"overtime-team-capsule-{lang}.png"))
        watched.assert_clean()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_members_schedule_page_draws_what_gateways_get(
    browser: Any, served_app: ServedApp, member: str, artifacts_dir: str, lang: str
) -> None:
    """Finding 2: at the team's 21:30 the band's now cell is the engine's
    state and the chart draws the team's line beside the member's own."""
    api_post(served_app, member, "/api/v1/overrides", {"auto": True})
    api_post(
        served_app, member, "/api/v1/overrides", {"debug": "2026-12-07 21:30", "duration": "1h"}
    )
    state = api(served_app, member, "GET", "/api/v1/state")
    for watched in _open(browser, served_app, lang=lang):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        page.goto(f"{served_app.base_url}/schedule/")
        wait_until(page, "Number(document.querySelector('#curve-chart')?.dataset.drawn || 0) > 0")
        assert page.get_attribute("#band .cell.is-now", "data-state") == state["state"]
        metas = page.evaluate(
            "() => document.getElementById('curve-chart').data.map(t => t.meta || '')"
        )
        assert "with-team" in metas
        assert_fits(page)
        page.locator("#curve-panel").scroll_into_view_if_needed()
        page.screenshot(
            path=str(Path(artifacts_dir) / f"member-schedule-{lang}.png"), full_page=True
        )
        watched.assert_clean()


def test_the_capsule_says_peak_hours_where_the_team_keeps_its_peak(
    browser: Any, served_app: ServedApp, member: str
) -> None:
    """An overtime at the team's peak hours (14:30 on a Monday) is held as at
    its night; the capsule says what holds it, the peak hours, as the
    Overview's headline does, not "your team's night"."""
    api_post(served_app, member, "/api/v1/overrides", {"auto": True})
    api_post(
        served_app, member, "/api/v1/overrides", {"debug": "2026-12-07 14:30", "duration": "1h"}
    )
    api_post(served_app, member, "/api/v1/overrides", {"overtime": "30m"})
    state = api(served_app, member, "GET", "/api/v1/state")
    assert (state["state"], state["override"]) == ("off-duty", "overtime")
    for watched in _open(browser, served_app, lang="en"):
        page = support.sign_in(watched.page, served_app, MEMBER, PASSWORD)
        page.goto(f"{served_app.base_url}/integrations/")
        wait_until(page, f"({CAPSULE_LABEL})() !== null")
        capsule_state, label, detail = page.evaluate(CAPSULE_LABEL)
        assert capsule_state == "off-duty"
        assert label.startswith("Off for peak hours")
        assert "overtime does not lift your team's peak hours" in detail
        assert "night" not in detail
        watched.assert_clean()
    api_post(served_app, member, "/api/v1/overrides", {"auto": True})
