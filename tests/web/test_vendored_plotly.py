"""The pages' plotly.js: the basic bundle, vendored, in step with the pinned
plotly package, and enough for every chart the pages draw.

The Schedule and Activity pages load npm's ``plotly.js-basic-dist-min``
(scatter, bar and pie: 1.2 MB) from ``static/vendor/plotly/``, not the full
bundle the Python package ships (4.8 MB, about a second more of a phone's CPU
per page load). The figures are still checked by the Python package's own
validation (``tests/web/test_preview.py``), so the two must be one plotly.js
version; and a chart that used a trace type outside the bundle would draw
nothing in the browser, so every trace the chart code makes is checked here.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from plotly.offline import get_plotlyjs_version

from curfew_core.engine import TeamSide
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors import ledger_page
from curfew_core.web.activity import chart
from curfew_core.web.schedule import charts, contexts

BUNDLE = Path(__file__).resolve().parents[2] / "static" / "vendor" / "plotly"
SCRIPT = BUNDLE / "plotly-basic.min.js"
#: The trace types a bundle registers (each trace module's declaration).
REGISTERED = re.compile(r'moduleType:"trace",name:"(\w+)"')


def bundle_text() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def test_the_bundle_is_the_basic_one_at_the_pinned_packages_version() -> None:
    head = bundle_text()[:200]
    found = re.search(r"plotly\.js \(basic - minified\) v(\S+)", head)
    assert found, head
    assert found.group(1) == get_plotlyjs_version()
    assert (BUNDLE / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_the_pages_link_the_vendored_bundle_only() -> None:
    templates = Path(__file__).resolve().parents[2] / "templates"
    texts = {
        path.relative_to(templates).as_posix(): path.read_text(encoding="utf-8")
        for path in templates.rglob("*.html")
    }
    linking = sorted(name for name, text in texts.items() if re.search(r"<script[^>]*plotly", text))
    assert linking == ["curfew/_plotly.html"], linking
    assert "{% static 'vendor/plotly/plotly-basic.min.js' %}" in texts["curfew/_plotly.html"]
    including = sorted(name for name, text in texts.items() if "curfew/_plotly.html" in text)
    assert including == ["curfew/activity.html", "curfew/schedule.html"]


def _traces(figure: dict[str, Any]) -> set[str]:
    # Plotly's default trace type is scatter.
    return {trace.get("type", "scatter") for trace in figure["data"]}


def test_every_trace_the_charts_make_is_in_the_bundle() -> None:
    registered = set(REGISTERED.findall(bundle_text()))
    assert registered == {"scatter", "bar", "pie"}  # the basic bundle's own list
    schedule = schedule_config.build(schedule_config.default_config())
    night = charts.night_of(schedule, dt.date(2026, 9, 29))
    inside = dt.datetime(2026, 9, 29, 16, 0, tzinfo=dt.UTC)  # 00:00 in Shanghai: in the night
    made = _traces(
        charts.curve_figure(
            schedule,
            night,
            now=inside,
            text=contexts.chart_text(),
            team=TeamSide(schedule=schedule),
        )
    )
    now = dt.datetime(2026, 11, 3, 17, 0, tzinfo=dt.UTC)
    period = ledger_page.period_of(7, now=now, tz_name="Asia/Shanghai")
    cells = [
        ledger_page.ChartCell(dt.date(2026, 11, 3), 9, "off-duty", "short-circuit", 2),
        ledger_page.ChartCell(dt.date(2026, 11, 3), 23, "winding", "clamp", 3),
    ]
    made |= _traces(chart.ledger_figure(cells, period))
    assert made == {"scatter", "bar"}  # the control: both charts were drawn
    assert made <= registered
