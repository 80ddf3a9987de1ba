"""The Schedule page's night (issue 25), without a browser: the days come
first (every day, weekdays differ, customise), a day means the morning a
night wakes on, the curve follows the night even without script, a rising
curve is warned, and a save's problems all come back at their fields."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from curfew_core.models import Schedule
from curfew_core.schedules import config as schedule_config
from curfew_core.services.schedules import schedule_update
from curfew_core.web.schedule.forms import WEEKDAY_EVENINGS, night_days_of
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields, set_rows

STRETCHED = [["22:30", 2048], ["23:08", 1600], ["23:45", 800], ["00:23", 320], ["01:00", 64]]


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/schedule/").content.decode(), "schedule-form")


def _config(user: User) -> dict[str, object]:
    return schedule_config.with_defaults(Schedule.objects.get(user=user).config)


def _set(user: User, changes: dict[str, object]) -> None:
    schedule_update(user=user, changes=changes, source="test")


@pytest.mark.parametrize(
    ("weekdays", "mode"),
    [
        ({}, "every"),
        ({day: {"wake_up": "08:00"} for day in WEEKDAY_EVENINGS}, "weekdays"),
        # Friday evening is no weekday night (it wakes on Saturday).
        ({day: {"wake_up": "08:00"} for day in ("mon", "tue", "wed", "thu", "fri")}, "custom"),
        ({**{day: {"wake_up": "08:00"} for day in WEEKDAY_EVENINGS}, "sun": {}}, "custom"),
        ({"sat": {"lights_out": "04:30"}}, "custom"),
    ],
)
def test_stored_weekday_times_read_as_a_day_choice(
    weekdays: dict[str, dict[str, str]], mode: str
) -> None:
    assert night_days_of(weekdays) == mode


def test_the_night_is_typed_in_one_save_without_script(page: PageClient, user: User) -> None:
    """Gets sleepy 22:30, asleep 01:00, up at 08:00 on weekdays: one post of
    the page as it was served with three boxes typed (the anchor rows sent as
    they were), and the curve is the same shape over the new night."""
    html = page.get("/schedule/").content.decode()
    for label in ("Gets sleepy at", "Asleep at", "Wakes at"):
        assert label in html
    data = as_post(
        _form(page),
        curfew_start="22:30",
        lights_out="01:00",
        night_days="weekdays",
        wg_wake_up="08:00",
    )
    response = page.post("/schedule/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    config = _config(user)
    assert (config["curfew_start"], config["lights_out"], config["wake_up"]) == (
        "22:30",
        "01:00",
        "09:00",
    )
    assert config["anchors"] == STRETCHED
    # By the morning: the nights that wake Monday to Friday start Sunday to Thursday.
    assert config["weekdays"] == {day: {"wake_up": "08:00"} for day in WEEKDAY_EVENINGS}
    # Served again, the page reads it back as "weekdays differ".
    again = dict(_form(page))
    assert again["night_days"] == "weekdays"
    assert again["wg_wake_up"] == "08:00"


def test_every_day_clears_the_weekday_times_and_customise_keeps_the_table(
    page: PageClient, user: User
) -> None:
    _set(user, {"weekdays": {"sat": {"lights_out": "04:30"}}})
    fields = dict(_form(page))
    assert fields["night_days"] == "custom"
    assert fields["wd_sat_lights_out"] == "04:30"
    kept = as_post(_form(page), wd_fri_wake_up="10:00")
    assert page.post("/schedule/", kept).status_code == 302
    assert _config(user)["weekdays"] == {
        "fri": {"wake_up": "10:00"},
        "sat": {"lights_out": "04:30"},
    }
    cleared = as_post(_form(page), night_days="every")
    assert page.post("/schedule/", cleared).status_code == 302
    assert _config(user)["weekdays"] == {}


def test_the_preview_warns_about_a_curve_that_rises_toward_sleep(page: PageClient) -> None:
    fields = _form(page)
    plain = page.post("/schedule/preview/", as_post(fields), htmx=True).content.decode()
    assert 'id="curve-rises"' not in plain  # control: the default only falls
    rising = set_rows(
        as_post(fields), "anchors", time=["23:00", "00:00", "03:00"], tokens=["2048", "300", "900"]
    )
    html = page.post("/schedule/preview/", rising, htmx=True).content.decode()
    warning = html.split('id="curve-rises"')[1].split("</p>")[0]
    assert "Answers get longer again from 00:00 to 03:00" in warning
    # Warned, not refused: it saves.
    assert page.post("/schedule/", rising).status_code == 302


def test_a_refused_save_names_every_problem_at_its_field(page: PageClient) -> None:
    data = set_rows(
        as_post(_form(page), curfew_start="22:30", lights_out="01:00", night_days="weekdays"),
        "anchors",
        time=["22:30", "02:00", "03:30", "01:00"],
        tokens=["2048", "900", "100", "64"],
    )
    data["wg_curfew_start"] = "25:00"
    response = page.post("/schedule/", data)
    assert response.status_code == 400
    html = response.content.decode()

    def at(element_id: str) -> str:
        return html.split(f'id="{element_id}"')[1].split("</")[0]

    # Against the night as typed (22:30-01:00), though another field is wrong.
    assert "02:00 is outside the wind-down 22:30–01:00" in at("anchor-msg-1")
    assert "03:30 is outside" in at("anchor-msg-2")
    assert at("anchor-msg-0").endswith(">")  # the good rows say nothing
    assert "25:00" in at("err-weekdays")
    assert "Nothing was saved" in html


def test_a_row_typed_wrong_hides_no_other_rows_problem(page: PageClient, user: User) -> None:
    before = _stored(user)
    data = set_rows(
        as_post(_form(page), curfew_start="22:30", lights_out="01:00"),
        "anchors",
        time=["22:30", "xx", "03:30", "01:00"],
        tokens=["2048", "900", "100", "64"],
    )
    response = page.post("/schedule/", data)
    assert response.status_code == 400
    html = response.content.decode()

    def at(element_id: str) -> str:
        return html.split(f'id="{element_id}"')[1].split("</")[0]

    assert "is not a time of day" in at("anchor-msg-1")
    assert "03:30 is outside the wind-down 22:30–01:00" in at("anchor-msg-2")
    assert at("anchor-msg-3").endswith(">")
    assert _stored(user) == before


def _stored(user: User) -> list[dict[str, object]]:
    return list(Schedule.objects.filter(user=user).values("config", "updated_at"))
