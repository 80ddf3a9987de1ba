"""The Team page in real headless Chromium: an admin's page on a desktop in
English (members live: a member's change is pushed onto the open page with no
reload; a role changed in place), and a member's and an admin's page on a
phone in Chinese, dark (the policy in words, nothing scrolls sideways). No
console error or CSP violation along the way. Screenshots go to the artifacts
folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import (
    Watched,
    api_post,
    assert_fits,
    open_context,
    team_schedule_command,
    wait_until,
)

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
TEAM = "tp-owls"
ADMIN = "tp-admin"
MEMBERS = ("tp-bob", "tp-cat", "tp-dan")


@pytest.fixture(scope="module")
def team(served_app: ServedApp) -> dict[str, str]:
    """The team: its admin and three members, each with their own API token;
    the team's curfew starts at 21:00, before the members' own 23:00."""
    # As the manual says a team is made, from a terminal (its commands in one process).
    tokens = served_app.create_users(
        ADMIN,
        *MEMBERS,
        password=PASSWORD,
        then=(
            ("curfew", "team", "create", TEAM, "--admin", ADMIN),
            *(("curfew", "team", "add", TEAM, name) for name in MEMBERS),
            team_schedule_command(TEAM, {"curfew_start": "21:00"}),
        ),
    )
    return tokens


def _open(browser: Any, viewport: dict[str, int], **options: Any) -> Iterator[Watched]:
    context = open_context(browser, width=viewport["width"], height=viewport["height"], **options)
    try:
        yield Watched(context.new_page())
    finally:
        context.close()


@pytest.fixture
def desktop(browser: Any) -> Iterator[Watched]:
    yield from _open(browser, DESKTOP)


@pytest.fixture
def phone_zh(browser: Any, served_app: ServedApp) -> Iterator[Watched]:
    yield from _open(
        browser,
        PHONE,
        scheme="dark",
        locale="zh-CN",
        language=(served_app, "zh-hans"),
        has_touch=True,
        is_mobile=True,
    )


def _sign_in(watched: Watched, app: ServedApp, name: str) -> Any:
    return support.sign_in(
        watched.page,
        app,
        name,
        PASSWORD,
        start="/login/?next=/team/",
        arrive="/team/",
        landing="#policy",
    )


def _state_of(page: Any, name: str) -> str:
    """The state a member's row shows (its data-state)."""
    return str(page.get_attribute(f'#member-table tr[data-member="{name}"]', "data-state"))


def test_the_admins_team_page_on_a_desktop_is_live(
    desktop: Watched, served_app: ServedApp, team: dict[str, str], artifacts_dir: str
) -> None:
    pushed: list[str] = []

    def _watch(socket: Any) -> None:
        if "/ws/team/" in socket.url:
            socket.on("framereceived", lambda payload: pushed.append(str(payload)))

    desktop.page.on("websocket", _watch)
    page = _sign_in(desktop, served_app, ADMIN)
    assert page.get_attribute("#team-title", "data-team") == TEAM
    rows = page.locator("#member-table tbody tr[data-member]")
    assert rows.count() == 1 + len(MEMBERS)
    for card in ("#policy", "#rules", "#invites", "#members", "#savings", "#audit"):
        assert page.locator(card).is_visible(), card
    assert_fits(page)
    page.screenshot(path=os.path.join(artifacts_dir, "team-desktop-en.png"), full_page=True)

    # The socket is open; a member's own change elsewhere (their API key) is
    # pushed onto this page, which re-reads its card in place, with no reload.
    wait_until(page, "document.querySelector('[data-live-status]').dataset.live === 'on'")
    # Control: nothing changed, nothing is pushed (the card's own boundary timer
    # may still re-read it: a winding member's budget steps every few minutes).
    page.wait_for_timeout(1000)
    assert pushed == []
    page.evaluate("window.__stayed = true; document.getElementById('members').__old = true")
    api_post(served_app, team["tp-bob"], "/api/v1/overrides", {"off": True})
    wait_until(page, "document.getElementById('members').__old !== true")
    assert pushed, "the change came by the socket"
    # Forced off is harsher than any state but lights-out: what the row now says.
    assert _state_of(page, "tp-bob") in ("off-duty", "lights-out")
    api_post(served_app, team["tp-bob"], "/api/v1/overrides", {"auto": True})

    # A role changed in place (htmx): the card alone is swapped.
    page.select_option("#member-table tr[data-member='tp-dan'] select", "admin")
    page.click("#member-table tr[data-member='tp-dan'] .team-role-form button")
    dan = "document.querySelector(\"#member-table tr[data-member='tp-dan'] select\")"
    wait_until(page, f"{dan}.value === 'admin' && !!document.querySelector('#toast .toast')")
    assert page.evaluate("window.__stayed === true"), "the page reloaded"

    # The team's schedule: the Schedule page's own form, previewing through the team's door.
    page.click("#edit-team-schedule")
    page.wait_for_selector("#schedule-form")
    page.wait_for_load_state("load")  # the page's deferred scripts (chart, rows) have run
    assert page.inner_text("main h1") == "Team schedule"
    assert page.input_value("#f-curfew_start") == "21:00"
    with page.expect_response(lambda r: r.url.endswith("/team/schedule/preview/")) as preview:
        page.fill("#f-curfew_start", "20:30")
    assert preview.value.status == 200
    assert_fits(page)
    page.screenshot(
        path=os.path.join(artifacts_dir, "team-schedule-desktop-en.png"), full_page=True
    )
    desktop.assert_clean()


