"""The section forms: every setting round-trips through its own section
(Schedule or Replies & persona), saves go through the one validation layer,
a section never touches another's settings, bad input and stale forms change
nothing."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User

from curfew_core.models import Schedule, ScheduleRevision
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import values as schedule_values
from curfew_core.services.schedules import schedule_update
from curfew_core.web.schedule.keys import ACCOUNT_KEYS, REPLIES_KEYS, SCHEDULE_KEYS
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields, set_rows

#: Settings with widgets of their own (row tables, per-weekday boxes).
ROWS = ("anchors", "peak_windows", "weekdays")
#: Checkboxes that are off by default (a browser posts nothing for them).
OFF_BY_DEFAULT = ("dry_run",)


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/schedule/").content.decode(), "schedule-form")


def _replies(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/replies/").content.decode(), "replies-form")


def _saved(user: User) -> tuple[dict[str, Any], int]:
    row = Schedule.objects.get(user=user)
    return schedule_config.with_defaults(row.config), row.version


def test_the_sections_split_every_setting_between_them() -> None:
    assert set(schedule_config.FIELDS) == SCHEDULE_KEYS | REPLIES_KEYS | ACCOUNT_KEYS
    assert not SCHEDULE_KEYS & REPLIES_KEYS
    assert not (SCHEDULE_KEYS | REPLIES_KEYS) & ACCOUNT_KEYS
    assert "dry_run" in REPLIES_KEYS
    assert "curfew_start" in SCHEDULE_KEYS


def test_each_form_holds_its_own_settings_and_no_other(page: PageClient) -> None:
    schedule = {name for name, _ in _form(page)}
    replies = {name for name, _ in _replies(page)}
    for key in schedule_config.FIELDS:
        if key in ROWS or key in OFF_BY_DEFAULT:
            continue
        if key in ACCOUNT_KEYS:  # the time zone: on Account only
            assert key not in schedule, key
            assert key not in replies, key
            continue
        mine, other = (schedule, replies) if key in SCHEDULE_KEYS else (replies, schedule)
        assert key in mine, f"setting {key} has no field (or its box is not checked by default)"
        assert key not in other, f"setting {key} is on the wrong section's form"
    assert {"anchors-0-time", "anchors-0-tokens", "anchors-TOTAL_FORMS", "version"} <= schedule
    assert {"peak-0-start", "peak-0-end", "peak-TOTAL_FORMS"} <= schedule
    assert {
        f"wd_{day}_{k}" for day in schedule_values.WEEKDAYS for k in schedule_values.NIGHT_KEYS
    } <= schedule
    assert "version" in replies
    assert not {name for name in replies if name.startswith(("anchors-", "peak-", "wd_"))}
    html = page.get("/replies/").content.decode()
    assert 'name="dry_run"' in html.split('id="replies-form"')[1]
    assert 'name="dry_run"' not in page.get("/schedule/").content.decode()


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
    for path, fields in (("/schedule/", _form(page)), ("/replies/", _replies(page))):
        response = page.post(path, as_post(fields))
        assert response.status_code == 302
        assert response["Location"] == path
        assert _saved(user) == (before, version)
        assert "Nothing changed, so nothing was saved." in page.get(path).content.decode()


def test_save_changes_the_schedule_through_the_form_source(page: PageClient, user: User) -> None:
    data = as_post(_form(page), curfew_start="22:30", night_days="custom")
    data["wd_sat_lights_out"] = "04:30"
    response = page.post("/schedule/", data)
    assert response.status_code == 302
    assert response["Location"] == "/schedule/"
    config, version = _saved(user)
    assert config["curfew_start"] == "22:30"
    assert config["weekdays"] == {"sat": {"lights_out": "04:30"}}
    assert version == 1
    html = page.get("/schedule/").content.decode()
    assert "Saved." in html
    assert 'value="22:30"' in html
    assert "Saved." not in page.get("/schedule/").content.decode()  # said once
    response = page.post("/replies/", as_post(_replies(page), off_duty_reply="Busy.", dry_run="on"))
    assert response.status_code == 302
    assert response["Location"] == "/replies/"
    config, version = _saved(user)
    assert config["off_duty_reply"] == "Busy."
    assert config["dry_run"] is True
    assert config["curfew_start"] == "22:30"
    assert version == 2
    assert ScheduleRevision.objects.filter(schedule__user=user, source="form").count() == 2
    assert 'value="Busy."' in page.get("/replies/").content.decode()


def test_a_schedule_save_never_changes_a_replies_setting(page: PageClient, user: User) -> None:
    # Every Replies setting away from its default, the boxes flipped both ways.
    replies = {
        "dry_run": True,
        "deny_tools_when_off_duty": False,
        "apply_to_subagents": False,
        "off_duty_reply": "Busy.",
        "lights_out_reply": "Asleep.",
        "tired_persona": "yawn",
        "tier_texts": ["a", "b"],
        "exempt_sessions": ["s-1"],
        "exempt_purposes": ["backup"],
        "safety_max_tokens": 512,
        "winding_reasoning_effort": "low",
    }
    assert set(replies) == REPLIES_KEYS  # a new Replies setting joins this test
    schedule_update(user=user, changes=replies, source="test")
    before, _ = _saved(user)
    # The Schedule form has no dry_run box: its absence must not read as "off".
    data = as_post(_form(page), curfew_start="22:15")
    assert "dry_run" not in data
    # Replies fields smuggled into a Schedule post are ignored too.
    data.update(off_duty_reply="hijacked", safety_max_tokens="7")
    assert page.post("/schedule/", data).status_code == 302
    after, _ = _saved(user)
    assert after["curfew_start"] == "22:15"
    assert {key: after[key] for key in REPLIES_KEYS} == {key: before[key] for key in REPLIES_KEYS}
    assert after["dry_run"] is True


def test_a_replies_save_never_changes_a_schedule_setting(page: PageClient, user: User) -> None:
    schedule_update(
        user=user,
        changes={
            "enabled": False,
            "peak_shift": False,
            "weekend_valley": False,
            "curfew_start": "21:45",
            "weekdays": {"fri": {"lights_out": "04:00"}},
            "anchors": [["21:45", 1000], ["01:00", 64]],
            "extra_holidays": ["2026-12-24"],
        },
        source="test",
    )
    before, _ = _saved(user)
    # The Replies form has no enabled/peak_shift/weekend_valley boxes nor rows.
    data = as_post(_replies(page), off_duty_reply="Busy.")
    assert not {"enabled", "peak_shift", "weekend_valley"} & set(data)
    data.update({"curfew_start": "20:00", "anchors-TOTAL_FORMS": "0", "timezone": "UTC"})
    assert page.post("/replies/", data).status_code == 302
    after, _ = _saved(user)
    assert after["off_duty_reply"] == "Busy."
    assert {key: after[key] for key in SCHEDULE_KEYS} == {key: before[key] for key in SCHEDULE_KEYS}
    assert after["enabled"] is False


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
    response = page.post("/schedule/", as_post(_form(page), curfew_start="25:00", wake_up="07:45"))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="err-curfew_start" aria-live="polite">&#x27;25:00&#x27; is not a time' in html
    assert "Nothing was saved" in html
    # What was typed is kept for fixing, not thrown away.
    assert 'value="25:00"' in html
    assert 'value="07:45"' in html
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
    assert "outside the wind-down" in html.split('id="anchor-msg-1"')[1].split("</span>")[0]


def test_stale_form_says_so_and_overwrites_nothing(page: PageClient, user: User) -> None:
    stale = _form(page)  # as loaded: never saved
    # A setting of the same section changed meanwhile: a conflict.
    schedule_update(user=user, changes={"wake_up": "08:00"}, expected_version=0, source="api")
    before, version = _saved(user)
    response = page.post("/schedule/", as_post(stale, curfew_start="21:00"))
    assert response.status_code == 409
    html = response.content.decode()
    assert "Someone else saved these settings while you were editing." in html
    assert "Changed meanwhile: Wakes at" in html
    assert _saved(user) == (before, version)
    assert before["wake_up"] == "08:00"
    # Their typing survives, and the next Save is a deliberate one on version 1.
    fields = form_fields(html, "schedule-form")
    assert ("curfew_start", "21:00") in fields
    assert ("version", "1") in fields
    assert page.post("/schedule/", as_post(fields)).status_code == 302
    assert _saved(user)[0]["curfew_start"] == "21:00"


def test_a_stale_replies_form_is_a_conflict_too(page: PageClient, user: User) -> None:
    stale = _replies(page)
    schedule_update(user=user, changes={"off_duty_reply": "Later."}, source="api")
    before = _saved(user)
    response = page.post("/replies/", as_post(stale, off_duty_reply="Mine."), htmx=True)
    assert response.status_code == 409
    html = response.content.decode()
    assert "Changed meanwhile: Reply during peak hours" in html
    assert _saved(user) == before


def test_a_save_of_another_section_meanwhile_is_no_conflict(page: PageClient, user: User) -> None:
    schedule = _form(page)
    replies = _replies(page)  # both loaded at version 0
    assert page.post("/replies/", as_post(replies, off_duty_reply="Busy.")).status_code == 302
    assert _saved(user)[1] == 1
    # The Schedule form still says version 0, but nothing of its own changed.
    response = page.post("/schedule/", as_post(schedule, curfew_start="22:10"))
    assert response.status_code == 302
    config, version = _saved(user)
    assert (config["off_duty_reply"], config["curfew_start"], version) == ("Busy.", "22:10", 2)
    # And the other way round, through the API this time.
    replies = _replies(page)  # at version 2
    schedule_update(user=user, changes={"wake_up": "08:30"}, source="api")
    response = page.post("/replies/", as_post(replies, lights_out_reply="Zzz."))
    assert response.status_code == 302
    config, version = _saved(user)
    assert config["wake_up"] == "08:30"
    assert config["lights_out_reply"] == "Zzz."
    assert config["off_duty_reply"] == "Busy."
    assert config["curfew_start"] == "22:10"
    assert version == 4


def test_missing_version_is_treated_as_stale(page: PageClient, user: User) -> None:
    response = page.post("/schedule/", as_post(_form(page), version=None, curfew_start="21:00"))
    assert response.status_code == 409
    assert not Schedule.objects.filter(user=user).exists()
    # Also once there is a history: a version on no record says nothing of what
    # changed since, so it is never taken for "nothing of this section".
    page.post("/replies/", as_post(_replies(page), off_duty_reply="Busy."))
    before = _saved(user)
    for version in (None, "-1", "99"):
        data = as_post(_replies(page), version=version, off_duty_reply="Mine.")
        assert page.post("/replies/", data).status_code == 409, version
    assert _saved(user) == before


def test_persona_preset_without_script_fills_in_but_does_not_save(
    page: PageClient, user: User
) -> None:
    response = page.post("/replies/", as_post(_replies(page), persona_preset="en"))
    assert response.status_code == 200
    persona, tiers = schedule_config.PERSONA_PRESETS["en"]
    fields = dict(form_fields(response.content.decode(), "replies-form"))
    assert fields["tired_persona"] == persona
    assert fields["tier_texts"].splitlines() == list(tiers)
    assert not Schedule.objects.filter(user=user).exists()


def test_an_unknown_preset_is_not_found_and_saves_nothing(page: PageClient, user: User) -> None:
    for button in ("persona_preset", "reply_preset"):
        data = as_post(_replies(page), off_duty_reply="Mine.", **{button: "klingon"})
        assert page.post("/replies/", data).status_code == 404, button
    assert not Schedule.objects.filter(user=user).exists()


def test_a_refused_form_comes_back_with_a_spare_row_to_add_to(page: PageClient) -> None:
    data = as_post(_form(page))
    # Every row used, the last one wrong: the page keeps them and adds a blank one.
    set_rows(data, "anchors", time=["23:00", "05:00"], tokens=["2048", "64"])
    fields = form_fields(page.post("/schedule/", data).content.decode(), "schedule-form")
    assert ("anchors-TOTAL_FORMS", "3") in fields
    assert ("anchors-1-time", "05:00") in fields
    assert ("anchors-2-time", "") in fields


def test_an_htmx_save_answers_the_form_with_a_toast(page: PageClient, user: User) -> None:
    response = page.post("/replies/", as_post(_replies(page), off_duty_reply="Busy."), htmx=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="replies-form"')
    assert "<html" not in html
    assert re.search(r'<div id="toast"[^>]*hx-swap-oob="true"><p class="toast toast-success"', html)
    assert "Saved." in html
    # The form comes back on the saved version, ready for the next save.
    assert ("version", "1") in form_fields(html, "replies-form")
    assert _saved(user)[0]["off_duty_reply"] == "Busy."
    again = page.post("/schedule/", as_post(_form(page)), htmx=True).content.decode()
    assert again.lstrip().startswith('<form id="schedule-form"')
    assert "Nothing changed, so nothing was saved." in again
    assert "toast-success" not in again


def test_an_htmx_refusal_is_a_422_with_the_field_flagged(page: PageClient, user: User) -> None:
    response = page.post("/schedule/", as_post(_form(page), curfew_start="25:00"), htmx=True)
    assert response.status_code == 422
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="schedule-form"')
    assert "Nothing was saved" in html
    assert 'value="25:00"' in html
    assert 'id="toast"' not in html
    assert not Schedule.objects.filter(user=user).exists()
