"""Make-up workdays on the settings page: the band and week view label them and
draw the weekday's peak hours, and the form holds the user's own workdays."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.contrib.auth.models import User

from curfew_core.models import Schedule
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.web import band_day, band_week
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

MAKE_UP_SATURDAY = dt.date(2026, 10, 10)
FRIDAY = dt.date(2026, 10, 9)


def _default() -> Any:
    return schedule_config.build(schedule_config.default_config())


def _row(html: str, day: str) -> str:
    """The band row of one date: its label and its cells."""
    match = re.search(rf'<div class="band-row[^"]*" data-date="{day}">(.*?)</ol>', html, re.S)
    assert match, f"no band row for {day}"
    return match.group(1)


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/schedule/").content.decode(), "schedule-form")


def _saved(user: User) -> dict[str, Any]:
    return schedule_config.with_defaults(Schedule.objects.get(user=user).config)


# -- the band --------------------------------------------------------------------------


def test_a_make_up_saturday_is_drawn_like_a_weekday() -> None:
    saturday = band_day(_default(), MAKE_UP_SATURDAY)
    friday = band_day(_default(), FRIDAY)
    assert saturday.valley is None
    assert saturday.workday == "make-up workday"
    assert saturday.weekend
    assert [c.state for c in saturday.cells] == [c.state for c in friday.cells]
    assert [c.state for c in saturday.cells][36:48] == ["off-duty"] * 12  # 09:00-12:00
    # Control: the Sunday after is a weekend valley, with no workday.
    sunday = band_day(_default(), dt.date(2026, 10, 11))
    assert (sunday.valley, sunday.workday) == ("weekend", None)
    assert "off-duty" not in {c.state for c in sunday.cells}


def test_the_week_view_marks_only_the_make_up_day() -> None:
    week = band_week(_default(), MAKE_UP_SATURDAY)
    assert [d.day for d in week if d.workday] == [MAKE_UP_SATURDAY]
    # The Golden Week's last days off (10-05 to 10-07) and Sunday are valley.
    assert [d.day.day for d in week if d.valley] == [5, 6, 7, 11]


def test_the_page_labels_the_make_up_workday(page: PageClient) -> None:
    html = page.get("/", {"band_date": "2026-10-10", "band_view": "week"}).content.decode()
    saturday = _row(html, "2026-10-10")
    assert re.search(r'class="tag tag-workday"[^>]*>make-up workday<', saturday)
    assert "tag-valley" not in saturday
    assert 's-off-duty"' in saturday or "s-off-duty " in saturday
    sunday = _row(html, "2026-10-11")
    assert "tag-valley" in sunday
    assert "make-up workday" not in sunday
    assert "make-up workday" not in _row(html, "2026-10-09")


def test_the_label_in_chinese(page: PageClient) -> None:
    html = page.get(
        "/", {"band_date": "2026-10-10"}, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9"
    ).content.decode()
    assert "调休上班日" in _row(html, "2026-10-10")
    # The form's field, labelled as declared (ScheduleSettings.extra_workdays).
    form = page.get("/schedule/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "照常上班的日子" in form


def test_my_workday_on_a_holiday_is_labelled_with_both(page: PageClient, user: User) -> None:
    data = as_post(_form(page), extra_workdays="2026-10-01")
    assert page.post("/schedule/", data).status_code == 302
    row = _row(page.get("/", {"band_date": "2026-10-01"}).content.decode(), "2026-10-01")
    # (The tag's title no longer says "personal workday" since the sections
    # split: it carries a general hint; the label names the holiday.)
    assert re.search(r'class="tag tag-workday" title="[^"]*">National Day · make-up workday<', row)
    assert "tag-valley" not in row
    assert 's-off-duty"' in row or "s-off-duty " in row


# -- the form --------------------------------------------------------------------------


def test_extra_workdays_are_saved_and_shown_back(page: PageClient, user: User) -> None:
    data = as_post(_form(page), extra_workdays="2026-10-17\n2026-10-01, 2026-10-17")
    assert page.post("/schedule/", data).status_code == 302
    assert _saved(user)["extra_workdays"] == ["2026-10-01", "2026-10-17"]
    fields = dict(_form(page))
    assert fields["extra_workdays"] == "2026-10-01\n2026-10-17"
    # The unchanged form saves nothing new.
    version = Schedule.objects.get(user=user).version
    page.post("/schedule/", as_post(_form(page)))
    assert Schedule.objects.get(user=user).version == version


def test_a_bad_workday_is_flagged_and_nothing_is_saved(page: PageClient, user: User) -> None:
    page.post("/schedule/", as_post(_form(page), extra_holidays="2026-10-10"))
    before = Schedule.objects.get(user=user).version
    for typed, problem in (
        ("2026-13-01", "is not a date as YYYY-MM-DD"),
        ("2026-10-10", "cannot be both"),
    ):
        response = page.post("/schedule/", as_post(_form(page), extra_workdays=typed))
        assert response.status_code == 400
        html = response.content.decode()
        assert re.search(rf'id="err-extra_workdays"[^>]*>[^<]*{problem}', html)
        assert typed in html  # kept as typed
        assert Schedule.objects.get(user=user).version == before


def test_the_preview_follows_unsaved_workdays(page: PageClient) -> None:
    data = as_post(_form(page), band_date="2026-10-01", band_view="day")
    rested = page.post("/schedule/preview/", data, htmx=True).content.decode()
    assert "s-off-duty" not in _row(rested, "2026-10-01")
    worked = page.post(
        "/schedule/preview/", {**data, "extra_workdays": "2026-10-01"}, htmx=True
    ).content.decode()
    assert "s-off-duty" in _row(worked, "2026-10-01")
    bad = page.post(
        "/schedule/preview/", {**data, "extra_workdays": "someday"}, htmx=True
    ).content.decode()
    assert re.search(r'id="err-extra_workdays"[^>]*>[^<]*is not a date', bad)
