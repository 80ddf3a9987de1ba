"""The member's schedule chart on a phone (390 px) has fewer hour ticks, so
its labels keep their room; on a desktop (1280 px) every tick the server
sends stays. A team member whose team's night (21:00 to 03:00) widens the
chart has the most ticks (the server sends up to ten); the phone used to
draw them all, labels nearly touching. Real Chromium; no console error or
CSP violation; screenshots go to the artifacts folder."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import Watched, open_context, served_team_member, sign_in
from tests.browser.test_settings_page import wait_drawn

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
MEMBER = f"ticks-bob-{os.getpid()}"
ADMIN = f"ticks-boss-{os.getpid()}"
TEAM = f"ticks-owls-{os.getpid()}"
#: Tick labels at least this far apart, centre to centre (``settings.js``).
SPACING_PX = 72

#: The drawn x-axis labels: (left, right, centre) in page pixels, left to right.
LABELS = """() => Array.from(document.querySelectorAll('#curve-chart .xtick text'))
  .map(t => t.getBoundingClientRect())
  .map(r => [r.left, r.right, r.left + r.width / 2])
  .sort((a, b) => a[0] - b[0])"""


@pytest.fixture(scope="module")
def member(served_app: ServedApp) -> str:
    served_team_member(
        served_app,
        team=TEAM,
        admin=ADMIN,
        member=MEMBER,
        password=PASSWORD,
        night={
            "curfew_start": "21:00",
            "lights_out": "03:00",
            "wake_up": "09:00",
            "anchors": [["21:00", 1024], ["03:00", 64]],
        },
    )
    return MEMBER


@pytest.mark.parametrize("width", [390, 1280])
def test_the_chart_has_room_for_its_hour_labels(
    browser: Any, served_app: ServedApp, member: str, width: int, artifacts_dir: str
) -> None:
    context = open_context(browser, width=width, height=900)
    try:
        watched = Watched(context.new_page())
        page = sign_in(watched.page, served_app, member, PASSWORD, start="/", landing=None)
        page.goto(f"{served_app.base_url}/schedule/")
        wait_drawn(page, 0)
        figure = page.evaluate("() => document.getElementById('curve-figure').textContent")
        sent = json.loads(figure)["layout"]["xaxis"]["ticktext"]
        assert len(sent) >= 7, sent  # the team's night widens the chart
        labels = page.evaluate(LABELS)
        drawn = page.evaluate(
            "() => Array.from(document.querySelectorAll('#curve-chart .xtick text'))"
            ".map(t => t.textContent).sort()"
        )
        page.locator("#curve-chart").screenshot(
            path=os.path.join(artifacts_dir, f"chart-ticks-{width}.png")
        )
        if width >= 1280:
            assert drawn == sorted(sent)
        else:
            assert 3 <= len(labels) < len(sent), drawn
            assert set(drawn) <= set(sent)
        for before, after in itertools.pairwise(labels):
            assert after[2] - before[2] >= SPACING_PX * 0.9, labels
            assert after[0] > before[1], labels  # no two labels touch
        watched.assert_clean()
    finally:
        context.close()
