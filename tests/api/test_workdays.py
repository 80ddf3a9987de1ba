"""Make-up workdays (调休) from the real ``holidays`` package, and the user's own
extra workdays: the calendar adapter, the one validation layer, the API, the
verdicts and the plugin import.

Which date wins: a user's own extra holiday beats a public make-up workday,
and a user's own extra workday beats a public holiday. One date cannot be
both a user's holiday and a user's workday (the save is refused, naming it).
"""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO
from pathlib import Path
from typing import Any

import holidays
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from curfew_core.schedules import calendars
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.config import ConfigError
from tests.api.conftest import stored

SCHEDULE = "/api/v1/schedule"
VERDICT = "/api/v1/verdict"
#: China's 2026 make-up workdays, as the State Council announced them.
MAKE_UP_2026 = ["2026-01-04", "2026-02-14", "2026-02-28", "2026-05-09", "2026-09-20", "2026-10-10"]


@pytest.fixture
def cold_tables() -> Any:
    """The per-year tables start empty (as in a fresh process) and are left so."""
    saved = dict(calendars._tables)
    calendars._tables.clear()
    yield
    calendars._tables.clear()
    calendars._tables.update(saved)


# -- the calendar adapter, against the real package ------------------------------------


def test_chinas_2026_make_up_workdays(cold_tables: None) -> None:
    cn = calendars.lookup("CN", ())
    found = [
        day.isoformat()
        for day in (dt.date(2026, 1, 1) + dt.timedelta(days=n) for n in range(365))
        if cn.workday_name(day) is not None
    ]
    assert found == MAKE_UP_2026
    assert {cn.workday_name(dt.date.fromisoformat(d)) for d in found} == {"make-up workday"}
    # The package's own list, not a table kept here.
    package = holidays.country_holidays("CN", years=2026).weekend_workdays
    assert set(found) == {d.isoformat() for d in package if d.year == 2026}
    # The weekend days around them are not workdays, and they are no holidays.
    assert cn.workday_name(dt.date(2026, 10, 11)) is None
    assert cn.holiday_name(dt.date(2026, 10, 10)) is None


def test_a_late_december_make_up_day_for_the_next_new_year(cold_tables: None) -> None:
    # 2001-12-29/30 were worked for New Year 2002: listed by the package under
    # 2002, asked for in 2001.
    cn = calendars.lookup("CN", ())
    assert cn.workday_name(dt.date(2001, 12, 29)) == "make-up workday"
    assert cn.workday_name(dt.date(2001, 12, 30)) == "make-up workday"
    assert cn.workday_name(dt.date(2001, 12, 22)) is None


def test_other_calendars_with_make_up_days_and_without() -> None:
    # Belarus works Saturday 2026-04-25 too; the US has no such days.
    assert calendars.lookup("BY", ()).workday_name(dt.date(2026, 4, 25)) == "make-up workday"
    assert calendars.lookup("US-CA", ()).workday_name(dt.date(2026, 10, 10)) is None
    assert calendars.lookup(None, ()).workday_name(dt.date(2026, 10, 10)) is None


def test_the_last_year_is_answered(cold_tables: None) -> None:
    cn = calendars.lookup("CN", ())
    assert cn.workday_name(dt.date(9999, 12, 31)) is None
    assert cn.holiday_name(dt.date(9999, 12, 31)) is None


def test_the_users_own_dates_win_over_the_public_ones() -> None:
    saturday, national = dt.date(2026, 10, 10), dt.date(2026, 10, 1)
    mine = calendars.lookup("CN", ("2026-10-10",), ("2026-10-01",))
    # My own holiday on the public make-up Saturday: a holiday, not a workday.
    assert mine.holiday_name(saturday) == "personal holiday"
    assert mine.workday_name(saturday) is None
    # My own workday on National Day: a workday (the holiday keeps its name).
    assert mine.workday_name(national) == "personal workday"
    assert mine.holiday_name(national) == "National Day"
    # Without a public calendar my workdays still count.
    assert calendars.lookup(None, (), ("2026-10-17",)).workday_name(dt.date(2026, 10, 17)) == (
        "personal workday"
    )


# -- the validation layer ------------------------------------------------------------------


def test_extra_workdays_default_to_none() -> None:
    assert schedule_config.DEFAULTS["extra_workdays"] == []
    assert schedule_config.with_defaults({})["extra_workdays"] == []


def test_extra_workdays_are_canonical_dates() -> None:
    config = schedule_config.apply_changes(
        {}, {"extra_workdays": ["2026-10-17", "2026-10-01", "2026-10-17"]}
    )
    assert config["extra_workdays"] == ["2026-10-01", "2026-10-17"]


