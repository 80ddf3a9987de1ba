"""The live preview: the chart is the engine's curve, the band its segments,
and both follow the form as typed (unsaved) through htmx partials."""

from __future__ import annotations

import datetime as dt
import json
import re
import zoneinfo
from typing import Any

import plotly.graph_objects as go
import pytest
from django.contrib.auth.models import User

from curfew_core.engine import State, decide
from curfew_core.models import Schedule
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.web import band_day, band_week
from curfew_core.web.schedule import charts, contexts
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
TUESDAY = dt.date(2026, 9, 29)


def _figure(html: str) -> dict[str, Any]:
    block = re.search(
        r'<script id="curve-figure" type="application/json">(.*?)</script>', html, re.S
    )
    assert block, "no figure data block"
    figure: dict[str, Any] = json.loads(block.group(1))
    return figure


def _preview(page: PageClient, **replace: Any) -> Any:
    fields = form_fields(page.get("/schedule/").content.decode(), "schedule-form")
    data = as_post(fields, **{"band_date": TUESDAY.isoformat(), "band_view": "day", **replace})
    return page.post("/schedule/preview/", data, htmx=True)


def _cells(html: str, state: str) -> int:
    return len(re.findall(rf'class="cell s-{state}[" ]', html))


def test_chart_is_exactly_the_engines_budget() -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    night = charts.night_of(schedule, TUESDAY)
    figure = charts.curve_figure(schedule, night, now=None, text=contexts.chart_text())
    curve = figure["data"][0]
    start = dt.datetime(2026, 9, 29, 23, 0, tzinfo=SHANGHAI)
    checked = 0
    for x, y in list(zip(curve["x"], curve["y"], strict=True))[:-1:7]:
        verdict = decide(start + dt.timedelta(minutes=x), schedule)
        assert verdict.state is State.WINDING
        assert verdict.budget == y, (x, y, verdict.budget)
        checked += 1
    assert checked > 30
    # Anchors are marked where they are, with their own budgets.
    anchors = figure["data"][1]
    assert anchors["x"] == [0, 60, 120, 180, 240]
    assert anchors["y"] == [2048, 1600, 800, 320, 64]
    # Lights-out is marked at the end of the window.
    assert any(s.get("name") == "night-line" and s["x0"] == 240 for s in figure["layout"]["shapes"])
    go.Figure(figure)  # plotly's own validation: every property is real


def test_now_is_marked_only_inside_the_window() -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    night = charts.night_of(schedule, TUESDAY)
    inside = dt.datetime(2026, 9, 30, 1, 30, tzinfo=SHANGHAI)
    figure = charts.curve_figure(schedule, night, now=inside, text=contexts.chart_text())
    marker = figure["data"][2]
    assert marker["x"] == [150.0]
    assert marker["y"] == [decide(inside, schedule).budget] == [560]
    outside = dt.datetime(2026, 9, 30, 12, 0, tzinfo=SHANGHAI)
    figure = charts.curve_figure(schedule, night, now=outside, text=contexts.chart_text())
    assert len(figure["data"]) == 2
    go.Figure(figure)


def test_step_curve_is_drawn_as_steps() -> None:
    schedule = schedule_config.build({**schedule_config.default_config(), "curve": "step"})
    night = charts.night_of(schedule, TUESDAY)
    figure = charts.curve_figure(schedule, night, now=None, text=contexts.chart_text())
    assert figure["data"][0]["line"]["shape"] == "hv"
    assert set(figure["data"][0]["y"]) == {2048, 1600, 800, 320}


def test_empty_window_says_so() -> None:
    config = {**schedule_config.default_config(), "lights_out": "23:00", "anchors": [["23:00", 64]]}
    schedule = schedule_config.build(config)
    night = charts.night_of(schedule, TUESDAY)
    figure = charts.curve_figure(schedule, night, now=None, text=contexts.chart_text())
    assert figure["data"] == []
    assert "No winding" in figure["layout"]["annotations"][-1]["text"]


def test_preview_partial_follows_unsaved_edits(page: PageClient, user: User) -> None:
    saved = _preview(page)
    earlier = _preview(page, curfew_start="21:00")
    assert earlier.status_code == 200
    html = earlier.content.decode()
    assert "<html" not in html  # a partial, not the page
    assert 'id="curve-panel"' in html
    assert 'id="band" class="band-body" data-view="day" hx-swap-oob="true"' in html
    assert _figure(html)["layout"]["xaxis"]["ticktext"][0] == "21:00"
    assert "Answer length from Tue 21:00 to Wed 03:00" in html
    # Two more hours of winding on the band: 21:00-23:00 is eight more cells.
    assert _cells(html, "winding") == _cells(saved.content.decode(), "winding") + 8
    assert not Schedule.objects.filter(user=user).exists(), "a preview never saves"


