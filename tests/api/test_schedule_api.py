"""GET/PATCH /api/v1/schedule: every setting, optimistic concurrency, and bad
input that is named, answered with 400 and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_core.models import ScheduleRevision
from curfew_core.schedules.config import DEFAULTS, FIELDS
from tests.api.conftest import stored

SCHEDULE = "/api/v1/schedule"


def current(api: Any) -> dict[str, Any]:
    response = api.get(SCHEDULE)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def patch_ok(api: Any, changes: dict[str, Any]) -> dict[str, Any]:
    response = api.patch(SCHEDULE, changes)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.django_db
def test_get_returns_every_setting_and_a_version(api: Any) -> None:
    body = current(api)
    assert set(body) == {*FIELDS, "version"}
    assert {key: body[key] for key in FIELDS} == DEFAULTS
    assert isinstance(body["version"], int)


@pytest.mark.django_db
def test_the_version_a_new_user_is_given_is_accepted(api: Any) -> None:
    """A fresh user's first save, sending back the version GET gave, must not be a 409."""
    version = current(api)["version"]
    body = patch_ok(api, {"wake_up": "08:30", "version": version})
    assert body["wake_up"] == "08:30"
    assert body["version"] == version + 1


@pytest.mark.django_db
def test_partial_patch_persists_and_bumps_the_version(api: Any) -> None:
    before = current(api)
    body = patch_ok(api, {"wake_up": "08:30", "off_duty_reply": "…", "version": before["version"]})
    assert body["version"] == before["version"] + 1
    assert body["wake_up"] == "08:30"
    assert body["off_duty_reply"] == "…"
    others = set(FIELDS) - {"wake_up", "off_duty_reply"}
    assert {k: body[k] for k in others} == {k: before[k] for k in others}
    # Persisted: a fresh read and the database agree.
    assert current(api) == body
    row = stored(api.user)
    assert row["config"]["wake_up"] == "08:30"
    assert row["version"] == body["version"]


@pytest.mark.django_db
def test_patch_without_version_is_last_writer_wins(api: Any) -> None:
    first = patch_ok(api, {"curve": "step"})
    second = patch_ok(api, {"curve": "ease_in"})
    assert second["version"] == first["version"] + 1
    assert second["curve"] == "ease_in"


@pytest.mark.django_db
def test_a_patch_that_changes_nothing_keeps_the_version(api: Any) -> None:
    version = patch_ok(api, {"curve": "step"})["version"]
    again = patch_ok(api, {"curve": "step", "version": version})
    assert again["version"] == version


@pytest.mark.django_db
def test_stale_version_gets_409_and_changes_nothing(api: Any) -> None:
    v1 = current(api)["version"]
    patch_ok(api, {"wake_up": "08:00", "version": v1})
    before = stored(api.user)
    response = api.patch(SCHEDULE, {"wake_up": "07:00", "version": v1})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "stale_version"
    assert "version" in body["fields"]
    assert stored(api.user) == before
    assert current(api)["wake_up"] == "08:00"


@pytest.mark.django_db
def test_two_editors_with_the_same_version_never_lose_an_update(api: Any) -> None:
    """Two tabs load the same version; the second save is refused, not merged over."""
    version = current(api)["version"]
    first = api.patch(
        SCHEDULE, {"lights_out": "02:30", "anchors": [["23:00", 900]], "version": version}
    )
    second = api.patch(SCHEDULE, {"tired_persona": "sleepy", "version": version})
    assert first.status_code == 200
    assert second.status_code == 409
    body = current(api)
    assert body["lights_out"] == "02:30"
    assert body["tired_persona"] == DEFAULTS["tired_persona"]
    assert body["version"] == version + 1
    # The loser reloads and retries: now it lands, on top of the winner's change.
    retry = patch_ok(api, {"tired_persona": "sleepy", "version": body["version"]})
    assert retry["lights_out"] == "02:30"
    assert retry["tired_persona"] == "sleepy"


@pytest.mark.django_db
def test_night_and_anchors_change_together(api: Any) -> None:
    new_night = {
        "curfew_start": "22:00",
        "lights_out": "01:00",
        "wake_up": "07:00",
        "anchors": [["22:00", 3000], ["01:00", 100]],
    }
    # Control: the same anchors alone fall outside today's 23:00-03:00 window.
    alone = api.patch(SCHEDULE, {"anchors": new_night["anchors"]})
    assert alone.status_code == 422  # well-formed; a rule between settings refuses it
    assert "anchors" in alone.json()["fields"]
    body = patch_ok(api, new_night)
    assert {k: body[k] for k in new_night} == new_night
    verdict = api.post("/api/v1/verdict", {"at": "2026-09-29T22:00:00+08:00"}).json()
    assert verdict["state"] == "winding"
    assert verdict["max_tokens"] == 3000