@pytest.mark.parametrize(
    ("current", "changes", "named"),
    [
        (
            {},
            {"extra_holidays": ["2026-10-10"], "extra_workdays": ["2026-10-10"]},
            "extra_workdays",
        ),
        ({"extra_holidays": ["2026-10-10"]}, {"extra_workdays": ["2026-10-10"]}, "extra_workdays"),
        ({"extra_workdays": ["2026-10-10"]}, {"extra_holidays": ["2026-10-10"]}, "extra_holidays"),
    ],
)
def test_one_date_cannot_be_both_my_holiday_and_my_workday(
    current: dict[str, Any], changes: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as excinfo:
        schedule_config.apply_changes(current, changes)
    assert set(excinfo.value.errors) == {named}
    assert "2026-10-10" in excinfo.value.errors[named]


def test_the_schedule_carries_the_workdays() -> None:
    config = schedule_config.apply_changes({}, {"extra_workdays": ["2026-10-01"]})
    lookup = schedule_config.build(config).holidays
    assert lookup.workday_name(dt.date(2026, 10, 1)) == "personal workday"
    assert lookup.workday_name(dt.date(2026, 10, 10)) == "make-up workday"


# -- the API -------------------------------------------------------------------------------


def ask(api: Any, at: str) -> dict[str, Any]:
    response = api.post(VERDICT, {"at": at})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.django_db
def test_a_make_up_saturday_has_peak_hours(api: Any) -> None:
    verdict = ask(api, "2026-10-10T10:00:00+08:00")
    assert verdict["state"] == "off-duty"
    assert verdict["peak"] is True
    assert "make-up workday" in verdict["reason"]
    # Control: the Sunday after, same hour, is a weekend valley.
    assert ask(api, "2026-10-11T10:00:00+08:00")["state"] == "on-duty"


@pytest.mark.django_db
def test_extra_workdays_round_trip_and_reach_the_verdict(api: Any) -> None:
    assert ask(api, "2026-10-01T10:00:00+08:00")["state"] == "on-duty"  # National Day
    response = api.patch(SCHEDULE, {"extra_workdays": ["2026-10-01", "2026-10-01"]})
    assert response.status_code == 200, response.content
    assert response.json()["extra_workdays"] == ["2026-10-01"]
    assert api.get(SCHEDULE).json()["extra_workdays"] == ["2026-10-01"]
    worked = ask(api, "2026-10-01T10:00:00+08:00")
    assert worked["state"] == "off-duty"
    assert "personal workday" in worked["reason"]
    assert ask(api, "2026-10-02T10:00:00+08:00")["state"] == "on-duty"  # control


@pytest.mark.django_db
def test_my_holiday_on_a_make_up_saturday_keeps_it_free(api: Any) -> None:
    response = api.patch(SCHEDULE, {"extra_holidays": ["2026-10-10"]})
    assert response.status_code == 200, response.content
    assert ask(api, "2026-10-10T10:00:00+08:00")["state"] == "on-duty"
    assert ask(api, "2026-09-20T10:00:00+08:00")["state"] == "off-duty"  # control


@pytest.mark.django_db
@pytest.mark.parametrize(
    "changes",
    [
        {"extra_workdays": ["2026-13-01"]},
        {"extra_workdays": ["2026-10-1"]},
        {"extra_workdays": [20261010]},
        {"extra_workdays": "2026-10-10"},
        {"extra_workdays": None},
        {"extra_workdays": ["2026-10-10"] * 1001},
    ],
)
def test_bad_extra_workdays_are_named_and_change_nothing(api: Any, changes: dict[str, Any]) -> None:
    _refused_and_named(api, changes, status=400, error="invalid")


@pytest.mark.django_db
def test_a_date_in_both_lists_is_well_formed_but_refused(api: Any) -> None:
    """Each list is well-formed on its own; the rule between them is one the
    schema cannot state, so it is a 422 (the API's contract), naming the list."""
    changes = {"extra_workdays": ["2026-10-10"], "extra_holidays": ["2026-10-10"]}
    _refused_and_named(api, changes, status=422, error="unprocessable")


def _refused_and_named(api: Any, changes: dict[str, Any], *, status: int, error: str) -> None:
    saved = api.patch(SCHEDULE, {"extra_workdays": ["2026-10-17"]}).json()
    before = stored(api.user)
    response = api.patch(SCHEDULE, {**changes, "version": saved["version"]})
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == error
    assert set(body["fields"]) == {"extra_workdays"}
    assert body["fields"]["extra_workdays"]
    assert "extra_workdays" in body["message"]
    assert stored(api.user) == before


@pytest.mark.django_db
def test_the_openapi_document_describes_extra_workdays(api: Any) -> None:
    document = api.get("/api/v1/openapi.json").json()
    setting = document["components"]["schemas"]["Settings"]["properties"]["extra_workdays"]
    assert setting == document["components"]["schemas"]["Settings"]["properties"][
        "extra_holidays"
    ] | {"description": setting["description"]}
    assert "holiday" in setting["description"]


# -- the plugin import ---------------------------------------------------------------------


def _import(user: User, tmp_path: Path, data: Any) -> tuple[str, str]:
    path = tmp_path / "curfew.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out, err = StringIO(), StringIO()
    call_command(
        "curfew", "import-config", "--user", user.username, str(path), stdout=out, stderr=err
    )
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_the_plugins_false_holidays_are_workdays(user: User, tmp_path: Path) -> None:
    # The plugin's map said per date: true, a day off; false, not a day off.
    _import(user, tmp_path, {"holidays": {"2026-10-09": True, "2026-10-10": False}})
    config = stored(user)["config"]
    assert config["extra_holidays"] == ["2026-10-09"]
    assert config["extra_workdays"] == ["2026-10-10"]


@pytest.mark.django_db
def test_a_bad_plugin_workday_is_named_by_the_plugins_key(user: User, tmp_path: Path) -> None:
    before = stored(user)
    with pytest.raises(CommandError, match="nothing changed") as excinfo:
        _import(user, tmp_path, {"holidays": {"2026-02-30": False}})
    assert "holidays:" in str(excinfo.value)
    assert "extra_workdays" not in str(excinfo.value)
    assert stored(user) == before
