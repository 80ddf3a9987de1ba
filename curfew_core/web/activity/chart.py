"""The Activity page's chart: a Plotly figure as plain JSON (drawn by
``static/curfew/activity.js`` from a ``<script type="application/json">``
block, never an inline script), and its legend's totals."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from curfew_core.selectors.ledger_page import ChartCell, Period
from curfew_core.vocabulary import STATE_ORDER
from curfew_core.web.activity.words import DRY_RUN, KIND_ORDER, series_name


@dataclass(frozen=True, slots=True)
class SeriesTotal:
    state: str
    action: str
    name: str
    count: int


def _series_order(key: tuple[str, str]) -> tuple[int, int]:
    state, action = key
    return (
        STATE_ORDER.index(state) if state in STATE_ORDER else len(STATE_ORDER),
        KIND_ORDER.index(action) if action in KIND_ORDER else len(KIND_ORDER),
    )


def _kinds(cell: ChartCell) -> Iterator[tuple[tuple[str, str], int]]:
    """What a cell holds, by state and kind: the decisions acted on under
    their action, those of a dry run apart (they changed nothing)."""
    acted = cell.count - cell.dry_run
    if acted:
        yield (cell.state, cell.action), acted
    if cell.dry_run:
        yield (cell.state, DRY_RUN), cell.dry_run


def _bin(cell: ChartCell, hourly: bool) -> str:
    if hourly:
        return f"{cell.local_date.isoformat()} {cell.local_hour:02d}:00"
    return cell.local_date.isoformat()


def series_totals(cells: list[ChartCell]) -> list[SeriesTotal]:
    """Each kind of decision in the period and how many, in the legend's order."""
    counts: dict[tuple[str, str], int] = {}
    for cell in cells:
        for key, n in _kinds(cell):
            counts[key] = counts.get(key, 0) + n
    return [
        SeriesTotal(state, action, series_name(state, action), counts[(state, action)])
        for state, action in sorted(counts, key=_series_order)
    ]


def ledger_figure(cells: list[ChartCell], period: Period) -> dict[str, Any]:
    """A stacked bar per local hour (7 days) or local day (30 days), one
    trace per state and action (dry runs apart), named in words. The x axis is the user's
    wall clock: a fall-back night's two 01:00 hours share one bar."""
    hourly = period.days <= 7
    bins: dict[tuple[str, str], dict[str, int]] = {}
    #: Each bar's height (all its kinds stacked).
    heights: dict[str, int] = {}
    for cell in cells:
        key = _bin(cell, hourly)
        for kind, n in _kinds(cell):
            per_bin = bins.setdefault(kind, {})
            per_bin[key] = per_bin.get(key, 0) + n
            heights[key] = heights.get(key, 0) + n
    data = []
    for state, action in sorted(bins, key=_series_order):
        per_bin = bins[(state, action)]
        xs = sorted(per_bin)
        data.append(
            {
                "type": "bar",
                "name": series_name(state, action),
                "x": xs,
                "y": [per_bin[x] for x in xs],
                "xperiod": (3_600_000 if hourly else 86_400_000),
                "xperiodalignment": "start",
                "meta": {"state": state, "action": action},
                "hovertemplate": "%{fullData.name}: %{y}<extra></extra>",
            }
        )
    start = period.first_day.isoformat()
    end = (period.last_day + dt.timedelta(days=1)).isoformat()
    layout: dict[str, Any] = {
        "barmode": "stack",
        "bargap": 0.15,
        "margin": {"l": 44, "r": 12, "t": 12, "b": 40},
        "xaxis": {
            "type": "date",
            "range": [start, end],
            "fixedrange": True,
            # Numbers, not month names: the same in both languages.
            "tickformat": "%m-%d",
            "hoverformat": "%Y-%m-%d %H:%M" if hourly else "%Y-%m-%d",
        },
        "yaxis": {
            "title": {"text": _("decisions per hour") if hourly else _("decisions per day")},
            "rangemode": "tozero",
            "fixedrange": True,
            "tickformat": "d",
        },
        "legend": {"orientation": "h", "y": -0.18, "x": 0, "traceorder": "normal"},
        "hovermode": "x unified",
        "showlegend": True,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
    }
    if max(heights.values(), default=0) <= 10:
        # Short bars: a tick per whole decision. Left to itself Plotly ticks
        # every half, and "d" printed 0 1 1 2 2 3 3.
        layout["yaxis"]["dtick"] = 1
    if not data:
        layout["annotations"] = [
            {
                "text": _("No decisions in this period yet."),
                "showarrow": False,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
            }
        ]
        layout["yaxis"]["range"] = [0, 1]
    return {"data": data, "layout": layout}