def test_invalid_rows_are_flagged_and_not_drawn(page: PageClient) -> None:
    response = _preview(
        page,
        **{"anchors-2-time": "26:00", "anchors-2-tokens": "900", "anchors-3-tokens": "-5"},
    )
    html = response.content.decode()
    assert re.search(
        r'id="anchor-msg-2"[^>]*hx-swap-oob="true">&#x27;26:00&#x27; is not a time', html
    )
    assert re.search(r'id="anchor-msg-3"[^>]*hx-swap-oob="true">must be between 1 and', html)
    assert re.search(r'id="anchor-msg-1"[^>]*hx-swap-oob="true"></span>', html)
    assert re.search(r'id="err-anchors"[^>]*hx-swap-oob="true">row 3', html)
    assert "2 flagged anchor rows are not drawn" in html
    assert _figure(html)["data"][1]["y"] == [2048, 1600, 64]


def test_other_field_errors_come_back_live(page: PageClient) -> None:
    html = _preview(page, holiday_calendar="XX", extra_holidays="someday").content.decode()
    assert re.search(r'id="err-holiday_calendar"[^>]*>[^<]*XX', html)
    assert re.search(r'id="err-extra_holidays"[^>]*>[^<]*is not a date', html)
    assert re.search(r'id="err-curfew_start"[^>]*></p>', html)
    # Still drawn, from the valid part of the form.
    assert _figure(html)["data"][0]["y"][0] == 2048


def test_the_preview_is_the_schedule_sections_alone(page: PageClient) -> None:
    # A Replies setting is no edit of the Schedule form: not judged here.
    html = _preview(page, off_duty_reply="").content.decode()
    assert "must not be empty" not in html
    assert 'id="err-off_duty_reply"' not in html


def test_band_week_view_through_the_preview(page: PageClient) -> None:
    html = _preview(page, band_view="week").content.decode()
    assert html.count('<ol class="band"') == 7
    dates = re.findall(r'class="band-row[^"]*" data-date="([\d-]+)"', html)
    assert dates[0] == "2026-09-28"
    assert dates[-1] == "2026-10-04"


def test_band_has_96_cells_and_the_schedule_of_that_date() -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    day = band_day(schedule, TUESDAY)
    assert len(day.cells) == 96
    states = [cell.state for cell in day.cells]
    assert states[0:12] == ["winding"] * 12  # Monday's night, 00:00-03:00
    assert states[12:36] == ["lights-out"] * 24
    assert states[36:48] == ["off-duty"] * 12  # peak 09:00-12:00
    assert states[92:] == ["winding"] * 4
    assert [(p.start, p.end, p.state) for p in day.plan][:3] == [
        ("00:00", "03:00", "winding"),
        ("03:00", "09:00", "lights-out"),
        ("09:00", "12:00", "off-duty"),
    ]
    assert day.valley is None


@pytest.mark.parametrize(
    ("day", "valley"),
    [(dt.date(2026, 9, 26), "weekend"), (dt.date(2026, 10, 1), "holiday: ")],
)
def test_weekends_and_holidays_are_valley_on_their_dates(day: dt.date, valley: str) -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    band = band_day(schedule, day)
    assert band.valley is not None
    assert band.valley.startswith(valley)
    assert "off-duty" not in {cell.state for cell in band.cells}
    assert {cell.state for cell in band.cells} >= {"on-duty", "lights-out"}


def test_week_starts_on_monday_and_marks_now() -> None:
    schedule = schedule_config.build(schedule_config.default_config())
    now = dt.datetime(2026, 9, 30, 10, 7, tzinfo=SHANGHAI)
    week = band_week(schedule, dt.date(2026, 10, 1), now=now)
    assert next(d.day for d in week) == dt.date(2026, 9, 28)
    assert len(week) == 7
    marked = [(d.day, c.start) for d in week for c in d.cells if c.now]
    assert marked == [(dt.date(2026, 9, 30), "10:00")]


def test_band_on_a_dst_day_still_has_96_cells() -> None:
    config = {**schedule_config.default_config(), "timezone": "America/New_York"}
    schedule = schedule_config.build(config)
    for day in (dt.date(2026, 3, 8), dt.date(2026, 11, 1)):
        band = band_day(schedule, day)
        assert len(band.cells) == 96
        assert band.plan[0].start == "00:00"
        assert band.plan[-1].end == "24:00"


def test_page_band_follows_the_chosen_date(page: PageClient) -> None:
    html = page.get("/", {"band_date": "2026-10-01"}).content.decode()
    assert 'data-date="2026-10-01"' in html
    assert "tag-valley" in html
    assert _cells(html, "off-duty") == 0
    tuesday = page.get("/", {"band_date": "2026-09-29"}).content.decode()
    assert _cells(tuesday, "off-duty") == 28  # 09-12 and 14-18
    bad = page.get("/", {"band_date": "someday"}).content.decode()
    assert "is not a date" in bad
