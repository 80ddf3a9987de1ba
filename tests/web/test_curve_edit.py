"""What the chart tells the drag-and-keyboard editor (static/curfew/curve-drag.js):
which anchors the curve shape ignores (the engine's ``unused_anchors``, drawn
hollow and apart), the anchors' own times, the time window and the token
bounds read from the declaration."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.utils import translation

from curfew_core.engine import unused_anchors
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import values as v
from curfew_core.schedules.config import ConfigError
from curfew_core.web.schedule import charts, contexts
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields
from tests.web.test_preview import TUESDAY, _figure


def _figure_for(**changes: Any) -> tuple[dict[str, Any], Any]:
    config = schedule_config.apply_changes(schedule_config.default_config(), changes)
    schedule = schedule_config.build(config)
    night = charts.night_of(schedule, TUESDAY)
    # English whatever an earlier test left active (the words are checked below).
    with translation.override("en"):
        text = contexts.chart_text()
    return charts.curve_figure(schedule, night, now=None, text=text), schedule


def _traces(figure: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {trace["meta"]: trace for trace in figure["data"] if "meta" in trace}


def test_ease_in_draws_its_middle_anchors_apart_and_says_why() -> None:
    figure, schedule = _figure_for(curve="ease_in")
    traces = _traces(figure)
    assert traces["anchors"]["y"] == [2048, 64]
    ignored = traces["anchors-ignored"]
    assert ignored["y"] == [1600, 800, 320]
    assert ignored["marker"]["symbol"] == "diamond-open"
    assert "ignored by ease-in" in ignored["hovertemplate"]
    anchors = figure["edit"]["anchors"]
    assert [a["at"] for a in anchors] == ["23:00", "00:00", "01:00", "02:00", "03:00"]
    flagged = {i for i, a in enumerate(anchors) if a["ignored"]}
    assert flagged == unused_anchors(schedule.fractions, schedule.curve) == {1, 2, 3}
    assert all("ease-in" in a["why"] for a in anchors if a["ignored"])
    assert all(a["why"] == "" for a in anchors if not a["ignored"])


def test_step_ignores_an_anchor_at_lights_out_and_linear_none() -> None:
    figure, _ = _figure_for(curve="step")
    assert [a["at"] for a in figure["edit"]["anchors"] if a["ignored"]] == ["03:00"]
    assert _traces(figure)["anchors-ignored"]["y"] == [64]
    assert "lights-out" in figure["edit"]["anchors"][-1]["why"]
    figure, _ = _figure_for(curve="linear")
    assert "anchors-ignored" not in _traces(figure)
    assert not any(a["ignored"] for a in figure["edit"]["anchors"])


def test_token_bounds_are_where_the_validation_layer_refuses() -> None:
    low, high = charts.anchor_token_bounds()
    assert (low, high) == (1, v.MAX_TOKENS_LIMIT)
    base = schedule_config.default_config()
    for tokens in (low, high):
        schedule_config.apply_changes(base, {"anchors": [["23:00", tokens]]})
    for tokens in (low - 1, high + 1):
        with pytest.raises(ConfigError):
            schedule_config.apply_changes(base, {"anchors": [["23:00", tokens]]})
    figure, _ = _figure_for()
    assert figure["edit"]["tokens"] == {
        "min": low,
        "max": high,
        "step": charts.TOKEN_STEP,
        "bigStep": charts.TOKEN_BIG_STEP,
    }


def test_a_weekday_of_its_own_keeps_the_anchors_own_times() -> None:
    # Tuesday's night is 00:00-05:00; anchors are written on 23:00-03:00 and
    # stretched. The chart labels say Tuesday's clock; the rows' times are the
    # anchors' own, which the script matches rows by.
    figure, _ = _figure_for(weekdays={"tue": {"curfew_start": "00:00", "lights_out": "05:00"}})
    edit = figure["edit"]
    assert edit["time"] == {"origin": 23 * 60, "span": 240, "window": 300, "step": 5}
    assert edit["anchors"][2]["at"] == "01:00"
    assert edit["anchors"][2]["x"] == 150.0
    assert _traces(figure)["anchors"]["customdata"][2] == "02:30"


def test_no_winding_has_nothing_to_edit() -> None:
    figure, _ = _figure_for(lights_out="23:00", anchors=[["23:00", 100]])
    assert figure["edit"] is None


def test_the_preview_carries_the_edit_block(page: PageClient) -> None:
    fields = form_fields(page.get("/schedule/").content.decode(), "schedule-form")
    data = as_post(fields, curve="ease_in", band_date=TUESDAY.isoformat(), band_view="day")
    html = page.post("/schedule/preview/", data, htmx=True).content.decode()
    anchors = _figure(html)["edit"]["anchors"]
    assert [a["ignored"] for a in anchors] == [False, True, True, True, False]


def test_the_editors_words_are_translated() -> None:
    with translation.override("zh-hans"):
        text = contexts.chart_text()
    assert "缓入" in text.ignored["ease_in"]
    assert "拖动锚点" in text.drag_help
    assert "%(step)s" not in text.drag_help
    assert "5" in text.drag_help
    assert text.announce == "锚点 %(n)s：%(time)s，%(tokens)s tokens"


# -- the night the chart draws (issue 39) ----------------------------------------------

SATURDAY = dt.date(2026, 10, 3)


def _caption(html: str) -> str:
    found = re.search(r'<p class="muted small chart-caption">(.*?)</p>', html, re.S)
    assert found, "no chart caption"
    return " ".join(found.group(1).split())


def test_a_weekday_night_edited_on_a_saturday_draws_that_night(page: PageClient) -> None:
    """Weekday nights (Sunday to Thursday evenings) moved to 21:00-01:00 on a
    Saturday: the chart draws Sunday's night, the first the edit changes, not
    Saturday's, which the edit leaves as it was."""
    fields = form_fields(page.get("/schedule/").content.decode(), "schedule-form")
    edit = {"night_days": "weekdays", "wg_curfew_start": "21:00", "wg_lights_out": "01:00"}
    data = as_post(fields, band_date=SATURDAY.isoformat(), band_view="day", **edit)
    with translation.override("en"):
        html = page.post("/schedule/preview/", data, htmx=True).content.decode()
    assert _caption(html) == (
        "Answer length from Sun 21:00 to Mon 01:00, exactly as gateways will get it."
    )
    figure = _figure(html)
    assert figure["layout"]["annotations"][0]["text"].endswith("01:00")
    assert figure["edit"]["time"]["window"] == 240
    assert [night["drawn"] for night in figure["nights"]] == [True, False]
    # Control: the same page without the edit draws Saturday's own night.
    unchanged = as_post(fields, band_date=SATURDAY.isoformat(), band_view="day")
    with translation.override("en"):
        html = page.post("/schedule/preview/", unchanged, htmx=True).content.decode()
    assert _caption(html) == (
        "Answer length from Sat 23:00 to Sun 03:00, exactly as gateways will get it."
    )
    # A night chosen on the chart is drawn whatever the edit changes.
    chosen = as_post(
        fields, band_date=SATURDAY.isoformat(), band_view="day", chart_night="fri", **edit
    )
    with translation.override("en"):
        html = page.post("/schedule/preview/", chosen, htmx=True).content.decode()
    assert _caption(html).startswith("Answer length from Fri 23:00 to Sat 03:00")
    assert 'name="chart_night" value="fri" checked' in html


