"""QA "look" finding 8: words on zh pages that were not the vocabulary's or
not translated: the Activity legend's wire names (收尾, 熄灯), a team role
left in English in the audit, the calendar named by its code (CN) and the
chart's y axis ("tokens"). Each is read off the one declaration or the
catalogue; the English control says the same in English."""

from __future__ import annotations

import datetime as dt
import zoneinfo

from django.utils import translation

from curfew_core.engine import night_window
from curfew_core.schedules import config as schedule_config
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web.activity.words import series_name
from curfew_core.web.schedule import charts, contexts
from curfew_core.web.schedule.team_line import policy
from curfew_core.web.words import _audit_value

ZH = "zh-hans"


def test_the_activity_legend_names_states_as_the_vocabulary_does() -> None:
    with translation.override(ZH):
        sleepy = series_name("winding", "clamp")
        asleep = series_name("lights-out", "short-circuit")
        assert "收尾" not in sleepy
        assert "熄灯" not in asleep
        assert "犯困" in sleepy
        assert str(STATE_NAMES["lights-out"]) in asleep  # 睡着了
    with translation.override("en"):
        assert series_name("winding", "clamp") == "shortened (sleepy)"
        assert series_name("lights-out", "short-circuit") == "answered without a request (asleep)"


def test_a_team_role_in_the_audit_is_said_in_the_readers_language() -> None:
    with translation.override(ZH):
        assert _audit_value("role", "member") == "成员"
        assert _audit_value("role", "admin") != "admin"
    with translation.override("en"):
        assert _audit_value("role", "member") == "Member"


def _team() -> dict[str, object]:
    return {**schedule_config.default_config(), "holiday_calendar": "CN"}


def test_the_team_policy_names_the_calendars_country() -> None:
    with translation.override(ZH):
        said = " ".join(policy(_team()).sets)
        assert "中国" in said
        assert "CN" not in said
        assert "熄灯" not in said
    with translation.override("en"):
        assert "China calendar" in " ".join(policy(_team()).sets)


def test_the_charts_axis_is_translated() -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    night = night_window(schedule, dt.date(2026, 12, 7))
    at = dt.datetime(2026, 12, 7, 23, 30, tzinfo=zoneinfo.ZoneInfo("Asia/Shanghai"))
    with translation.override(ZH):
        figure = charts.curve_figure(schedule, night, now=at, text=contexts.chart_text())
    title = figure["layout"]["yaxis"]["title"]["text"]
    assert "tokens" not in title
    assert title == "回答长度（token）"
