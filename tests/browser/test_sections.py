"""The settings site in sections, in real headless Chromium (issue 12, "Proof").

Each section (Overview, Schedule, Replies & voice, Integrations, Activity,
Account) at desktop 1280×800 and phone 390×844, light and dark, English and
Chinese: no console error, no CSP violation, no sideways scroll. Then the
flows: the first screen names the next change and its time in words; the save
bar appears only with unsaved changes and counts them, a save keeps the place
and shows a toast; the leave-page warning guards unsaved edits only; revoking a
key asks first; without script a section saves by a plain POST and redirect;
the page-only preview changes the card but never a verdict seen through the
API, and writes no override.

Screenshots of every section (desktop light English, phone dark Chinese) go
to ``docs/screenshots/`` for the README; the rest to the artifacts folder.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api, assert_fits
from tests.browser.test_settings_page import wait_drawn, wait_until

pytestmark = pytest.mark.browser

USER = "web-sections"
PASSWORD = "correct horse battery"
#: The README's screenshots are refreshed on purpose (``make screenshots``), not
#: by every run: their content follows the clock, and a test run should leave
#: the checkout as it found it.
DOCS_SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("CURFEW_DOCS_SCREENSHOTS") == "1"
    else None
)
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
#: Each section: its path and an element only it has.
SECTIONS = {
    "overview": ("/", "#now-headline"),
    "schedule": ("/schedule/", "#schedule-form"),
    "replies": ("/replies/", "#replies-form"),
    "integrations": ("/integrations/", "#key-list, #key-list-empty"),
    "activity": ("/activity/", "main .section-head"),
    "account": ("/account/", "#password"),
}


@pytest.fixture(scope="module")
def api_token(served_app: ServedApp) -> str:
    """The module's account, and a gateway key of its own for the API."""
    return served_app.create_user(USER, PASSWORD)


def saved(app: ServedApp, token: str) -> dict[str, Any]:
    """The saved settings, as the API reads them."""
    return dict(api(app, token, "GET", "/api/v1/schedule"))


def open_context(
    browser: Any,
    app: ServedApp,
    *,
    viewport: dict[str, int] = DESKTOP,
    scheme: str = "light",
    lang: str = "en",
    script: bool = True,
) -> Any:
    return support.open_context(
        browser,
        width=viewport["width"],
        height=viewport["height"],
        scheme=scheme,
        locale="zh-CN" if lang == "zh" else "en-US",
        # The language the switcher would set (Django's language cookie).
        language=(app, "zh-hans" if lang == "zh" else "en"),
        java_script_enabled=script,
    )


def sign_in(page: Any, app: ServedApp) -> Any:
    return support.sign_in(page, app, USER, PASSWORD)


@pytest.fixture
def desktop(browser: Any, served_app: ServedApp, api_token: str) -> Iterator[Watched]:
    context = open_context(browser, served_app)
    watched = Watched(context.new_page())
    sign_in(watched.page, served_app)
    try:
        yield watched
    finally:
        context.close()


def open_section(page: Any, app: ServedApp, section: str) -> None:
    path, marker = SECTIONS[section]
    page.goto(f"{app.base_url}{path}")
    page.wait_for_selector(marker)
    if section == "schedule":
        wait_drawn(page, 0)


# ---- every section, clean, in each look -------------------------------------

LOOKS = [
    *[(section, "desktop", "light", "en") for section in SECTIONS],
    *[(section, "phone", "dark", "zh") for section in SECTIONS],
    ("overview", "phone", "light", "en"),
    ("overview", "desktop", "dark", "zh"),
]