@pytest.mark.django_db
def test_anchors_are_stored_in_window_order(api: Any) -> None:
    body = patch_ok(api, {"anchors": [["01:00", 800], ["23:00", 2048], ["00:00", 1600]]})
    assert body["anchors"] == [["23:00", 2048], ["00:00", 1600], ["01:00", 800]]


@pytest.mark.django_db
def test_whole_number_floats_are_budgets_but_fractions_are_not(api: Any) -> None:
    assert patch_ok(api, {"safety_max_tokens": 512.0})["safety_max_tokens"] == 512
    assert api.patch(SCHEDULE, {"safety_max_tokens": 512.5}).status_code == 400


@pytest.mark.django_db
def test_every_setting_can_be_changed_through_the_api(api: Any) -> None:
    changes = {
        "enabled": False,
        "timezone": "America/New_York",
        "wake_up": "08:00",
        "curfew_start": "22:00",
        "lights_out": "02:00",
        "weekdays": {"fri": {"curfew_start": "23:30"}, "sat": {"lights_out": "03:00"}},
        "anchors": [["22:00", 4000], ["02:00", 100]],
        "curve": "ease_in",
        "peak_shift": False,
        "peak_windows": [["10:00", "11:30"]],
        "weekend_valley": False,
        "holiday_calendar": "US-CA",
        "extra_holidays": ["2026-12-24"],
        "extra_workdays": ["2026-12-26"],
        "off_duty_reply": "busy",
        "lights_out_reply": "asleep",
        "tired_persona": "You are tired.",
        "tier_texts": ["short", "shorter"],
        "deny_tools_when_off_duty": False,
        "apply_to_subagents": False,
        "winding_reasoning_effort": "minimal",
        "dry_run": True,
        "safety_max_tokens": 4096,
        "exempt_sessions": ["a", "b"],
        "exempt_purposes": ["compaction", "nightly-backup"],
    }
    assert set(changes) == set(FIELDS)  # this test keeps up with new settings
    body = patch_ok(api, changes)
    assert {k: body[k] for k in FIELDS} == changes
    assert {k: v for k, v in current(api).items() if k != "version"} == changes


@pytest.mark.django_db
def test_holiday_calendar_can_be_switched_off(api: Any) -> None:
    national_day = {"at": "2026-10-01T10:00:00+08:00"}
    assert api.post("/api/v1/verdict", national_day).json()["state"] == "on-duty"
    assert patch_ok(api, {"holiday_calendar": None})["holiday_calendar"] is None
    assert api.post("/api/v1/verdict", national_day).json()["state"] == "off-duty"


# -- bad input: 400 (the schema refuses it) or 422 (well-formed, but a rule no
# schema states refuses it), the field named, nothing changed ----------------

#: Well-formed by the OpenAPI document, refused by a rule it cannot state.
UNPROCESSABLE = [
    ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
    ({"holiday_calendar": "XX"}, "holiday_calendar"),
    ({"holiday_calendar": "US-ZZ"}, "holiday_calendar"),
    ({"anchors": [["12:00", 100]]}, "anchors"),  # outside 23:00-03:00
    ({"anchors": [["23:00", 2048], ["23:00", 1000]]}, "anchors"),
    # The night may not last over 24 hours, whichever time made it so.
    ({"wake_up": "01:00"}, "wake_up"),
    ({"curfew_start": "04:00"}, "curfew_start"),
    ({"weekdays": {"fri": {"wake_up": "02:00"}}}, "weekdays"),
]

