"""QA "look" finding 1: a member's overtime under a team that lets no
overtime lift its night. The engine keeps the team's winding; the Now card's
headline, the capsule's words and the heads-up's snooze must say so, not
"overtime: works normally" (checked against ``decide_member``)."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator

import pytest
from django.utils import translation

from curfew_core.engine import Overrides, State
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.heads_up import next_payload
from curfew_core.selectors.outlook import Outlook
from curfew_core.vocabulary import capsule_words
from curfew_core.web.schedule import story
from tests.teams.held_overtime import member_outlook

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
#: A Monday 21:10, in the team's winding (own night starts at 23:00).
AT = dt.datetime(2026, 12, 7, 21, 10, tzinfo=SHANGHAI)
TEAM_NIGHT = {
    "curfew_start": "21:00",
    "lights_out": "01:00",
    "wake_up": "10:00",
    "anchors": [["21:00", 2048], ["01:00", 64]],
}


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _outlook(now: dt.datetime, overrides: Overrides, minutes: int) -> Outlook:
    return member_outlook(now, overrides, TEAM_NIGHT, minutes)


def test_the_headline_tells_the_teams_night_through_an_overtime() -> None:
    overtime = Overrides(overtime_until=AT + dt.timedelta(minutes=30))
    outlook = _outlook(AT, overtime, 0)
    verdict = outlook.verdict(AT)
    assert verdict.state is State.WINDING  # the engine: the team's night holds
    assert verdict.override == "overtime"
    told = story.tell(verdict, outlook)
    assert told.state == "winding"
    assert "works normally" not in told.headline
    assert told.headline.startswith("Your AI is getting sleepy")
    assert told.headline.endswith("Your overtime does not lift your team's night.")


def test_an_overtime_the_team_lets_through_is_still_overtime() -> None:
    overtime = Overrides(overtime_until=AT + dt.timedelta(minutes=30))
    outlook = _outlook(AT, overtime, 60)
    verdict = outlook.verdict(AT)
    assert verdict.state is State.ON_DUTY
    told = story.tell(verdict, outlook)
    assert told.headline == "Overtime: your AI works normally, whatever the schedule says."


@pytest.mark.parametrize(("minutes", "offered"), [(0, False), (60, True)])
def test_the_snooze_is_offered_only_where_it_puts_the_change_off(
    minutes: int, offered: bool
) -> None:
    before = AT.replace(hour=20, minute=55)
    outlook = _outlook(before, Overrides(), minutes)
    verdict = outlook.verdict(before)
    payload = next_payload(verdict, outlook)
    assert payload is not None
    assert payload["state"] == "winding"
    assert payload["side"] == "team"
    assert payload["words"] is not None
    assert payload["snooze"] is offered
    # What the snooze would do, as the engine decides it: a 30-minute overtime
    # taken now, read at the change.
    change = dt.datetime.fromisoformat(payload["at"])
    snoozed = _outlook(before, Overrides(overtime_until=before + dt.timedelta(minutes=30)), minutes)
    assert (snoozed.verdict(change).state is State.ON_DUTY) is offered


def test_a_person_without_a_team_may_snooze() -> None:
    before = dt.datetime(2026, 12, 7, 22, 55, tzinfo=SHANGHAI)
    own = schedule_config.build(schedule_config.default_config())
    outlook = Outlook(before, own, Overrides(), None, None)
    payload = next_payload(outlook.verdict(before), outlook)
    assert payload is not None
    assert payload["state"] == "winding"
    assert payload["snooze"] is True


def test_the_capsule_has_words_for_an_overtime_the_team_keeps() -> None:
    words = capsule_words()
    assert words["en"]["overtime_held"] == "overtime does not lift your team's night"
    assert words["zh"]["overtime_held"] != words["en"]["overtime_held"]
    assert words["en"]["overtime_held_peak"] == "overtime does not lift your team's peak hours"
    assert words["zh"]["overtime_held_peak"] == "加班不解除团队的高峰时段"
