"""The curve editor's chart: a Plotly figure as plain JSON.

Every plotted budget comes from the engine's own curve function on the
schedule's own anchor fractions (``Schedule.fractions``), the very numbers
``decide`` uses, so the chart is exactly what gateways get, not a drawing of it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from django.utils.dates import WEEKDAYS_ABBR

from curfew_core.engine import (
    Curve,
    Night,
    NightTimes,
    Overrides,
    Schedule,
    State,
    TeamSide,
    decide_member,
    format_wall,
    night_window,
    unused_anchors,
)
from curfew_core.engine.clock import cyclic_span, to_wall
from curfew_core.engine.curve import budget_at
from curfew_core.engine.effective import PLAIN_CALL
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.declaration import Declaration, ScheduleSettings
from curfew_core.schedules.values import WEEKDAYS


@dataclass(frozen=True, slots=True)
class ChartText:
    """Words on the chart, translated by the caller."""

    budget: str
    anchor: str
    now: str
    lights_out: str
    on_duty: str
    tokens: str
    empty_window: str
    #: Why a curve shape ignores an anchor, by shape (``Curve`` value).
    ignored: Mapping[str, str]
    #: How to use the chart from the keyboard (its ``aria-label``).
    drag_help: str
    #: What the chart announces about the selected anchor: ``%(n)s``, ``%(time)s``, ``%(tokens)s``.
    announce: str
    #: A member's second line: what gateways get with the team's night too.
    with_team: str = "With your team"
    #: The y axis's title (``tokens`` when not given).
    axis: str = ""


#: Dragging snaps an anchor's time to this many minutes, as the arrow keys move it.
TIME_STEP_MINUTES = 5
#: Up/Down change the selected anchor's tokens by this much; with Shift, by the big step.
TOKEN_STEP = 16
TOKEN_BIG_STEP = 256


def anchor_token_bounds(declaration: Declaration = ScheduleSettings) -> tuple[int, int]:
    """The fewest and most tokens an anchor row may hold, read from the
    declared type of ``anchors`` (``list[tuple[Time, Tokens]]``), so the
    chart's drag clamps where the validation layer refuses."""
    (row,) = get_args(declaration.model_fields["anchors"].annotation)
    tokens = get_args(row)[1]
    assert get_origin(tokens) is Annotated
    bounds: dict[str, int] = {}
    for item in get_args(tokens)[1:]:
        for constraint in getattr(item, "metadata", [item]):
            for name in ("ge", "le"):
                if getattr(constraint, name, None) is not None:
                    bounds[name] = getattr(constraint, name)
    return bounds["ge"], bounds["le"]


#: The night of one evening is the engine's rule; the chart only draws it.
night_of = night_window

#: The form field that picks which night the chart draws: empty for the night
#: your edit changes (else the band's day), or a weekday (``"sat"``) for the
#: next night of that evening.
CHART_NIGHT = "chart_night"


def evening_to_draw(
    saved: Mapping[str, Any], schedule: Schedule, day: dt.date, params: Mapping[str, Any]
) -> dt.date:
    """The evening whose night the chart draws, from ``day`` on.

    Chosen (``CHART_NIGHT``): the next such evening. Otherwise the night you
    are editing: the first evening of the coming week whose times the edit
    (``saved`` -> ``schedule``) changes, so a weekday night edited on a
    Saturday draws that weekday's night, not Saturday's; with no night
    changed, ``day``'s own (tonight, unless the band shows another day).
    """
    week = [day + dt.timedelta(days=n) for n in range(7)]
    choice = str(params.get(CHART_NIGHT) or "")
    if choice in WEEKDAYS:
        index = WEEKDAYS.index(choice)
        return next(evening for evening in week if evening.weekday() == index)
    try:
        before = schedule_config.build(saved)
    except (KeyError, TypeError, ValueError):
        return day
    changed = [
        evening
        for evening in week
        if before.night_for(evening.weekday()) != schedule.night_for(evening.weekday())
    ]
    return changed[0] if changed else day


def _evening_of(schedule: Schedule, night: Night) -> dt.date:
    """The evening ``night`` belongs to (its start's date, or the day before
    for a night that starts after midnight)."""
    start = night.start.date()
    before = start - dt.timedelta(days=1)
    return before if night_window(schedule, before).start == night.start else start


