"""A member's overtime that the team's night holds back: the Now card's steps.

The headline already says the overtime does not lift the team's night
(test_overtime_team_night.py); each step under it said "working normally
(overtime)" all the same, beside the team's swatches (asleep, peak hours,
sleepy), while gateways got the team's verdict. A step tells the state the
engine gives at its start; only a step the overtime really makes working says
"overtime".
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator

import pytest
from django.utils import translation

from curfew_core.engine import Overrides, State
from curfew_core.selectors.outlook import Outlook
from curfew_core.web.schedule import story
from tests.teams.held_overtime import member_outlook

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
#: A Wednesday 01:30: the team is asleep (its lights-out 22:00), one's own night winding.
AT = dt.datetime(2026, 9, 30, 1, 30, tzinfo=SHANGHAI)
TEAM_NIGHT = {
    "curfew_start": "21:00",
    "lights_out": "22:00",
    "wake_up": "09:00",
    "anchors": [["21:00", 1024], ["22:00", 64]],
}


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _outlook(overrides: Overrides, minutes: int) -> Outlook:
    return member_outlook(AT, overrides, TEAM_NIGHT, minutes)


def test_each_step_the_team_holds_tells_the_teams_state_not_overtime() -> None:
    # An overtime lasting past the whole look-ahead: every step is under it.
    outlook = _outlook(Overrides(overtime_until=AT + dt.timedelta(days=2)), 0)
    verdict = outlook.verdict(AT)
    assert verdict.state is State.LIGHTS_OUT  # the engine: the team's night holds
    told = story.tell(verdict, outlook)
    assert told.steps
    for step in told.steps:
        if step.state != State.ON_DUTY.value:
            assert "overtime" not in step.words, (step.starts, step.state, step.words)
    now = told.steps[0]
    assert now.state == "lights-out"
    assert now.words.startswith("asleep, replies")
    assert next(step.words for step in told.steps if step.state == "off-duty").startswith(
        "off for peak hours"
    )


def test_an_overtime_the_team_lets_through_still_says_overtime() -> None:
    outlook = _outlook(Overrides(overtime_until=AT + dt.timedelta(minutes=30)), 60)
    verdict = outlook.verdict(AT)
    assert verdict.state is State.ON_DUTY
    told = story.tell(verdict, outlook)
    assert told.steps[0].words == "working normally (overtime)"