def test_the_chart_offers_each_different_night_once() -> None:
    config = schedule_config.apply_changes(
        schedule_config.default_config(),
        {
            "weekdays": {
                day: {"curfew_start": "22:00", "lights_out": "02:00"}
                for day in ("sun", "mon", "tue", "wed", "thu")
            }
        },
    )
    schedule = schedule_config.build(config)
    with translation.override("en"):
        nights = charts.night_choices(schedule, charts.night_of(schedule, SATURDAY))
    assert nights == [
        {"value": "mon", "label": "Mon Tue Wed Thu Sun 22:00–02:00", "drawn": False},
        {"value": "fri", "label": "Fri Sat 23:00–03:00", "drawn": True},
    ]


def test_each_night_draws_the_same_shape_in_its_own_window() -> None:
    """The curve belongs to the night: Saturday's shorter night draws the
    default night's shape (places through the wind-down), not its clock times."""
    config = schedule_config.apply_changes(
        schedule_config.default_config(),
        {"weekdays": {"sat": {"curfew_start": "01:00", "lights_out": "03:00"}}},
    )
    schedule = schedule_config.build(config)
    figure = charts.curve_figure(
        schedule, charts.night_of(schedule, SATURDAY), now=None, text=contexts.chart_text()
    )
    assert [a["x"] for a in figure["edit"]["anchors"]] == [0, 30, 60, 90, 120]
    assert [a["tokens"] for a in figure["edit"]["anchors"]] == [2048, 1600, 800, 320, 64]
