"""QA "looker" finding 3: a member's overtime that the team's PEAK hours hold
back. The Overview headline said the overtime "does not lift your team's
night" although the engine's state is off duty (the team's peak hours); the
words now follow the engine's state: peak hours when off duty, the night when
sleepy or asleep (the control, test_overtime_team_night.py)."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator

import pytest
from django.utils import translation

from curfew_core.engine import Overrides, State
from curfew_core.web.schedule import story
from tests.teams.held_overtime import member_outlook

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
#: A Wednesday 10:00: the team's peak hours (the default peak), its night over.
AT_PEAK = dt.datetime(2026, 9, 30, 10, 0, tzinfo=SHANGHAI)
#: The same Wednesday 01:30: the team is asleep.
AT_NIGHT = dt.datetime(2026, 9, 30, 1, 30, tzinfo=SHANGHAI)
TEAM_NIGHT = {
    "curfew_start": "21:00",
    "lights_out": "22:00",
    "wake_up": "09:00",
    "anchors": [["21:00", 1024], ["22:00", 64]],
}


def _told(at: dt.datetime) -> tuple[State, str]:
    outlook = member_outlook(
        at, Overrides(overtime_until=at + dt.timedelta(minutes=30)), TEAM_NIGHT
    )
    verdict = outlook.verdict(at)
    assert verdict.override == "overtime"
    return verdict.state, story.tell(verdict, outlook).headline


@pytest.fixture
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


@pytest.mark.usefixtures("_english")
def test_the_teams_peak_hours_are_said_as_peak_hours() -> None:
    state, headline = _told(AT_PEAK)
    assert state is State.OFF_DUTY  # the engine: the team's peak holds
    assert headline.startswith("Your AI is off for peak hours")
    assert headline.endswith("Your overtime does not lift your team's peak hours.")
    assert "night" not in headline


@pytest.mark.usefixtures("_english")
def test_the_teams_night_is_still_said_as_night() -> None:
    state, headline = _told(AT_NIGHT)
    assert state is State.LIGHTS_OUT
    assert headline.endswith("Your overtime does not lift your team's night.")


def test_it_speaks_chinese_without_a_stray_space() -> None:
    with translation.override("zh-hans"):
        _state, headline = _told(AT_PEAK)
    assert "团队的高峰时段" in headline
    assert "夜间" not in headline
    assert "。 " not in headline
