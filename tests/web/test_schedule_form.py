"""The schedule form: every setting round-trips, saves go through the one
validation layer, bad input and stale forms change nothing."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from curfew_core import schedule_config
from curfew_core.models import Schedule, ScheduleRevision
from curfew_core.services.schedules import schedule_update
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields, set_rows


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/").content.decode(), "schedule-form")


def _saved(user: User) -> tuple[dict[str, Any], int]:
    row = Schedule.objects.get(user=user)
    return schedule_config.with_defaults(row.config), row.version


def test_form_holds_every_setting(page: PageClient) -> None:
    names = {name for name, _ in _form(page)}
    for key in schedule_config.FIELDS:
        if key in ("anchors", "peak_windows", "weekdays"):
            continue
        if key in (
            "enabled",
            "peak_shift",
            "weekend_valley",
            "deny_tools_when_off_duty",
            "apply_to_subagents",
        ):
            assert key in names, f"checkbox {key} is not checked by default or missing"
        elif key != "dry_run":
            assert key in names, f"setting {key} has no field"
    assert {"anchors-0-time", "anchors-0-tokens", "anchors-TOTAL_FORMS", "version"} <= names
    assert {"peak-0-start", "peak-0-end", "peak-TOTAL_FORMS"} <= names
    assert {
        f"wd_{day}_{k}" for day in schedule_config.WEEKDAYS for k in schedule_config.NIGHT_KEYS
    } <= names


def test_unchanged_form_round_trips_to_the_same_config(page: PageClient, user: User) -> None:
    schedule_update(
        user=user,
        changes={
            "weekdays": {"fri": {"curfew_start": "00:30", "lights_out": "04:00"}},
            "extra_holidays": ["2026-12-24"],
            "exempt_sessions": ["s-1", "s 2"],
            "safety_max_tokens": 512,
            "winding_reasoning_effort": "low",
            "curve": "ease_in",
            "holiday_calendar": "US-CA",
            "dry_run": True,
            "tired_persona": "  spaced  ",
        },
        source="test",
    )
    before, version = _saved(user)
    response = page.post("/schedule/", as_post(_form(page)))
    assert response.status_code == 302
    after, version_after = _saved(user)
    assert after == before
    assert version_after == version
    assert "Nothing changed" in page.get("/").content.decode()


def test_save_changes_the_schedule_through_the_form_source(page: PageClient, user: User) -> None:
    fields = _form(page)
    data = as_post(fields, curfew_start="22:30", off_duty_reply="Busy.", dry_run="on")
    data["wd_sat_lights_out"] = "04:30"
    response = page.post("/schedule/", data)
    assert response.status_code == 302
    assert response["Location"] == "/"
    config, version = _saved(user)
    assert config["curfew_start"] == "22:30"
    assert config["off_duty_reply"] == "Busy."
    assert config["dry_run"] is True
    assert config["weekdays"] == {"sat": {"lights_out": "04:30"}}
    assert version == 1
    assert ScheduleRevision.objects.filter(schedule__user=user, source="form").count() == 1
    html = page.get("/").content.decode()
    assert "version 1" in html
    assert 'value="22:30"' in html


def test_unchecking_a_box_is_saved_as_false(page: PageClient, user: User) -> None:
    data = as_post(_form(page), weekend_valley=None)
    page.post("/schedule/", data)
    assert _saved(user)[0]["weekend_valley"] is False


def test_anchor_rows_add_remove_and_come_back_sorted(page: PageClient, user: User) -> None:
    data = as_post(_form(page))
    # Remove 00:00 (clear the row), add 23:30 at the end (the spare row).
    set_rows(
        data,
        "anchors",
        time=["23:00", "", "01:00", "02:00", "03:00", "23:30"],
        tokens=["2048", "", "800", "320", "64", "1900"],
    )
    assert page.post("/schedule/", data).status_code == 302
    anchors = _saved(user)[0]["anchors"]
    assert anchors == [
        ["23:00", 2048],
        ["23:30", 1900],
        ["01:00", 800],
        ["02:00", 320],
        ["03:00", 64],
    ]


def test_bad_time_rerenders_with_the_field_error_and_saves_nothing(
    page: PageClient, user: User
) -> None:
    page.post("/schedule/", as_post(_form(page), curfew_start="22:00"))
    before, version = _saved(user)
    response = page.post(
        "/schedule/", as_post(_form(page), curfew_start="25:00", off_duty_reply="changed too")
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="err-curfew_start" aria-live="polite">&#x27;25:00&#x27; is not a time' in html
    assert "Nothing was saved" in html
    # What was typed is kept for fixing, not thrown away.
    assert 'value="25:00"' in html
    assert 'value="changed too"' in html
    assert _saved(user) == (before, version)


def test_bad_anchor_row_is_flagged_in_place(page: PageClient, user: User) -> None:
    data = as_post(_form(page))
    set_rows(
        data,
        "anchors",
        time=["23:00", "00:00", "9:5", "02:00", "03:00"],
        tokens=["2048", "lots", "800", "320", "64"],
    )
    response = page.post("/schedule/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert (
        "must be a whole number of tokens, not &#x27;lots&#x27;"
        in html.split('id="anchor-msg-1"')[1].split("</span>")[0]
    )
    assert "&#x27;9:5&#x27; is not a time" in html.split('id="anchor-msg-2"')[1].split("</span>")[0]
    assert html.split('id="anchor-msg-0"')[1].split("</span>")[0].endswith(">")
    assert not Schedule.objects.filter(user=user).exists()


def test_whole_config_error_lands_on_its_field(page: PageClient, user: User) -> None:
    data = as_post(_form(page))
    set_rows(data, "anchors", time=["23:00", "05:00"], tokens=["2048", "64"])
    html = page.post("/schedule/", data).content.decode()
    assert "outside the curfew window" in html.split('id="anchor-msg-1"')[1].split("</span>")[0]


def test_stale_form_says_so_and_overwrites_nothing(page: PageClient, user: User) -> None:
    stale = _form(page)  # as loaded: never saved
    schedule_update(user=user, changes={"wake_up": "08:00"}, expected_version=0, source="api")
    before, version = _saved(user)
    response = page.post("/schedule/", as_post(stale, curfew_start="21:00"))
    assert response.status_code == 409
    html = response.content.decode()
    assert "Someone else saved this schedule" in html
    assert "Changed meanwhile: Wake-up" in html
    assert _saved(user) == (before, version)
    assert before["wake_up"] == "08:00"
    # Their typing survives, and the next Save is a deliberate one on version 1.
    fields = form_fields(html, "schedule-form")
    assert ("curfew_start", "21:00") in fields
    assert ("version", "1") in fields


def test_missing_version_is_treated_as_stale(page: PageClient, user: User) -> None:
    response = page.post("/schedule/", as_post(_form(page), version=None, curfew_start="21:00"))
    assert response.status_code == 409
    assert not Schedule.objects.filter(user=user).exists()


def test_persona_preset_without_script_fills_in_but_does_not_save(
    page: PageClient, user: User
) -> None:
    response = page.post("/schedule/", as_post(_form(page), persona_preset="en"))
    assert response.status_code == 200
    persona, tiers = schedule_config.PERSONA_PRESETS["en"]
    fields = dict(form_fields(response.content.decode(), "schedule-form"))
    assert fields["tired_persona"] == persona
    assert fields["tier_texts"].splitlines() == list(tiers)
    assert not Schedule.objects.filter(user=user).exists()


def test_a_refused_form_comes_back_with_a_spare_row_to_add_to(page: PageClient) -> None:
    data = as_post(_form(page))
    # Every row used, the last one wrong: the page keeps them and adds a blank one.
    set_rows(data, "anchors", time=["23:00", "05:00"], tokens=["2048", "64"])
    fields = form_fields(page.post("/schedule/", data).content.decode(), "schedule-form")
    assert ("anchors-TOTAL_FORMS", "3") in fields
    assert ("anchors-1-time", "05:00") in fields
    assert ("anchors-2-time", "") in fields