def night_choices(schedule: Schedule, night: Night) -> list[dict[str, Any]]:
    """The different nights of the week, each once with the evenings that
    have it (Monday first): what the chart may draw (``CHART_NIGHT``).
    ``drawn`` marks the one ``night`` is."""
    groups: dict[NightTimes, list[int]] = {}
    for index in range(7):
        groups.setdefault(schedule.night_for(index), []).append(index)
    drawn = _evening_of(schedule, night).weekday()
    return [
        {
            "value": WEEKDAYS[days[0]],
            "label": "{} {}–{}".format(
                " ".join(str(WEEKDAYS_ABBR[index]) for index in days),
                format_wall(times.curfew_start),
                format_wall(times.lights_out),
            ),
            "drawn": drawn in days,
        }
        for times, days in groups.items()
    ]


def budget_at_offset(schedule: Schedule, night: Night, minutes: float) -> int | None:
    """The engine's budget ``minutes`` into the window (``None`` outside it)."""
    if night.minutes == 0 or not schedule.fractions or not 0 <= minutes < night.minutes:
        return None
    return budget_at(schedule.fractions, schedule.curve, minutes / night.minutes)


def _label(night: Night, minutes: float) -> str:
    return (night.start + dt.timedelta(minutes=minutes)).strftime("%H:%M")


def budget_table(schedule: Schedule, night: Night) -> list[tuple[str, int | None]]:
    """The budget at each anchor and each whole hour of the window, in order;
    the accessible (and script-free) twin of the chart."""
    if night.minutes == 0:
        return []
    offsets = {round(fraction * night.minutes, 6) for fraction, _ in schedule.fractions}
    first_hour = 60 - night.start.minute if night.start.minute else 0
    offsets.update(range(first_hour, night.minutes, 60))
    rows = [
        (_label(night, offset), budget_at_offset(schedule, night, offset))
        for offset in sorted(o for o in offsets if 0 <= o < night.minutes)
    ]
    rows.append((_label(night, night.minutes), None))
    return rows


def _samples(night: Night) -> list[int]:
    """Whole minutes through the window (every minute up to a 12-hour night)."""
    step = 1 if night.minutes <= 12 * 60 else 2
    return list(range(0, night.minutes, step))


def curve_figure(
    schedule: Schedule,
    night: Night,
    *,
    now: dt.datetime | None,
    text: ChartText,
    team: TeamSide | None = None,
) -> dict[str, Any]:
    """A Plotly figure (``{"data", "layout"}``) of the budget across ``night``.

    The x axis is minutes since curfew start, labelled with wall-clock times;
    the window is padded a little on both sides so on-duty before it and
    lights-out after it are visible. ``now`` is marked when it falls inside.

    With ``team`` (a member's team side) a second line, ``meta: "with-team"``,
    draws what gateways get: the engine's verdict (``decide_member``, the
    standing schedules, no override) at each minute, its budget while getting
    sleepy and 0 where the AI is held off; the x range widens to show the
    team's night where it starts earlier or ends later. The first line stays
    the member's own curve, the one being edited.
    """
    combined = _team_trace(schedule, team, night, text) if team is not None else None
    layout = _layout(night, text, span=_span_of(combined))
    if night.minutes == 0 or not schedule.fractions:
        layout["annotations"].append(
            {
                "x": 0.5,
                "y": 0.5,
                "xref": "paper",
                "yref": "paper",
                "showarrow": False,
                "text": text.empty_window,
            }
        )
        return {
            "data": [],
            "layout": layout,
            "edit": None,
            "nights": night_choices(schedule, night),
        }
    anchors = _anchor_points(schedule, night, text)
    data = [_budget_trace(schedule, night, text), *_anchor_traces(anchors, schedule, night, text)]
    figure_edit = _edit(schedule, night, anchors, text)
    if combined is not None:
        data.insert(1, combined)
        layout["showlegend"] = True
        layout["legend"] = {"orientation": "h", "y": -0.2}
        layout["margin"]["b"] = 72
    marks = _now_marks(schedule, night, now, text) if now is not None else None
    if marks is not None:
        data.append(marks[0])
        layout["shapes"].append(marks[1])
    return {
        "data": data,
        "layout": layout,
        "edit": figure_edit,
        "nights": night_choices(schedule, night),
    }