def test_the_team_page_on_a_phone_in_chinese(
    phone_zh: Watched, served_app: ServedApp, team: dict[str, str], artifacts_dir: str
) -> None:
    page = _sign_in(phone_zh, served_app, "tp-cat")
    # A member: the policy in words, in Chinese; no admin controls.
    assert page.locator("#policy-sets li").count() >= 2
    assert "团队政策" in page.inner_text("#policy")
    # The team's 21:00 is earlier than tp-cat's own 23:00: named, in Chinese.
    assert "21:00" in page.inner_text("#policy-overrides")
    assert page.locator("#member-table").count() == 0
    assert_fits(page, inside="main")
    page.screenshot(path=os.path.join(artifacts_dir, "team-phone-zh-member.png"), full_page=True)
    # The admin's page on the same phone: the members' table scrolls in its card.
    page.click("#sign-out")
    page = _sign_in(phone_zh, served_app, ADMIN)
    assert page.locator("#member-table").is_visible()
    assert page.locator("#member-table tr[data-member='tp-dan'] select").is_visible()
    assert_fits(page)
    page.screenshot(path=os.path.join(artifacts_dir, "team-phone-zh-admin.png"), full_page=True)
    page.locator("#members").screenshot(
        path=os.path.join(artifacts_dir, "team-phone-zh-members.png")
    )
    phone_zh.assert_clean()


def test_the_admins_team_page_on_a_phone_in_english_does_not_scroll_sideways(
    browser: Any, served_app: ServedApp, team: dict[str, str], artifacts_dir: str
) -> None:
    """QA (look, finding 3): on a 390 px phone the members' table is wider
    than the screen; it must scroll inside its own box, and nothing in it
    (the "Remove" column's screen-reader name, positioned absolutely) may
    widen the page. A member pretending makes the rows long, as they were."""
    api_post(served_app, team["tp-bob"], "/api/v1/overrides", {"debug": "21:30", "duration": "1h"})
    for watched in _open(browser, PHONE, locale="en-US", language=(served_app, "en")):
        page = _sign_in(watched, served_app, ADMIN)
        assert page.locator("#member-table").is_visible()
        box = page.evaluate(
            "() => { const w = document.querySelector('.team-table-wrap');"
            " return [w.scrollWidth, w.clientWidth]; }"
        )
        assert box[0] > box[1], "the table is meant to be wider than the phone here"
        assert_fits(page)
        page.screenshot(path=os.path.join(artifacts_dir, "team-phone-en-admin.png"), full_page=True)
        watched.assert_clean()


def test_a_members_leave_button_lines_up_with_the_card(
    desktop: Watched, served_app: ServedApp, team: dict[str, str]
) -> None:
    """QA (look, finding 10): a member's "Leave the team" was indented by the
    quiet button's padding; its words start where the card's text does."""
    page = _sign_in(desktop, served_app, "tp-bob")
    starts = page.evaluate(
        "() => { const b = document.getElementById('leave-team');"
        " const p = document.querySelector('#policy p');"
        " const pad = parseFloat(getComputedStyle(b).paddingLeft);"
        " return [b.getBoundingClientRect().left + pad, p.getBoundingClientRect().left]; }"
    )
    assert abs(starts[0] - starts[1]) <= 1, starts
    desktop.assert_clean()
