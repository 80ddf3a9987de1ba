"""Pretend on an open page, in real headless Chromium: when it ends (its timer
runs out, or it is stopped elsewhere) the banner, the Stop button and the band
go with it without a reload; and a session capsule whose browser was signed
out says so in the page's language, not "embed token refused".

Its own accounts, so their pretends never leak into another module.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, api_post, open_context, sign_in, wait_until

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
#: The session capsule's label, read through its shadow root.
CAPSULE_LABEL = (
    "(() => { const h = document.querySelector('curfew-capsule');"
    " return h && h.shadowRoot.querySelector('.label').textContent; })()"
)

#: Moves a user's pretend to end 9 s from now; prints the end in epoch ms.
SOON = (
    "import datetime as dt; from django.db import transaction; from django.utils import "
    "timezone; from curfew_core.models import Override; "
    "end = (timezone.now() + dt.timedelta(seconds=9)).replace(microsecond=0); "
    "row = Override.objects.get(user__username=%r); row.debug_until = end; "
    "row.save(update_fields=['debug_until']); "
    "print(int(end.timestamp() * 1000))"
)


def _without_now(band: str) -> str:
    """The band with its now marker taken off: the marker moves with the real
    clock, and a quarter hour may pass while the test waits."""
    return band.replace(" is-now", "")


def _quarter(at: dt.datetime) -> str:
    """The band cell's start (``HH:MM``) that holds ``at``, in the account's zone."""
    local = at.astimezone(ZoneInfo("Asia/Shanghai"))
    return f"{local.hour:02d}:{local.minute // 15 * 15:02d}"


def test_pretend_ends_on_an_open_page(
    browser: Any, served_app: ServedApp, artifacts_dir: str
) -> None:
    token = served_app.create_user("web-pretend-live", PASSWORD)
    context = open_context(browser, width=1280, height=900)
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app, "web-pretend-live", PASSWORD)
        real_band = page.inner_html("#band")

        # A pretend that runs out by itself while the overview is open. The
        # shortest a person may pick is a minute; the row's end is moved
        # closer (a model save, pushed to the caches as the admin's is: a bulk
        # update is not, and with Redis stays hidden up to the freshness
        # bound), and the page waits until the server draws the banner with
        # that end.
        api_post(
            served_app, token, "/api/v1/overrides", {"debug": "2026-09-30 01:30", "duration": "1m"}
        )
        ends_ms = int(
            served_app.manage("shell", "-c", SOON % "web-pretend-live").stdout.split()[-1]
        )
        page.goto(f"{served_app.base_url}/")
        while page.get_attribute("#pretend-banner", "data-until-ms") != str(ends_ms):
            page.wait_for_timeout(500)
            page.goto(f"{served_app.base_url}/")
        assert page.locator("#pretend-banner").is_visible()
        assert page.locator("#time-machine-clear").count() == 1
        assert "pretending" in page.inner_text("#now")
        assert page.inner_html("#band") != real_band  # drawn as of 2026-09-30 01:30
        page.evaluate("window.__stayed = true")
        wait_until(page, "document.getElementById('pretend-banner') === null", timeout=10)
        page.wait_for_selector("#now:not(:has(.tag-warn))")
        assert page.locator("#time-machine-clear").count() == 0
        # Today's band again; the now marker is on the real clock's cell
        # (a quarter hour may have passed since the first reading).
        before = _quarter(dt.datetime.now(dt.UTC))
        assert _without_now(page.inner_html("#band")) == _without_now(real_band)
        marked = page.locator("#band .cell.is-now .sr-only").all_inner_texts()
        after = _quarter(dt.datetime.now(dt.UTC))
        assert len(marked) == 1, marked
        assert marked[0].split()[0] in {before, after}, marked
        # The day picked and the slider are today's again, not the pretend's.
        assert page.input_value("#band-date") != "2026-09-30"
        assert page.evaluate("window.__stayed === true"), "the page reloaded"
        page.screenshot(
            path=os.path.join(artifacts_dir, "pretend-ended-overview-desktop-en.png"),
            full_page=True,
        )

        # Stopped elsewhere (the API) while the capsule's page is open: the
        # capsule's push brings the banner down.
        api_post(served_app, token, "/api/v1/overrides", {"debug": "23:30", "duration": "1h"})
        page.goto(f"{served_app.base_url}/embed/")
        assert page.locator("#pretend-banner").is_visible()
        wait_until(page, f"{CAPSULE_LABEL} !== null && {CAPSULE_LABEL} !== ''")
        page.evaluate("window.__stayed = true")
        api_post(served_app, token, "/api/v1/overrides", {"auto": True})
        wait_until(page, "document.getElementById('pretend-banner') === null", timeout=10)
        assert page.evaluate("window.__stayed === true"), "the page reloaded"
        watched.assert_clean()
    finally:
        context.close()


@pytest.mark.parametrize(
    ("language", "width", "said"),
    [("en", 1280, "signed out: sign in again"), ("zh-hans", 390, "已退出登录：请重新登录")],
    ids=["desktop-en", "phone-zh"],
)
def test_a_signed_out_capsule_says_so(
    browser: Any,
    served_app: ServedApp,
    artifacts_dir: str,
    language: str,
    width: int,
    said: str,
) -> None:
    user = f"web-capsule-out-{language}"
    served_app.create_user(user, PASSWORD)
    shown = open_context(browser, width=width, language=(served_app, language))
    other = open_context(browser, width=1280, language=(served_app, language))
    try:
        page = sign_in(shown.new_page(), served_app, user, PASSWORD)
        page.goto(f"{served_app.base_url}/embed/")
        wait_until(page, f"{CAPSULE_LABEL} !== null && {CAPSULE_LABEL} !== ''")
        # Another browser (a session of its own, through the form) signs every
        # other session out: this one's capsule closes.
        elsewhere = sign_in(other.new_page(), served_app, user, PASSWORD, form=True)
        elsewhere.goto(f"{served_app.base_url}/account/")
        elsewhere.click("#sign-out-others")
        elsewhere.wait_for_selector("#sessions .banner-success")
        wait_until(page, f"{CAPSULE_LABEL} === {said!r}")
        title = page.evaluate(
            "document.querySelector('curfew-capsule').shadowRoot"
            ".querySelector('.capsule').getAttribute('title') || ''"
        )
        assert not re.search(r"token|令牌", title), title
        page.locator("curfew-capsule").screenshot(
            path=os.path.join(artifacts_dir, f"capsule-signed-out-{language}.png")
        )
    finally:
        shown.close()
        other.close()
