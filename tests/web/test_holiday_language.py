"""Holiday names in the page's language: the band and week view name a holiday
as the reader's language does where the calendar has names in it (国庆节 on the
Chinese page, National Day on the English one), else in the calendar's own
language; the engine's reasons keep one fixed language, whatever the page or the
server's locale."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User

from curfew_core.engine import decide
from curfew_core.schedules import calendars
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.web import band_day
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

NATIONAL_DAY = "2026-10-01"
GERMAN_UNITY_DAY = "2026-10-03"  # a Saturday; a holiday in Germany's calendar
ZH = "zh-CN,zh;q=0.9"
#: The section that draws the day band and holds the calendar setting.
PAGE = "/schedule/"


def _row(html: str, day: str) -> str:
    match = re.search(rf'<div class="band-row[^"]*" data-date="{day}">(.*?)</ol>', html, re.S)
    assert match, f"no band row for {day}"
    return match.group(1)


def _label(html: str, day: str) -> str:
    """The visible words of a day's label (its tag), without the cells or the
    tag's title (which holds the engine's reason, "holiday: National Day")."""
    row = _row(html, day)
    label = row.split('<ol class="band"', 1)[0]
    return re.sub(r"<[^>]+>", " ", label)


def _save(page: PageClient, **fields: str) -> None:
    data = as_post(form_fields(page.get(PAGE).content.decode(), "schedule-form"), **fields)
    assert page.post("/schedule/", data).status_code == 302


@pytest.fixture
def fresh_tables() -> Iterator[None]:
    """Forget the built holiday tables, so a test sees them built again."""
    saved = dict(calendars._tables), dict(calendars._display)
    calendars._tables.clear()
    calendars._display.clear()
    yield
    calendars._tables.clear()
    calendars._tables.update(saved[0])
    calendars._display.clear()
    calendars._display.update(saved[1])


def test_the_chinese_page_names_national_day_in_chinese(page: PageClient) -> None:
    zh = page.get(PAGE, {"band_date": NATIONAL_DAY}, HTTP_ACCEPT_LANGUAGE=ZH).content.decode()
    assert "国庆节" in _label(zh, NATIONAL_DAY)
    assert "National Day" not in _label(zh, NATIONAL_DAY)
    en = page.get(PAGE, {"band_date": NATIONAL_DAY}, HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert "National Day" in _label(en, NATIONAL_DAY)
    assert "国庆节" not in _label(en, NATIONAL_DAY)


def test_the_week_view_names_every_holiday_in_the_pages_language(page: PageClient) -> None:
    # On the overview, which draws the band too.
    html = page.get(
        "/", {"band_date": NATIONAL_DAY, "band_view": "week"}, HTTP_ACCEPT_LANGUAGE=ZH
    ).content.decode()
    # 10-01 to 10-03 are National Day holidays in the package's calendar.
    for day in ("2026-10-01", "2026-10-02", "2026-10-03"):
        assert "国庆节" in _label(html, day)
        assert "National Day" not in _label(html, day)


def test_a_calendar_without_chinese_names_falls_back_to_its_own(
    page: PageClient, user: User
) -> None:
    # Germany's calendar has German, English, Thai and Ukrainian names, no Chinese:
    # the Chinese page shows its default (German); the English page English.
    _save(page, holiday_calendar="DE")
    zh = page.get(PAGE, {"band_date": GERMAN_UNITY_DAY}, HTTP_ACCEPT_LANGUAGE=ZH)
    assert zh.status_code == 200
    assert "Tag der Deutschen Einheit" in _label(zh.content.decode(), GERMAN_UNITY_DAY)
    en = page.get(PAGE, {"band_date": GERMAN_UNITY_DAY}, HTTP_ACCEPT_LANGUAGE="en-US")
    assert "German Unity Day" in _label(en.content.decode(), GERMAN_UNITY_DAY)


def test_a_calendar_with_no_translations_at_all_shows_its_names(
    page: PageClient, user: User
) -> None:
    # New Zealand's calendar declares no languages: its names as they are.
    _save(page, holiday_calendar="NZ")
    html = page.get(PAGE, {"band_date": "2026-12-25"}, HTTP_ACCEPT_LANGUAGE=ZH)
    assert html.status_code == 200
    assert "Christmas Day" in _label(html.content.decode(), "2026-12-25")


def test_my_own_holiday_is_named_in_the_pages_language(page: PageClient, user: User) -> None:
    _save(page, extra_holidays="2026-10-14")
    zh = page.get(PAGE, {"band_date": "2026-10-14"}, HTTP_ACCEPT_LANGUAGE=ZH).content.decode()
    assert "个人假日" in _label(zh, "2026-10-14")
    en = page.get(PAGE, {"band_date": "2026-10-14"}, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "personal holiday" in _label(en, "2026-10-14")


@pytest.mark.parametrize(
    ("code", "language", "locale"),
    [
        ("CN", "zh-hans", "zh_CN"),
        ("CN", "zh-hant", "zh_TW"),
        ("CN", "en", "en_US"),
        ("TW", "zh-hans", "zh_CN"),
        ("HK", "en", "en_HK"),  # the country's own English first
        ("GB", "zh-hans", "en_GB"),  # no Chinese: the calendar's default
        ("US-CA", "zh-hans", "en_US"),
        ("DE", "fr", "de"),
    ],
)
def test_the_calendar_locale_for_a_page_language(code: str, language: str, locale: str) -> None:
    assert calendars.display_language(code, language) == locale


def test_the_engine_names_do_not_follow_the_page_or_the_server_locale(
    fresh_tables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package reads LANGUAGE/LC_ALL/LANG when no language is given: a server
    # started under a Chinese locale would have written Chinese reasons.
    monkeypatch.setenv("LANGUAGE", "zh_CN")
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    schedule = schedule_config.build(schedule_config.default_config())
    day = dt.date(2026, 10, 1)
    assert schedule.holidays.holiday_name(day) == "National Day"
    at = dt.datetime(2026, 10, 1, 10, 0, tzinfo=schedule.timezone)
    assert "National Day" in decide(at, schedule).reason
    # …while the page, for the same schedule, names it for its reader.
    assert band_day(schedule, day, language="zh-hans").holiday == "国庆节"
    assert band_day(schedule, day, language="en").holiday == "National Day"
    # The display names never replaced the engine's.
    assert schedule.holidays.holiday_name(day) == "National Day"