def _ticks(night: Night, lo: int, hi: int) -> list[int]:
    """The chart minutes of whole hours from ``lo`` to ``hi``, at most ten
    (every other, or third, … when more)."""
    ticks = [m for m in range(lo, hi + 1) if (night.start + dt.timedelta(minutes=m)).minute == 0]
    if len(ticks) > 10:
        ticks = ticks[:: -(-len(ticks) // 10)]
    return ticks


def _span_of(trace: dict[str, Any] | None) -> tuple[int, int] | None:
    """The first and last chart minute a team line holds a budget (or the
    AI held off), to widen the chart to; ``None`` without one."""
    if trace is None:
        return None
    held = [x for x, y in zip(trace["x"], trace["y"], strict=True) if y is not None]
    return (min(held), max(held)) if held else None


def _team_trace(
    schedule: Schedule, team: TeamSide, night: Night, text: ChartText
) -> dict[str, Any]:
    """What gateways get through a member's night with the team's: the
    engine's verdict each sampled minute (``decide_member``, the standing
    schedules), from 6 hours before curfew start to 6 after lights-out,
    trimmed to the stretch that is not working normally around the night."""
    standing = TeamSide(team.schedule, team.policy)
    # Every fifth minute: a verdict each is the cost of the live preview.
    step = 5
    xs: list[int] = []
    ys: list[int | None] = []
    for x in range(-6 * 60, night.minutes + 6 * 60 + 1, step):
        wall = night.start + dt.timedelta(minutes=x)
        instant = wall.replace(tzinfo=schedule.timezone)
        verdict = decide_member(instant, schedule, PLAIN_CALL, Overrides(), standing)
        if verdict.state is State.WINDING:
            ys.append(verdict.budget)
        elif verdict.state is State.ON_DUTY:
            ys.append(None)
        else:
            ys.append(0)  # held off: nothing reaches the model
        xs.append(x)
    # Only the night this chart is about: the held stretch around the window.
    inside = [i for i, x in enumerate(xs) if 0 <= x <= night.minutes and ys[i] is not None]
    if inside:
        first, last = inside[0], inside[-1]
        while first > 0 and ys[first - 1] is not None:
            first -= 1
        while last < len(xs) - 1 and ys[last + 1] is not None and ys[last + 1] != 0:
            last += 1
        xs, ys = xs[first : last + 1], ys[first : last + 1]
    else:
        xs, ys = [], []
    return {
        "type": "scatter",
        "mode": "lines",
        "name": text.with_team,
        "meta": "with-team",
        "x": xs,
        "y": ys,
        # Coloured by the page's theme (static/curfew/settings.js), by ``meta``.
        "line": {"width": 2, "dash": "dash"},
        "connectgaps": False,
        "customdata": [_label(night, x) for x in xs],
        "hovertemplate": f"{text.with_team} %{{customdata}} · %{{y}} {text.tokens}<extra></extra>",
    }


def _layout(
    night: Night, text: ChartText, *, span: tuple[int, int] | None = None
) -> dict[str, Any]:
    """The chart's frame: the window padded on both sides (so on-duty before
    it and lights-out after it show), hour ticks, the night after lights-out
    shaded and lights-out marked with a dashed line and its time. ``span``:
    a team line's first and last minute, which the range takes in too."""
    window = night.minutes
    pad = max(20, round(window * 0.08)) if window else 60
    lo, hi = -pad, window + pad
    if span is not None:
        lo, hi = min(lo, span[0] - pad), max(hi, min(span[1], window + 6 * 60) + pad)
    ticks = _ticks(night, lo, hi)
    return {
        "margin": {"l": 56, "r": 16, "t": 28, "b": 44},
        "height": 320,
        "showlegend": False,
        "hovermode": "closest",
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {
            "range": [lo, hi],
            "tickvals": ticks,
            "ticktext": [_label(night, m) for m in ticks],
            "fixedrange": True,
            "zeroline": False,
            "showgrid": True,
        },
        "yaxis": {
            "title": {"text": text.axis or text.tokens},
            "rangemode": "tozero",
            "fixedrange": True,
            "zeroline": True,
        },
        "shapes": [
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": window,
                "x1": hi,
                "y0": 0,
                "y1": 1,
                "line": {"width": 0},
                "fillcolor": "rgba(40,40,90,0.22)",
                "layer": "below",
                "name": "night",
            },
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": window,
                "x1": window,
                "y0": 0,
                "y1": 1,
                "line": {"width": 2, "dash": "dash", "color": "#332288"},
                "name": "night-line",
            },
        ],
        "annotations": [
            {
                "x": window,
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "yanchor": "bottom",
                # Ending at the line, over the night: the line is in the right
                # half of the plot, so the label never runs off a phone's
                # narrow chart ("Lights out 03:" when centred on it).
                "xanchor": "right",
                "showarrow": False,
                "text": f"{text.lights_out} {_label(night, window)}",
            },
        ],
    }


def _budget_trace(schedule: Schedule, night: Night, text: ChartText) -> dict[str, Any]:
    """The budget line through the window, sampled by the minute (``_samples``);
    it holds its last value until lights-out, where it stops."""
    xs = _samples(night)
    ys = [budget_at_offset(schedule, night, x) for x in xs]
    xs.append(night.minutes)
    ys.append(ys[-1])
    return {
        "type": "scatter",
        "mode": "lines",
        "name": text.budget,
        "x": xs,
        "y": ys,
        "line": {"width": 3, "shape": "hv" if schedule.curve is Curve.STEP else "linear"},
        "fill": "tozeroy",
        "customdata": [_label(night, x) for x in xs],
        "hovertemplate": f"%{{customdata}} · %{{y}} {text.tokens}<extra></extra>",
    }