BAD_INPUT = [
    ({"curfew_start": "25:00"}, "curfew_start"),
    ({"wake_up": "9:5"}, "wake_up"),
    ({"lights_out": "3:00"}, "lights_out"),
    ({"lights_out": 3}, "lights_out"),
    ({"timezone": ""}, "timezone"),
    ({"anchors": []}, "anchors"),
    ({"anchors": [["23:00", -1]]}, "anchors"),
    ({"anchors": [["23:00", 0]]}, "anchors"),
    ({"anchors": [["23:00", 20.5]]}, "anchors"),
    ({"anchors": [["23:00", True]]}, "anchors"),
    ({"anchors": [["23:00", "2048"]]}, "anchors"),
    ({"anchors": [["23:00"]]}, "anchors"),
    ({"anchors": "23:00=2048"}, "anchors"),
    ({"safety_max_tokens": -1}, "safety_max_tokens"),
    ({"safety_max_tokens": 300.5}, "safety_max_tokens"),
    ({"safety_max_tokens": True}, "safety_max_tokens"),
    ({"safety_max_tokens": 255}, "safety_max_tokens"),  # below the floor
    ({"safety_max_tokens": 16}, "safety_max_tokens"),
    ({"curve": "cubic"}, "curve"),
    ({"curve": "easeIn"}, "curve"),
    ({"bedtime": "22:00"}, "bedtime"),
    ({"weekdays": {"funday": {"curfew_start": "00:30"}}}, "weekdays"),
    ({"weekdays": {"fri": {"bedtime": "00:30"}}}, "weekdays"),
    ({"weekdays": {"fri": {"curfew_start": "24:30"}}}, "weekdays"),
    ({"weekdays": ["fri"]}, "weekdays"),
    ({"peak_windows": [["09:00"]]}, "peak_windows"),
    ({"peak_windows": [["09:00", "12:60"]]}, "peak_windows"),
    ({"extra_holidays": ["2026-13-01"]}, "extra_holidays"),
    ({"extra_holidays": "2026-10-09"}, "extra_holidays"),
    ({"tier_texts": []}, "tier_texts"),
    ({"tier_texts": ["ok", ""]}, "tier_texts"),
    ({"off_duty_reply": ""}, "off_duty_reply"),
    ({"lights_out_reply": "   "}, "lights_out_reply"),
    ({"enabled": "yes"}, "enabled"),
    ({"dry_run": 1}, "dry_run"),
    ({"winding_reasoning_effort": "max"}, "winding_reasoning_effort"),
    ({"exempt_sessions": "abc"}, "exempt_sessions"),
    ({"exempt_sessions": [""]}, "exempt_sessions"),
    ({"version": "3", "curve": "step"}, "version"),
    ({"version": True, "curve": "step"}, "version"),
    ({"version": None, "curve": "step"}, "version"),
    ({"version": -1, "curve": "step"}, "version"),
    ({"version": 2.5, "curve": "step"}, "version"),
    ({"exempt_sessions": ["  "]}, "exempt_sessions"),
    ({"exempt_sessions": ["x" * 201]}, "exempt_sessions"),
    ({"timezone": "x" * 65}, "timezone"),
    ({"holiday_calendar": "x" * 65}, "holiday_calendar"),
    ({"extra_holidays": ["2026-W40-2"]}, "extra_holidays"),
    ({"extra_holidays": ["0000-01-01"]}, "extra_holidays"),
    ({"curfew_start": "23:00\n"}, "curfew_start"),
    ({"curfew_start": "2\u0663:00"}, "curfew_start"),  # an Arabic-Indic digit
    ({"tier_texts": ["\x1c"]}, "tier_texts"),  # blank to str.strip
    ({"anchors": [[2048, "23:00"]]}, "anchors"),
    ({"winding_reasoning_effort": 0}, "winding_reasoning_effort"),
    ({"exempt_purposes": "title"}, "exempt_purposes"),
    ({"exempt_purposes": [""]}, "exempt_purposes"),
    ({"exempt_purposes": ["ti tle"]}, "exempt_purposes"),
    ({"exempt_purposes": [" title"]}, "exempt_purposes"),
    ({"exempt_purposes": ["-title"]}, "exempt_purposes"),
    ({"exempt_purposes": ["title\n"]}, "exempt_purposes"),
    ({"exempt_purposes": ["t\u00edtulo"]}, "exempt_purposes"),  # not ASCII
    ({"exempt_purposes": ["\u212a"]}, "exempt_purposes"),  # lower() would make it "k"
    ({"exempt_purposes": ["x" * 65]}, "exempt_purposes"),
    ({"exempt_purposes": [f"p{n}" for n in range(33)]}, "exempt_purposes"),
    ({"exempt_purposes": ["title", 7]}, "exempt_purposes"),
    ({"exempt_purposes": ["ti\x00tle"]}, "exempt_purposes"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "status"),
    [(*case, 400) for case in BAD_INPUT] + [(*case, 422) for case in UNPROCESSABLE],
)
def test_bad_input_is_named_and_changes_nothing(
    api: Any, changes: dict[str, Any], field: str, status: int
) -> None:
    saved = patch_ok(api, {"curve": "step"})  # a real saved schedule to protect
    before_db = stored(api.user)
    response = api.patch(SCHEDULE, {**changes, "version": changes.get("version", saved["version"])})
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == ("invalid" if status == 400 else "unprocessable")
    assert field in body["fields"], body
    assert isinstance(body["fields"][field], str)
    assert body["fields"][field]
    assert field in body["message"]
    assert stored(api.user) == before_db
    assert current(api) == saved


