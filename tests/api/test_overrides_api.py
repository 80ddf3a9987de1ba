"""POST /api/v1/overrides and GET /api/v1/state: overtime, off, auto and the
time machine, with the real clock frozen (never slept on)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from curfew_core.models import Override
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.verdicts import state_payload, verdict_for
from curfew_core.services.overrides import override_apply
from tests.api.conftest import FrozenClock, local, stored

OVERRIDES = "/api/v1/overrides"
STATE = "/api/v1/state"
#: What the issue says a status display needs.
STATE_FIELDS = {
    "state",
    "schedule_state",
    "reason",
    "progress",
    "budget",
    "reply",
    "overtime_left",
    "forced",
    "day",
}

# Every test here reads the state after a write in the same test, like a real
# client does: run them with real commits so the on-commit cache drops fire.
pytestmark = pytest.mark.django_db(transaction=True)


def override(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(OVERRIDES, body)
    assert response.status_code == 200, response.content
    data: dict[str, Any] = response.json()
    return data


def state(api: Any) -> dict[str, Any]:
    response = api.get(STATE)
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


def verdict(api: Any) -> dict[str, Any]:
    response = api.post("/api/v1/verdict", {})
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


def test_state_payload_has_what_a_status_display_needs(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 23:30"))
    body = state(api)
    assert set(body) >= STATE_FIELDS
    assert body["state"] == body["schedule_state"] == "winding"
    # One name per meaning: the curve's budget is ``budget`` (as in a verdict);
    # ``max_tokens`` is only ever a verdict's clamp.
    assert body["budget"] == 1824
    assert "max_tokens" not in body
    assert body["progress"] == pytest.approx(0.125)
    assert body["reply"] is None
    assert body["overtime_left"] is None
    assert body["forced"] is False
    assert "2026-09-29 23:30" in body["reason"]


def test_overtime_suspends_lights_out_and_counts_down(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-30 03:10"))
    assert state(api)["state"] == "lights-out"
    assert verdict(api)["action"] == "short-circuit"

    body = override(api, {"overtime": "30m"})
    # The response is the state payload after the change.
    assert set(body) >= STATE_FIELDS
    assert body["state"] == "on-duty"
    assert body["schedule_state"] == "lights-out"
    assert body["override"] == "overtime"
    assert body["overtime_left"] == 30 * 60
    assert body["reply"] is None
    assert verdict(api)["action"] == "pass"
    assert verdict(api)["schedule_state"] == "lights-out"

    clock.advance(timedelta(minutes=10))
    assert state(api)["overtime_left"] == 20 * 60
    clock.advance(timedelta(minutes=19, seconds=59))
    assert state(api)["overtime_left"] == 1
    assert state(api)["state"] == "on-duty"

    clock.advance(timedelta(seconds=1))  # exactly at the end: over
    after = state(api)
    assert after["state"] == "lights-out"
    assert after["override"] is None
    assert after["overtime_left"] is None
    assert verdict(api)["reply"] == "明天再说。"


def test_overtime_in_the_time_machine(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    travelled = override(api, {"debug": "2026-09-30 03:10"})
    assert travelled["state"] == "lights-out"
    assert travelled["debug_at"] is not None
    body = override(api, {"overtime": "30m"})
    assert body["state"] == "on-duty"
    assert body["schedule_state"] == "lights-out"
    assert body["overtime_left"] == 1800


def test_verdict_max_age_stops_at_the_end_of_overtime(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-30 03:10"))
    override(api, {"overtime": "45s"})
    assert verdict(api)["max_age"] <= 45


def test_off_forces_lights_out_until_the_next_wake_up(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    body = override(api, {"off": True})
    assert body["state"] == "lights-out"
    assert body["schedule_state"] == "on-duty"
    assert body["forced"] is True
    assert body["reply"] == "明天再说。"
    assert datetime.fromisoformat(body["override_until"]) == local("2026-09-30 09:00")
    ruling = verdict(api)
    assert ruling["action"] == "short-circuit"
    assert ruling["reply"] == "明天再说。"

    clock.set(local("2026-09-30 08:59"))
    assert state(api)["forced"] is True
    clock.set(local("2026-09-30 09:00"))
    morning = state(api)
    assert morning["forced"] is False
    assert morning["state"] == "off-duty"  # Wednesday 09:00 is peak, by the schedule


def test_off_during_the_night_lasts_until_this_mornings_wake_up(
    api: Any, clock: FrozenClock
) -> None:
    clock.set(local("2026-09-30 03:10"))
    body = override(api, {"off": True})
    assert datetime.fromisoformat(body["override_until"]) == local("2026-09-30 09:00")


def test_overtime_and_off_replace_each_other(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-30 03:10"))
    override(api, {"overtime": "2h"})
    assert override(api, {"off": True})["override"] == "off"
    after = override(api, {"overtime": "90s"})
    assert after["override"] == "overtime"
    assert after["overtime_left"] == 90
    assert after["forced"] is False


def test_auto_clears_every_override(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    override(api, {"debug": "2026-09-30 03:10"})
    override(api, {"overtime": "1h"})
    body = override(api, {"auto": True})
    assert body["override"] is None
    assert body["debug_at"] is None
    assert body["overtime_left"] is None
    assert body["state"] == body["schedule_state"] == "on-duty"  # real 20:00
    row = Override.objects.get(user=api.user)
    assert (row.overtime_until, row.forced_off_until, row.debug_at) == (None, None, None)


def test_debug_hh_mm_is_the_next_time_the_clock_reads_it(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    body = override(api, {"debug": "01:30"})
    assert datetime.fromisoformat(body["debug_at"]) == local("2026-09-30 01:30")
    assert body["state"] == "winding"
    assert body["budget"] == 560
    assert verdict(api)["max_tokens"] == verdict(api)["budget"] == 560
    # An explicit what-if instant ignores the time machine.
    what_if = api.post("/api/v1/verdict", {"at": "2026-09-29T10:00:00+08:00"}).json()
    assert what_if["state"] == "off-duty"
    cleared = override(api, {"debug": "clear"})
    assert cleared["debug_at"] is None
    assert cleared["state"] == "on-duty"


def test_debug_with_a_date(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    body = override(api, {"debug": "2026-10-01 10:00"})
    assert body["state"] == "on-duty"  # National Day
    assert "holiday" in body["reason"]


#: Well-formed by the document, refused by a rule it cannot state: 422.
UNPROCESSABLE_OVERRIDES = [
    ({"overtime": "0m"}, "overtime"),
    ({"overtime": "25h"}, "overtime"),
    ({"overtime": "1441"}, "overtime"),
    ({"debug": "2026-02-30 10:00"}, "debug"),
    # A time machine parked where the calendar ends would break every verdict.
    ({"debug": "9999-12-31 23:00"}, "debug"),
    ({"debug": "0001-01-01 00:30"}, "debug"),
    ({"debug": "9999-12-31T23:00:00-12:00"}, "debug"),
    # "Pretend it is ..." lasts from a minute to a day.
    ({"debug": "01:30", "duration": "0m"}, "duration"),
    ({"debug": "01:30", "duration": "30s"}, "duration"),
    ({"debug": "01:30", "duration": "25h"}, "duration"),
    ({"debug": "01:30", "duration": "1441"}, "duration"),
    ({"debug": "clear", "duration": "1h"}, "duration"),
]

BAD_OVERRIDES = [
    ({"sleep": True}, "sleep"),
    ({"overtime": "abc"}, "overtime"),
    ({"overtime": "-5"}, "overtime"),
    ({"overtime": 0}, "overtime"),
    ({"overtime": 1441}, "overtime"),
    ({"overtime": 2.5}, "overtime"),
    ({"overtime": "30 m"}, "overtime"),
    ({"overtime": ""}, "overtime"),
    ({"overtime": True}, "overtime"),
    ({"overtime": None}, "overtime"),
    ({"off": False}, "off"),
    ({"off": "yes"}, "off"),
    ({"auto": 1}, "auto"),
    ({"debug": "25:00"}, "debug"),
    ({"debug": 130}, "debug"),
    ({"debug": ""}, "debug"),
    ({"debug": " 01:30"}, "debug"),
    ({"overtime": "30m", "off": True}, "overtime"),
    ({"debug": "01:30", "duration": 0}, "duration"),
    ({"debug": "01:30", "duration": 1441}, "duration"),
    ({"debug": "01:30", "duration": "an hour"}, "duration"),
    ({"debug": "01:30", "duration": 1.5}, "duration"),
    ({"debug": "01:30", "duration": None}, "duration"),
    ({"duration": "1h"}, "duration"),
    ({"overtime": "30m", "duration": "1h"}, "duration"),
]


@pytest.mark.parametrize(
    ("body", "field", "status"),
    [(*case, 400) for case in BAD_OVERRIDES] + [(*case, 422) for case in UNPROCESSABLE_OVERRIDES],
)
def test_bad_overrides_are_named_and_change_nothing(
    api: Any, clock: FrozenClock, body: dict[str, Any], field: str, status: int
) -> None:
    clock.set(local("2026-09-30 03:10"))
    override(api, {"overtime": "10m"})
    before = stored(api.user)
    response = api.post(OVERRIDES, body)
    assert response.status_code == status, response.content
    data = response.json()
    assert data["error"] == ("invalid" if status == 400 else "unprocessable")
    assert data["fields"][field]
    assert stored(api.user) == before
    assert state(api)["overtime_left"] == 600


@pytest.mark.parametrize(
    "raw", ["", "{nope", "[]", '["overtime", "30m"]', "{}", '{"off": true, "auto": true}']
)
def test_override_body_must_be_one_verb_in_an_object(api: Any, raw: str) -> None:
    response = api.post(OVERRIDES, raw=raw)
    assert response.status_code == 400
    assert response.json()["fields"]
    assert not Override.objects.filter(user=api.user).exists()


def test_overtime_accepts_the_documented_durations(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-30 03:10"))
    for text, seconds in [("30m", 1800), ("2h", 7200), ("90s", 90), ("45", 2700), (15, 900)]:
        assert override(api, {"overtime": text})["overtime_left"] == seconds


# -- expiry, driven by explicit instants through the selectors ----------------


def test_an_overtime_whose_end_has_passed_is_not_in_force(user: Any) -> None:
    start = local("2026-09-30 03:10")
    override_apply(user=user, command=from_words(["overtime", "30m"]), now=start)

    during, _ = verdict_for(user_id=user.pk, now=start + timedelta(minutes=29))
    assert during.override == "overtime"
    assert during.state.value == "on-duty"

    after, _ = verdict_for(user_id=user.pk, now=start + timedelta(minutes=30))
    assert after.override is None
    assert after.state.value == "lights-out"
    late = state_payload(user_id=user.pk, now=start + timedelta(hours=1))
    assert late["overtime_left"] is None
    assert late["state"] == "lights-out"


def test_a_forced_off_ends_at_wake_up(user: Any) -> None:
    start = local("2026-09-29 20:00")
    override_apply(user=user, command=from_words(["off"]), now=start)
    assert state_payload(user_id=user.pk, now=local("2026-09-29 21:00"))["forced"] is True
    assert state_payload(user_id=user.pk, now=local("2026-09-30 09:00"))["forced"] is False


def test_off_never_lasts_forever_without_a_night(user: Any) -> None:
    from curfew_core.services.schedules import schedule_update

    schedule_update(user=user, changes={"enabled": False}, source="test")
    start = local("2026-09-29 20:00")
    row = override_apply(user=user, command=from_words(["off"]), now=start)
    assert row.forced_off_until is not None
    assert start < row.forced_off_until <= start + timedelta(hours=48)