def _anchor_points(schedule: Schedule, night: Night, text: ChartText) -> list[dict[str, Any]]:
    """Each anchor at its place on ``night``, and whether the curve ignores it
    (``unused_anchors``), with why."""
    unused = unused_anchors(schedule.fractions, schedule.curve)
    why = text.ignored.get(schedule.curve.value, "")
    return [
        {
            "at": format_wall(anchor.at),
            "x": round(fraction * night.minutes, 3),
            "tokens": tokens,
            "ignored": index in unused,
            "why": why if index in unused else "",
        }
        for index, (anchor, (fraction, tokens)) in enumerate(
            zip(schedule.anchors, schedule.fractions, strict=True)
        )
    ]


def _anchor_traces(
    anchors: list[dict[str, Any]], schedule: Schedule, night: Night, text: ChartText
) -> list[dict[str, Any]]:
    """The anchors as markers: one trace of those the curve goes through, one
    of those it ignores (open diamonds, and why); none for an empty group."""
    why = text.ignored.get(schedule.curve.value, "")
    traces: list[dict[str, Any]] = []
    for ignored in (False, True):
        shown = [a for a in anchors if a["ignored"] is ignored]
        if not shown:
            continue
        note = f" · {why}" if ignored else ""
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{text.anchor} ({why})" if ignored else text.anchor,
                # The page's script tells the two anchor traces apart by this.
                "meta": "anchors-ignored" if ignored else "anchors",
                "x": [a["x"] for a in shown],
                "y": [a["tokens"] for a in shown],
                "marker": {
                    "size": 11,
                    "symbol": "diamond-open" if ignored else "diamond",
                    "line": {"width": 2},
                },
                "customdata": [_label(night, a["x"]) for a in shown],
                "hovertemplate": f"{text.anchor} %{{customdata}} → %{{y}} {text.tokens}{note}"
                "<extra></extra>",
            }
        )
    return traces


def _now_marks(
    schedule: Schedule, night: Night, now: dt.datetime, text: ChartText
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``now`` on the chart, when it has a budget there (inside the window): a
    marker with its time and budget, and a dotted line; ``None`` otherwise."""
    wall = to_wall(now, schedule.timezone)
    offset = (wall - night.start).total_seconds() / 60
    budget = budget_at_offset(schedule, night, offset)
    if budget is None:
        return None
    marker = {
        "type": "scatter",
        "mode": "markers+text",
        "name": text.now,
        "x": [round(offset, 3)],
        "y": [budget],
        "text": [f"{text.now} {wall:%H:%M} · {budget}"],
        "textposition": "top right",
        "marker": {"size": 14, "symbol": "circle-open", "line": {"width": 3}},
        "hovertemplate": f"{text.now} {wall:%H:%M} · %{{y}} {text.tokens}<extra></extra>",
    }
    line = {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": offset,
        "x1": offset,
        "y0": 0,
        "y1": 1,
        "line": {"width": 1, "dash": "dot"},
        "name": "now-line",
    }
    return marker, line


def _edit(
    schedule: Schedule, night: Night, anchors: list[dict[str, Any]], text: ChartText
) -> dict[str, Any]:
    """What the chart's drag and keyboard editing need (static/curfew/curve-drag.js).

    Anchors are the curve's places through the wind-down, written as clock
    times on the default night's window and drawn on ``night``'s
    (``Schedule.fractions``): a point at chart minute ``x`` is the time
    ``origin + x / window * span`` (snapped), kept in ``0..span``. The script
    matches each anchor to its table row by ``at``.
    """
    origin = schedule.night.curfew_start
    span = schedule.night.winding_minutes
    if span == 0 and schedule.anchors:  # the anchors' own span stands in (see anchor_fractions)
        origin = schedule.anchors[0].at
        span = cyclic_span(origin, schedule.anchors[-1].at)
    low, high = anchor_token_bounds()
    return {
        "anchors": anchors,
        "time": {
            "origin": origin,
            "span": span,
            "window": night.minutes,
            "step": TIME_STEP_MINUTES,
        },
        "tokens": {"min": low, "max": high, "step": TOKEN_STEP, "bigStep": TOKEN_BIG_STEP},
        "text": {"help": text.drag_help, "announce": text.announce},
    }