@pytest.mark.parametrize(
    ("section", "size", "scheme", "lang"),
    [pytest.param(*look, id="-".join(look)) for look in LOOKS],
)
def test_each_section_is_clean_and_fits(
    browser: Any,
    served_app: ServedApp,
    api_token: str,
    artifacts_dir: str,
    section: str,
    size: str,
    scheme: str,
    lang: str,
) -> None:
    viewport = DESKTOP if size == "desktop" else PHONE
    context = open_context(browser, served_app, viewport=viewport, scheme=scheme, lang=lang)
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app)
        open_section(page, served_app, section)
        assert page.get_attribute("html", "lang") == ("zh-Hans" if lang == "zh" else "en")
        # The section's own link is the current one in the navigation.
        current = page.locator(".section-nav [aria-current=page]")
        assert current.get_attribute("data-section") == section
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        channels = [int(c) for c in re.findall(r"\d+", background)[:3]]
        assert (sum(channels) / 3 < 100) == (scheme == "dark"), background
        # Nothing spills sideways, at either width, and every element with a
        # box in the page's main part stays inside the viewport's width too.
        assert_fits(page, viewport["width"], inside="main")
        if DOCS_SCREENSHOTS and (size, scheme, lang) == ("desktop", "light", "en"):
            name = DOCS_SCREENSHOTS / f"{section}-desktop.png"
        elif DOCS_SCREENSHOTS and (size, scheme, lang) == ("phone", "dark", "zh"):
            name = DOCS_SCREENSHOTS / f"{section}-phone-zh.png"
        else:
            name = Path(artifacts_dir) / f"sections-{section}-{size}-{scheme}-{lang}.png"
        name.parent.mkdir(parents=True, exist_ok=True)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(name), full_page=True)
        watched.assert_clean()
    finally:
        context.close()


# ---- the first screen --------------------------------------------------------


def test_the_first_screen_names_the_next_change_and_its_time(desktop: Watched) -> None:
    page = desktop.page
    page.evaluate("window.scrollTo(0, 0)")
    assert page.evaluate("window.scrollY") == 0
    headline = page.locator("#now-headline")
    countdown = page.locator("#now-next")
    # Words, a time of day, and all of it on the first 1280×800 screen unscrolled.
    text = countdown.inner_text()
    assert re.search(r"\b\d\d:\d\d\b", text), text
    assert re.search(r"[A-Za-z]{3,}", text), text
    assert len(headline.inner_text().split()) >= 3
    for element in (headline, countdown):
        box = element.bounding_box()
        assert box is not None
        assert box["y"] >= 0
        assert box["y"] + box["height"] <= DESKTOP["height"], box
    # The steps of the coming day start there too.
    steps = page.locator("#now-steps .step")
    assert steps.count() >= 2
    assert steps.first.bounding_box()["y"] < DESKTOP["height"]
    # The engineer's details are behind a closed disclosure.
    assert page.locator("#now-details").get_attribute("open") is None
    assert not page.locator("#now-reason").is_visible()
    desktop.assert_clean()


# ---- saving ------------------------------------------------------------------

EDITS = {
    "schedule": [("#f-curfew_start", "curfew_start", "21:45"), ("#f-wake_up", "wake_up", "08:45")],
    "replies": [
        ("#f-off_duty_reply", "off_duty_reply", "Busy now, ask me later."),
        ("#f-lights_out_reply", "lights_out_reply", "Asleep. Tomorrow."),
    ],
}


@pytest.mark.parametrize("section", ["schedule", "replies"])
def test_the_save_bar_counts_changes_and_a_save_stays_in_place(
    desktop: Watched, served_app: ServedApp, api_token: str, section: str
) -> None:
    page = desktop.page
    open_section(page, served_app, section)
    form = f"#{section}-form"
    bar = page.locator(f"{form} [data-savebar]")
    assert not bar.is_visible()  # nothing changed: no save bar
    (first, key_one, value_one), (second, key_two, value_two) = EDITS[section]
    assert saved(served_app, api_token)[key_one] != value_one
    page.fill(first, value_one)
    bar.wait_for(state="visible")
    assert page.inner_text(f"{form} [data-dirty-status]").strip() == "1 unsaved change"
    page.fill(second, value_two)
    wait_until(
        page,
        f"document.querySelector('{form} [data-dirty-status]').textContent.trim()"
        " === '2 unsaved changes'",
    )
    # Save from further down the page: the page stays where it is.
    page.locator(second).scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 120)")
    before = page.evaluate("window.scrollY")
    assert before > 0
    requests: list[str] = []
    page.on("framenavigated", lambda frame: requests.append(frame.url))
    page.click(f"#save-{section}")
    page.wait_for_selector("#toast .toast-success")
    assert "Saved" in page.inner_text("#toast")
    assert requests == []  # swapped in place, no navigation
    assert abs(page.evaluate("window.scrollY") - before) <= 2
    bar.wait_for(state="hidden")  # the saved form is the new baseline
    assert page.input_value(first) == value_one
    values = saved(served_app, api_token)
    assert (values[key_one], values[key_two]) == (value_one, value_two)
    desktop.assert_clean()


