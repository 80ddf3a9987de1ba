"""QA "look" finding 5: a pretending member's reason said "pretending …"
twice (once per side), and on the Activity page the team's part, put
first, read as if the member's own parts after it were the team's. The
reason is composed once (``engine.team.combine``): the shared pretend once,
each team part marked; the Activity's "Why" marks the own side where the
team's leads."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator

import pytest
from django.utils import translation

from curfew_core.engine import Overrides, State, TeamSide
from curfew_core.engine.effective import PLAIN_CALL
from curfew_core.engine.team import TEAM_MARK, decide_member
from curfew_core.ledger.why import led_by_state, own_side_marked
from curfew_core.schedules import config as schedule_config
from curfew_core.web.activity.words import reason_words

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
REAL_NOW = dt.datetime(2026, 12, 5, 12, 0, tzinfo=SHANGHAI)
#: Tue 01:30 pretended: the team asleep (01:00), the member's own still winding.
PRETENDED = dt.datetime(2026, 12, 8, 1, 30, tzinfo=SHANGHAI)
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


def _reason() -> tuple[str, State]:
    own = schedule_config.build(schedule_config.default_config())
    team = schedule_config.build({**schedule_config.default_config(), **TEAM_NIGHT})
    overrides = Overrides(debug_at=PRETENDED, debug_until=REAL_NOW + dt.timedelta(hours=1))
    verdict = decide_member(REAL_NOW, own, PLAIN_CALL, overrides, TeamSide(team))
    return verdict.reason, verdict.state


def test_the_pretend_is_told_once_and_each_team_part_is_marked() -> None:
    reason, state = _reason()
    assert state is State.LIGHTS_OUT
    assert reason.count("pretending it is") == 1
    parts = reason.split(" · ")
    assert "team: lights out until 10:00" in parts
    # The own side first, unmarked; after it, every part is the team's.
    first_team = next(i for i, part in enumerate(parts) if part.startswith(TEAM_MARK))
    assert all(part.startswith(TEAM_MARK) for part in parts[first_team:])
    assert any(part.startswith("winding ") for part in parts[:first_team])


def test_the_activity_why_marks_whose_each_side_is() -> None:
    reason, state = _reason()
    led = own_side_marked(led_by_state(state.value, reason))
    said = reason_words(led)
    assert said.startswith("team: asleep until 10:00 · yours: getting sleepy, ")
    assert said.count("pretending it is") == 1


def test_one_person_s_why_is_unmarked() -> None:
    own = schedule_config.build(schedule_config.default_config())
    overrides = Overrides(debug_at=PRETENDED, debug_until=REAL_NOW + dt.timedelta(hours=1))
    verdict = decide_member(REAL_NOW, own, PLAIN_CALL, overrides, None)
    led = own_side_marked(led_by_state(verdict.state.value, verdict.reason))
    assert "yours:" not in led
    assert "team:" not in led
    assert led.count("pretending it is") == 1


def test_chinese_says_it_once_too() -> None:
    reason, state = _reason()
    with translation.override("zh-hans"):
        said = reason_words(own_side_marked(led_by_state(state.value, reason)))
    assert said.count("假装") == 1, said
    assert "yours" not in said


def test_a_teams_budget_stays_beside_its_winding_in_the_why() -> None:
    """Each team part marked: the team's budget still follows its winding
    when the Why leads with it (``ledger.why.led_by_state``)."""
    reason = "2026-12-07 21:30 · on duty · team: winding 12% · team: budget 1824"
    assert led_by_state("winding", reason) == (
        "2026-12-07 21:30 · team: winding 12% · team: budget 1824 · on duty"
    )
    said = reason_words(own_side_marked(led_by_state("winding", reason)))
    assert said == (
        "team: getting sleepy, 12% through the night · team: answers up to 1824 tokens"
        " · yours: working"
    )