@pytest.mark.django_db
def test_valid_changes_next_to_a_bad_one_are_not_half_applied(api: Any) -> None:
    before = current(api)
    response = api.patch(SCHEDULE, {"wake_up": "08:00", "curve": "cubic", "timezone": "Nowhere"})
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"curve", "timezone"}
    assert current(api) == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "JSON"),
        ("[1, 2]", "object"),
        ('"text"', "object"),
        ("", "empty"),
        ("null", "object"),
    ],
)
def test_body_must_be_a_json_object(api: Any, raw: str, problem: str) -> None:
    patch_ok(api, {"curve": "step"})
    before = stored(api.user)
    response = api.patch(SCHEDULE, raw=raw)
    assert response.status_code == 400
    assert problem in response.json()["fields"]["body"]
    assert stored(api.user) == before


@pytest.mark.django_db
def test_other_methods_are_refused(api: Any) -> None:
    response = api.post(SCHEDULE, {"curve": "step"})
    assert response.status_code == 405
    assert current(api)["curve"] == "linear"


# -- revisions: nothing a user saved is lost ---------------------------------


@pytest.mark.django_db
def test_every_save_keeps_a_revision(api: Any) -> None:
    saves = [{"curve": "step"}, {"wake_up": "08:00"}, {"curve": "ease_in"}]
    results = [patch_ok(api, change) for change in saves]
    revisions = list(ScheduleRevision.objects.filter(schedule__user=api.user).order_by("version"))
    # What was there before the first save, then one per save, in order.
    assert [r.source for r in revisions] == ["initial", "api", "api", "api"]
    assert [r.version for r in revisions] == [
        results[0]["version"] - 1,
        *(r["version"] for r in results),
    ]
    assert {k: revisions[0].config[k] for k in FIELDS} == DEFAULTS
    for revision, result in zip(revisions[1:], results, strict=True):
        # The settings as the API showed them, and the curve's places beside them.
        assert revision.config == {
            **{k: result[k] for k in FIELDS},
            "anchor_positions": ["0", "1/4", "1/2", "3/4", "1"],
        }


@pytest.mark.django_db
def test_refused_saves_leave_no_revision(api: Any) -> None:
    patch_ok(api, {"curve": "step"})
    count = ScheduleRevision.objects.count()
    api.patch(SCHEDULE, {"curve": "cubic"})
    api.patch(SCHEDULE, {"curve": "ease_in", "version": 1_000})
    assert ScheduleRevision.objects.count() == count


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sent", "stored_as"),
    [
        ("cn", "CN"),
        ("us-ca", "US-CA"),
        ("BE-flemish", "BE-Flemish"),
        ("de-Augsburg", "DE-Augsburg"),
    ],
)
def test_holiday_calendars_are_stored_in_the_packages_spelling(
    api: Any, sent: str, stored_as: str
) -> None:
    """Subdivisions are codes or names; both are found whatever their case."""
    assert patch_ok(api, {"holiday_calendar": sent})["holiday_calendar"] == stored_as
    assert api.post("/api/v1/verdict", {"at": "2026-09-29T10:00:00+08:00"}).status_code == 200


@pytest.mark.django_db
def test_malformed_is_400_even_with_a_stale_version(api: Any) -> None:
    saved = patch_ok(api, {"curve": "step"})
    stale = saved["version"] - 1
    # Control: well-formed with the stale version is the 409.
    assert api.patch(SCHEDULE, {"curve": "linear", "version": stale}).status_code == 409
    response = api.patch(SCHEDULE, {"curve": "cubic", "version": stale})
    assert response.status_code == 400
    assert "curve" in response.json()["fields"]
