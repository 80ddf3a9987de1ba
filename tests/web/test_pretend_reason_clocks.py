"""The pretend's part of a reason mixed two clocks: made at a real Tue 20:00
while pretending it is Wed 01:30 for an hour, the line read "2026-09-30
01:30 · getting sleepy ... · pretending until 21:00", and 21:00, the real
end, read as if on the pretended clock the rest of the line is on. The
part now names the pretended moment and says its end is real, in the
page's words in each language; rows the ledger kept in the old spelling
say their end is real too."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator

import pytest
from django.utils import translation

from curfew_core.engine import Overrides, decide
from curfew_core.schedules import config as schedule_config
from curfew_core.vocabulary import reason_words

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
REAL_NOW = dt.datetime(2026, 9, 29, 20, 0, tzinfo=SHANGHAI)  # a Tuesday
PRETENDED = dt.datetime(2026, 9, 30, 1, 30, tzinfo=SHANGHAI)  # Wednesday, sleepy
END = REAL_NOW + dt.timedelta(hours=1)


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _reason(until: dt.datetime | None = END) -> str:
    schedule = schedule_config.build(schedule_config.default_config())
    overrides = Overrides(debug_at=PRETENDED, debug_until=until)
    return decide(REAL_NOW, schedule, overrides=overrides).reason


def _pretend_part(said: str) -> str:
    return said.split(" · ")[-1]


def test_the_engine_names_the_pretended_moment_and_the_real_end() -> None:
    reason = _reason()
    assert reason.startswith("2026-09-30 01:30 · ")
    assert _pretend_part(reason) == "pretending it is Wed 01:30 until 21:00 real time"
    # The same end given in another zone is the same instant, said on the
    # schedule's clock.
    assert _reason(END.astimezone(dt.UTC)) == reason


def test_in_english_the_end_is_on_the_real_clock() -> None:
    said = reason_words(_reason())
    assert "pretending until" not in said
    assert _pretend_part(said) == "pretending it is Wed 01:30, until 21:00 on the real clock"


def test_in_chinese_the_end_is_on_the_real_clock() -> None:
    with translation.override("zh-hans"):
        said = reason_words(_reason())
    assert "假装到" not in said
    assert _pretend_part(said) == "假装现在是星期三 01:30，持续到真实时间 21:00"


def test_a_pretend_without_an_end_names_its_moment() -> None:
    reason = _reason(until=None)
    assert _pretend_part(reason) == "pretending it is Wed 01:30"
    assert _pretend_part(reason_words(reason)) == "pretending it is Wed 01:30"
    with translation.override("zh-hans"):
        assert _pretend_part(reason_words(reason)) == "假装现在是星期三 01:30"


@pytest.mark.parametrize(
    ("day", "zh"),
    [
        ("Mon", "星期一"),
        ("Tue", "星期二"),
        ("Wed", "星期三"),
        ("Thu", "星期四"),
        ("Fri", "星期五"),
        ("Sat", "星期六"),
        ("Sun", "星期日"),
    ],
)
def test_every_weekday_is_said_in_chinese(day: str, zh: str) -> None:
    reason = f"2026-10-01 23:00 · on duty · pretending it is {day} 23:00 until 08:15 real time"
    with translation.override("zh-hans"):
        said = reason_words(reason)
    assert _pretend_part(said) == f"假装现在是{zh} 23:00，持续到真实时间 08:15"


@pytest.mark.parametrize("old", ["pretending until 21:00", "time machine until 21:00"])
def test_rows_kept_in_the_old_spelling_stay_readable(old: str) -> None:
    reason = f"2026-09-30 01:30 · winding 62% · budget 560 · {old}"
    assert _pretend_part(reason_words(reason)) == "pretending, until 21:00 on the real clock"
    with translation.override("zh-hans"):
        assert _pretend_part(reason_words(reason)) == "假装中，持续到真实时间 21:00"


@pytest.mark.parametrize("old", ["pretending", "time machine"])
def test_an_old_endless_pretend_stays_readable(old: str) -> None:
    reason = f"2026-09-30 01:30 · winding 62% · {old}"
    assert _pretend_part(reason_words(reason)) == "pretending"
    with translation.override("zh-hans"):
        assert _pretend_part(reason_words(reason)) == "假装中"