def test_changing_a_field_back_takes_it_off_the_count(
    desktop: Watched, served_app: ServedApp
) -> None:
    page = desktop.page
    open_section(page, served_app, "replies")
    status = page.locator("#replies-form [data-dirty-status]")
    original = page.input_value("#f-off_duty_reply")
    page.fill("#f-off_duty_reply", original + " (edited)")
    page.fill("#f-lights_out_reply", "Zzz.")
    wait_until(page, "document.querySelector('#replies-form [data-savebar]').offsetParent !== null")
    assert status.inner_text().strip() == "2 unsaved changes"
    page.fill("#f-off_duty_reply", original)
    wait_until(
        page,
        "document.querySelector('#replies-form [data-dirty-status]').textContent.trim()"
        " === '1 unsaved change'",
    )
    with page.expect_navigation():
        page.click("#replies-form [data-discard]")
    desktop.assert_clean()


# ---- the leave-page warning --------------------------------------------------


def _leave(page: Any, app: ServedApp) -> None:
    """Follow the section link to the overview (a navigation away)."""
    with page.expect_navigation():
        page.click(".section-nav a[data-section=overview]")
    page.wait_for_selector("#now-headline")


def test_the_leave_page_warning_guards_unsaved_edits_only(
    desktop: Watched, served_app: ServedApp
) -> None:
    page = desktop.page
    dialogs: list[str] = []

    def answer(dialog: Any) -> None:
        dialogs.append(dialog.type)
        dialog.accept()  # leave anyway

    page.on("dialog", answer)

    def edit() -> None:
        open_section(page, served_app, "replies")
        # Typed, not filled: Chromium asks before unload only after a user gesture.
        page.click("#f-lights_out_reply")
        page.keyboard.press("End")
        page.keyboard.type(" Good night.")
        page.locator("#replies-form [data-savebar]").wait_for(state="visible")

    # Unsaved edits: leaving asks.
    edit()
    _leave(page, served_app)
    assert dialogs == ["beforeunload"]

    # After a save: leaving does not ask.
    edit()
    page.click("#save-replies")
    page.wait_for_selector("#toast .toast-success")
    _leave(page, served_app)
    assert dialogs == ["beforeunload"]

    # After discarding: neither the discard nor the next leave asks.
    edit()
    with page.expect_navigation():
        page.click("#replies-form [data-discard]")
    page.wait_for_selector("#replies-form")
    assert not page.locator("#replies-form [data-savebar]").is_visible()
    _leave(page, served_app)
    assert dialogs == ["beforeunload"]

    # A section never edited does not ask either.
    open_section(page, served_app, "schedule")
    page.click("#f-curfew_start")  # a gesture, but no change
    _leave(page, served_app)
    assert dialogs == ["beforeunload"]
    desktop.assert_clean()


# ---- revoking a key asks -----------------------------------------------------


def _verdict_status(app: ServedApp, key: str) -> int:
    try:
        api(app, key, "POST", "/api/v1/verdict", {})
    except urllib.error.HTTPError as exc:
        return exc.code
    return 200


def test_revoking_a_key_asks_first(desktop: Watched, served_app: ServedApp) -> None:
    page = desktop.page
    open_section(page, served_app, "integrations")
    page.fill("#token-name", "laptop gateway")
    page.click("#token-create")
    page.wait_for_selector("#new-token")
    key = page.input_value("#new-token-value")
    assert _verdict_status(served_app, key) == 200
    row = page.locator("#key-list tbody tr", has_text="laptop gateway")
    assert row.count() == 1
    asked: list[str] = []

    def dismiss(dialog: Any) -> None:
        asked.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", dismiss)
    row.locator("button", has_text="Revoke").click()
    page.wait_for_timeout(500)  # a dismissed confirm sends nothing; give it the chance
    assert len(asked) == 1
    assert asked[0].startswith("confirm: Revoke “laptop gateway”?"), asked
    page.remove_listener("dialog", dismiss)
    # Dismissed: the key is kept and still works.
    assert row.count() == 1
    assert _verdict_status(served_app, key) == 200

    def accept(dialog: Any) -> None:
        asked.append(dialog.type)
        dialog.accept()

    page.on("dialog", accept)
    row.locator("button", has_text="Revoke").click()
    row.wait_for(state="detached")
    assert asked[1:] == ["confirm"]
    assert _verdict_status(served_app, key) == 401
    desktop.assert_clean()


