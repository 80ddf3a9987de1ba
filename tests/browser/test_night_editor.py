"""The night in one move (issue 25), in real headless Chromium.

A person types "gets sleepy 22:30, asleep 01:00, up at 08:00 on weekdays"
and presses Save once: the wind-down follows the new night (the same
2048 -> 64 shape stretched over 22:30-01:00, shown in the table and the chart
before the save), nothing they did not touch refuses the save, and the save
bar never covers the night's boxes. Then a curve that rises toward sleep is
warned in words, and a save with several problems names every one of them,
each at its own field. Desktop/light/English and phone/dark/Chinese, each on
its own account; screenshots of each step go to the artifacts folder.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, assert_fits, open_context, wait_until
from tests.browser.test_settings_page import wait_drawn

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
#: The default curve (23:00-03:00) stretched over 22:30-01:00 (curve.stretch).
STRETCHED = ["22:30", "23:08", "23:45", "00:23", "01:00"]
VIEWS = {
    # name: (width, height, colour scheme, language, the "Gets sleepy at" label)
    "desktop-light-en": (1280, 900, "light", "en", "Gets sleepy at"),
    "phone-dark-zh": (390, 844, "dark", "zh-hans", "开始犯困"),
}

#: Boxes (by selector) whose box the sticky save bar overlaps, after each was
#: focused (the browser scrolls a focused box into view).
COVERED = """(selectors) => {
  const bar = document.querySelector('#schedule-form [data-savebar]').getBoundingClientRect();
  return selectors.filter((selector) => {
    const box = document.querySelector(selector);
    box.focus();
    const r = box.getBoundingClientRect();
    return r.bottom > bar.top && r.top < bar.bottom;
  });
}"""


def _type(page: Any, selector: str, text: str) -> None:
    """Typed key by key over what the box held, as a person does."""
    box = page.locator(selector)
    box.click()
    box.press("ControlOrMeta+a")
    box.press_sequentially(text)


def _anchor_times(page: Any) -> list[str]:
    return list(
        page.eval_on_selector_all(
            "#anchor-rows input[name$='-time']", "boxes => boxes.map(b => b.value).filter(Boolean)"
        )
    )


def _shot(page: Any, artifacts_dir: str, name: str, selector: str) -> None:
    page.locator(selector).evaluate("el => el.scrollIntoView({block: 'start'})")
    page.locator(selector).screenshot(path=os.path.join(artifacts_dir, name))


@pytest.mark.parametrize("view", list(VIEWS))
def test_the_night_changes_in_one_save_and_says_what_is_wrong(
    browser: Any, served_app: ServedApp, artifacts_dir: str, view: str
) -> None:
    width, height, scheme, code, sleepy = VIEWS[view]
    user = f"night-{view}"
    served_app.create_user(user, PASSWORD)
    context = open_context(
        browser, width=width, height=height, scheme=scheme, language=(served_app, code)
    )
    try:
        watched = Watched(context.new_page())
        page = support.sign_in(watched.page, served_app, user, PASSWORD)
        page.goto(f"{served_app.base_url}/schedule/")
        drawn = wait_drawn(page, 0)
        assert page.locator("#night-editor .times .label").first.inner_text() == sleepy

        # Days first, then the three times, typed.
        page.click("#night-editor input[name=night_days][value=weekdays] + span")
        _type(page, "#f-curfew_start", "22:30")
        _type(page, "#f-lights_out", "01:00")
        _type(page, "#id_wg_wake_up", "08:00")
        # The wind-down followed the night at once, before any save.
        assert _anchor_times(page) == STRETCHED
        drawn = wait_drawn(page, drawn)
        caption = "document.querySelector('#curve-panel .chart-caption').textContent"
        wait_until(page, f"{caption}.includes('22:30') && {caption}.includes('01:00')")
        assert page.locator("#curve-rises").count() == 0
        assert page.inner_text("#err-anchors").strip() == ""
        # The save bar (shown now: there are edits) covers none of the night's boxes.
        night = ["#f-curfew_start", "#f-lights_out", "#f-wake_up", "#id_wg_wake_up"]
        assert page.evaluate(COVERED, night) == []
        assert_fits(page)
        _shot(page, artifacts_dir, f"night-{view}-edited.png", "#night-editor")

        # One press of Save.
        page.click("#save-schedule")
        page.wait_for_selector("#toast .toast-success")
        page.goto(f"{served_app.base_url}/schedule/")
        wait_drawn(page, 0)
        assert page.input_value("#f-curfew_start") == "22:30"
        assert page.input_value("#f-lights_out") == "01:00"
        assert page.is_checked("#night-editor input[name=night_days][value=weekdays]")
        assert page.input_value("#id_wg_wake_up") == "08:00"
        # Stored by the evening a night starts on: Sunday to Thursday wake at 08:00.
        assert page.input_value("#id_wd_sun_wake_up") == "08:00"
        assert page.input_value("#id_wd_fri_wake_up") == ""
        assert _anchor_times(page) == STRETCHED

        # A curve that gets longer toward sleep is warned, not refused.
        drawn = wait_drawn(page, 0)
        page.click(".shape-yourself > summary")
        _type(page, "input[name='anchors-4-tokens']", "3000")
        page.wait_for_selector("#curve-rises")
        assert "00:23" in page.inner_text("#curve-rises")
        assert "01:00" in page.inner_text("#curve-rises")
        _shot(page, artifacts_dir, f"night-{view}-rising.png", "#curve-editor")

        # Several problems in one save: every one comes back, each at its field.
        _type(page, "input[name='anchors-1-time']", "02:00")
        _type(page, "input[name='anchors-2-time']", "03:30")
        _type(page, "#id_wg_curfew_start", "25:00")
        page.click("#save-schedule")
        # The form is also previewed as it is typed, and a preview fills the
        # messages it knows of: wait for each message, not the first to come.
        for where, what in [
            ("#anchor-msg-1", "02:00"),
            ("#anchor-msg-2", "03:30"),
            ("#err-weekdays", "25:00"),
        ]:
            page.wait_for_selector(f"{where}:has-text('{what}')")
        assert "02:00" in page.inner_text("#anchor-msg-1")
        assert "03:30" in page.inner_text("#anchor-msg-2")
        assert "25:00" in page.inner_text("#err-weekdays")
        assert page.inner_text("#anchor-msg-0").strip() == ""
        _shot(page, artifacts_dir, f"night-{view}-errors.png", "#schedule-form")
        # Refused 400 (htmx: 422), which Chromium logs; nothing else went wrong.
        watched.problems[:] = [p for p in watched.problems if "status of 422" not in p]
        watched.assert_clean()
    finally:
        context.close()
