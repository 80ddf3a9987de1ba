"""PATCH /api/v1/schedule and the night (issue 25): moving curfew start or
lights-out moves the curve with it, a save's problems all come back at once
(each under its field), and what was stored before decides as it did."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.api.conftest import local, stored

SCHEDULE = "/api/v1/schedule"
VERDICT = "/api/v1/verdict"
#: The default curve (23:00-03:00, 2048 -> 64) over 22:30-01:00.
STRETCHED = [["22:30", 2048], ["23:08", 1600], ["23:45", 800], ["00:23", 320], ["01:00", 64]]


def _budget(api: Any, moment: str) -> Any:
    body = api.post(VERDICT, {"at": local(moment).isoformat()}).json()
    return body["max_tokens"] if body["action"] == "clamp" else body["state"]


def _night(api: Any, start: str = "2026-09-29 22:00", hours: int = 12) -> list[Any]:
    """The verdict every 10 minutes through a night."""
    first = local(start)
    return [
        api.post(VERDICT, {"at": (first + timedelta(minutes=10 * step)).isoformat()}).json()[
            "max_tokens"
        ]
        for step in range(hours * 6)
    ]


@pytest.mark.django_db
def test_two_times_move_the_night_in_one_patch_and_the_curve_follows(api: Any) -> None:
    response = api.patch(SCHEDULE, {"curfew_start": "22:30", "lights_out": "01:00"})
    assert response.status_code == 200, response.content
    assert response.json()["anchors"] == STRETCHED
    assert stored(api.user)["config"]["anchors"] == STRETCHED
    assert _budget(api, "2026-09-29 22:30") == 2048
    assert _budget(api, "2026-09-29 23:45") == 800
    assert _budget(api, "2026-09-30 00:59") < 100
    assert _budget(api, "2026-09-30 01:00") == "lights-out"


@pytest.mark.django_db
def test_anchors_sent_with_the_times_are_placed_as_sent(api: Any) -> None:
    """Control for the stretch: sent anchors are hand-placed, and checked."""
    mine = [["22:30", 3000], ["00:00", 900], ["01:00", 100]]
    response = api.patch(
        SCHEDULE, {"curfew_start": "22:30", "lights_out": "01:00", "anchors": mine}
    )
    assert response.status_code == 200
    assert response.json()["anchors"] == mine
    # Changed anchors with a new lights-out are checked against it, not moved.
    changed = [*mine[:2], ["01:00", 50]]
    refused = api.patch(SCHEDULE, {"lights_out": "00:30", "anchors": changed})
    assert refused.status_code == 422
    assert "01:00 is outside" in refused.json()["fields"]["anchors"]
    # The same anchors sent unchanged are the curve as it was: it follows.
    follows = api.patch(SCHEDULE, {"lights_out": "00:30", "anchors": mine})
    assert follows.status_code == 200
    assert follows.json()["anchors"] == [
        ["22:30", 3000],
        ["23:42", 900],
        ["00:30", 100],
    ]  # 0.6 of the window


@pytest.mark.django_db
def test_every_problem_of_a_save_comes_back_in_one_422(api: Any) -> None:
    before = stored(api.user)
    response = api.patch(
        SCHEDULE,
        {
            "curfew_start": "22:30",
            "lights_out": "01:00",
            "anchors": [["22:30", 2048], ["02:00", 900], ["03:30", 100]],
            "weekdays": {"fri": {"curfew_start": "20:00", "lights_out": "19:00"}},
            "timezone": "Mars/Olympus_Mons",
        },
    )
    assert response.status_code == 422
    fields = response.json()["fields"]
    assert set(fields) == {"anchors", "weekdays", "timezone"}
    assert "row 2: 02:00 is outside" in fields["anchors"]
    assert "row 3: 03:30 is outside" in fields["anchors"]
    assert "row 1" not in fields["anchors"]
    assert fields["weekdays"].startswith("fri: ")
    assert stored(api.user) == before


@pytest.mark.django_db
def test_every_bad_anchor_row_comes_back_in_one_400(api: Any) -> None:
    response = api.patch(SCHEDULE, {"anchors": [["23:00", 0], ["25:00", 10], ["01:00", 5]]})
    assert response.status_code == 400
    message = response.json()["fields"]["anchors"]
    assert "row 1:" in message
    assert "row 2:" in message
    assert "row 3" not in message


@pytest.mark.django_db
def test_a_malformed_patch_names_the_rule_problems_against_the_stored_night(api: Any) -> None:
    """A 400 also names the rule problems, read against the stored night (an
    anchor at 04:30 is fine in a stored 02:00-05:00 window, though outside
    the default one)."""
    night = {"curfew_start": "02:00", "lights_out": "05:00", "wake_up": "10:00"}
    assert api.patch(SCHEDULE, night).status_code == 200
    inside = api.patch(SCHEDULE, {"enabled": "yes", "anchors": [["02:00", 900], ["04:30", 10]]})
    assert inside.status_code == 400
    assert set(inside.json()["fields"]) == {"enabled"}
    outside = api.patch(SCHEDULE, {"enabled": "yes", "anchors": [["02:00", 900], ["06:00", 10]]})
    assert outside.status_code == 400
    assert set(outside.json()["fields"]) == {"enabled", "anchors"}
    assert "06:00 is outside the wind-down 02:00–05:00" in outside.json()["fields"]["anchors"]


@pytest.mark.django_db
def test_a_stored_curve_decides_the_same_after_saves_that_do_not_move_its_window(
    api: Any,
) -> None:
    """What a user saved is never lost: hand-placed clock-time anchors stay
    byte for byte through saves of other settings (the wake-up, a reply) and
    of the same night times, and every verdict through the night is the same."""
    mine = {
        "curfew_start": "21:50",
        "lights_out": "02:10",
        "anchors": [["21:50", 4000], ["22:07", 3999], ["01:13", 65], ["02:10", 700]],
        "curve": "ease_in",
    }
    assert api.patch(SCHEDULE, mine).status_code == 200
    decided = _night(api)
    for change in (
        {"wake_up": "07:40"},
        {"off_duty_reply": "Later."},
        {"curfew_start": "21:50", "lights_out": "02:10"},
    ):
        response = api.patch(SCHEDULE, change)
        assert response.status_code == 200
        assert response.json()["anchors"] == mine["anchors"]
    assert _night(api) == decided


@pytest.mark.django_db
def test_the_document_says_problems_come_at_once_and_the_curve_follows(api: Any) -> None:
    patch = api.get("/api/v1/openapi.json").json()["paths"]["/schedule"]["patch"]
    assert "Every problem of a save comes back at once" in patch["description"]
    assert "moves the curve with the night" in patch["description"]


@pytest.mark.django_db
def test_a_row_that_does_not_read_hides_no_other_rows_problem(api: Any) -> None:
    """Row 1 is no row at all; rows 2 and 3 read, and row 3 is outside the
    night being saved. All of it comes back at once, with the other field's."""
    before = stored(api.user)
    response = api.patch(
        SCHEDULE,
        {
            "lights_out": "01:00",
            "anchors": [None, ["23:30", 900], ["05:00", 10]],
            "tired_persona": 5,
        },
    )
    assert response.status_code == 400
    fields = response.json()["fields"]
    assert set(fields) == {"anchors", "tired_persona"}
    assert fields["anchors"].startswith('row 1 must be ["HH:MM", tokens], not None; ')
    assert fields["anchors"].endswith("row 3: 05:00 is outside the wind-down 23:00–01:00")
    assert "row 2" not in fields["anchors"]
    assert stored(api.user) == before
    # The control group: the same readable rows alone are fine in that night.
    good = api.patch(SCHEDULE, {"lights_out": "01:00", "anchors": [["23:30", 900], ["01:00", 10]]})
    assert good.status_code == 200, good.content