# ---- without script ----------------------------------------------------------


def test_without_javascript_a_section_saves_by_post_and_redirect(
    browser: Any, served_app: ServedApp, api_token: str
) -> None:
    context = open_context(browser, served_app, script=False)
    try:
        page = context.new_page()
        sign_in(page, served_app)
        open_section(page, served_app, "replies")
        # Without script the save bar is always there.
        assert page.locator("#save-replies").is_visible()
        page.fill("#f-off_duty_reply", "Off for now (no script).")
        with page.expect_navigation():
            page.click("#save-replies")
        assert page.url == f"{served_app.base_url}/replies/"
        assert "Saved." in page.inner_text(".messages")
        assert saved(served_app, api_token)["off_duty_reply"] == "Off for now (no script)."
        assert page.input_value("#f-off_duty_reply") == "Off for now (no script)."
        # Revoking a key without script: a page that names it asks first.
        open_section(page, served_app, "integrations")
        page.fill("#token-name", "no-script key")
        with page.expect_navigation():
            page.click("#token-create")
        key = page.input_value("#new-token-value")
        open_section(page, served_app, "integrations")
        row = page.locator("#key-list tbody tr", has_text="no-script key")
        with page.expect_navigation():
            row.locator("button", has_text="Revoke").click()
        assert "no-script key" in page.inner_text("#revoke-confirm h1")
        assert _verdict_status(served_app, key) == 200  # asking revoked nothing
        with page.expect_navigation():
            page.click("#revoke-confirm-button")
        assert page.url == f"{served_app.base_url}/integrations/"
        assert "Key revoked" in page.inner_text(".messages")
        assert _verdict_status(served_app, key) == 401
    finally:
        context.close()


# ---- the preview stores nothing ----------------------------------------------


def _override_exists(app: ServedApp) -> bool:
    out = app.manage(
        "shell",
        "-c",
        "from curfew_core.models import Override; "
        f"print(Override.objects.filter(user__username={USER!r}).exists())",
    ).stdout
    return out.strip().splitlines()[-1] == "True"


def _live_verdict(app: ServedApp, token: str) -> dict[str, Any]:
    answer = api(app, token, "POST", "/api/v1/verdict", {})
    at = dt.datetime.fromisoformat(answer["at"])
    # The real clock, not a moment the page showed.
    assert abs((at - dt.datetime.now(dt.UTC)).total_seconds()) < 120, answer["at"]
    return {
        "state": answer["state"],
        "schedule_state": answer["schedule_state"],
        "action": answer["action"],
        # The reason names the minute and the winding percent: compare its words.
        "reason": re.sub(r"\d+", "#", answer["reason"]),
    }


def test_the_page_only_preview_never_changes_a_verdict(
    desktop: Watched, served_app: ServedApp, api_token: str
) -> None:
    page = desktop.page
    assert not _override_exists(served_app)
    before = _live_verdict(served_app, api_token)
    title = page.inner_text("#now h2")
    assert page.locator("#look-banner .look-banner").count() == 0

    # The scrubber: another time of this day.
    scrub = page.locator("#look-minute")
    current = int(scrub.input_value())
    target = (current + 12 * 60) % (24 * 60)
    scrub.fill(str(target))
    page.wait_for_selector("#look-banner .look-banner")
    shown = f"{target // 60:02d}:{target % 60:02d}"
    wait_until(page, f"document.querySelector('#now h2').textContent.includes('{shown}')")
    assert page.inner_text("#now h2") != title
    assert "minute=" in page.url  # the preview is a link, not a setting
    assert _live_verdict(served_app, api_token) == before

    # The picker: a date and time (a lights-out moment, whatever the clock says).
    page.fill("#look-at", "2026-12-01T04:30")
    page.dispatch_event("#look-at", "change")
    wait_until(page, "document.querySelector('#now h2').textContent.includes('04:30')")
    assert page.get_attribute("#now", "data-state") == "lights-out"
    assert "Tue 2026-12-01 04:30" in page.inner_text("#look-banner")
    assert _live_verdict(served_app, api_token) == before
    assert not _override_exists(served_app)

    # Back to now: the real card again.
    with page.expect_navigation():
        page.click("#look-clear")
    page.wait_for_selector("#now-headline")
    assert page.locator("#look-banner .look-banner").count() == 0
    assert page.get_attribute("#now", "data-state") == before["state"]
    desktop.assert_clean()
