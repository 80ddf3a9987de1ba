"""The Activity section's ledger: what the curfew did, in words and a chart.

The query (period, session, action, page) is read here, forgivingly: a value
the page does not know is named in a notice and ignored, never an error page.
The chart is a Plotly figure as plain JSON (drawn by ``static/curfew/activity.js``
from a ``<script type="application/json">`` block, never an inline script); the
export is a CSV streamed in keyset chunks; the price table is edited through
``services.prices.price_table_set`` (which validates again and audits).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django import forms
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from curfew_core import vocabulary
from curfew_core.engine.verdict import State
from curfew_core.ledger.entry import ACTIONS, MAX_SCOPE
from curfew_core.ledger.savings import (
    MAX_PRICE,
    MAX_WINDOWS,
    REFUSED,
    Bucket,
    Night,
    Savings,
    compared,
    night,
)
from curfew_core.schema.query import Problem, QueryReader
from curfew_core.selectors.ledger_page import (
    PERIODS,
    ChartCell,
    DecisionLine,
    Period,
    export_chunk,
)
from curfew_core.vocabulary import STATE_NAMES, STATE_ORDER

#: What the curfew did, in words (the stored codes stay English).
ACTION_WORDS: dict[str, str | Promise] = {
    "pass": gettext_lazy("passed"),
    "clamp": gettext_lazy("shortened"),
    "short-circuit": gettext_lazy("answered without a request"),
}
#: The chart's own kind for decisions made in a dry run: decided, never acted on.
DRY_RUN = "dry-run"
KIND_WORDS: dict[str, str | Promise] = {
    **ACTION_WORDS,
    REFUSED: gettext_lazy("embedding refused"),
    DRY_RUN: gettext_lazy("dry run, nothing done"),
}
#: The state beside an action in the chart's legend, short.
STATE_SHORT: dict[str, str | Promise] = {
    State.ON_DUTY: gettext_lazy("on duty"),
    State.WINDING: gettext_lazy("winding"),
    State.OFF_DUTY: gettext_lazy("peak"),
    State.LIGHTS_OUT: gettext_lazy("lights out"),
}
#: Where a decision was made (the ledger's ``origin``).
ORIGIN_WORDS: dict[str, str | Promise] = {
    "chat": gettext_lazy("proxy: chat"),
    "completions": gettext_lazy("proxy: completions"),
    "responses": gettext_lazy("proxy: responses"),
    "messages": gettext_lazy("proxy: messages"),
    "embeddings": gettext_lazy("proxy: embeddings"),
    "verdict": gettext_lazy("verdict API"),
    "gateway": gettext_lazy("gateway report"),
}
#: Bottom to top of each stacked bar: what went through, then what was cut.
ACTION_ORDER = ("pass", "clamp", "short-circuit")
KIND_ORDER = (*ACTION_ORDER, REFUSED, DRY_RUN)
MAX_PAGE = 10_000
PER_PAGE = 25


def series_name(state: str, action: str) -> str:
    """``answered without a request (peak)`` for ``("off-duty", "short-circuit")``."""
    return _("%(action)s (%(state)s)") % {
        "action": KIND_WORDS.get(action, action),
        "state": STATE_SHORT.get(state, state),
    }


def action_word(action: str) -> str:
    return str(ACTION_WORDS.get(action, action))


def origin_word(origin: str) -> str:
    return str(ORIGIN_WORDS.get(origin, origin))


def state_word(state: str) -> str:
    return str(STATE_NAMES.get(state, state))


# ---- the query ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LedgerQuery:
    days: int = PERIODS[0]
    session: str = ""
    action: str = ""
    page: int = 1
    #: What was not understood (and so ignored), each naming its parameter.
    problems: tuple[Problem, ...] = field(default=())

    def params(self) -> str:
        """This view's query string (page 1, defaults left out), for the
        export link and the pager."""
        values = {
            "period": "" if self.days == PERIODS[0] else self.days,
            "session": self.session,
            "action": self.action,
        }
        return urlencode({k: v for k, v in values.items() if v != ""})


def parse_query(params: Mapping[str, str]) -> LedgerQuery:
    """The Activity page's filters, through the pages' one query reader: a
    value it cannot use is named, and the default shown instead."""
    query = QueryReader(params)
    days = int(
        query.choice(
            "period",
            {str(p) for p in PERIODS},
            default=str(PERIODS[0]),
            message=_("The period can be 7 or 30 days; showing the last %(days)s days.")
            % {"days": PERIODS[0]},
        )
    )
    action = query.choice(
        "action",
        ACTIONS,
        default="",
        message=_("There is no such action to filter by; showing every action."),
    )
    session = query.text(
        "session",
        max_length=MAX_SCOPE,
        message=_("A session name has at most %(n)s characters; showing every session.")
        % {"n": MAX_SCOPE},
    )
    page = query.whole(
        "page",
        low=1,
        high=MAX_PAGE,
        default=1,
        message=_("There is no such page; showing the first."),
    )
    return LedgerQuery(days, session, action, page, tuple(query.problems))


# ---- the chart ---------------------------------------------------------------


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


def money_text(amount: Decimal) -> str:
    """Cents when there are any; smaller sums to the hundredth of a cent."""
    if amount == 0:
        return "0.00"
    if amount >= Decimal("0.01"):
        return f"{amount.quantize(Decimal('0.01')):,}"
    if amount >= Decimal("0.0001"):
        return f"{amount.quantize(Decimal('0.0001'))}"
    return "< 0.0001"


# ---- the totals: the night in time and money --------------------------------


@dataclass(frozen=True, slots=True)
class Total:
    """One number of the period, in words, beside the period before's."""

    id: str
    number: str
    label: str
    #: ``Week before: 11 (+3)``.
    versus: str
    #: Of a number the arithmetic could not give (money with no usage known): empty.
    note: str = ""
    #: What the number counts, one click away (the manual says the same).
    definition: str = ""


def _signed(delta: int | Decimal, text: str) -> str:
    if delta > 0:
        return "+" + text
    if delta < 0:
        return "−" + text
    return "±0"


def versus_text(before: str, delta: str, days: int) -> str:
    if days == PERIODS[0]:
        return _("Week before: %(before)s (%(delta)s)") % {"before": before, "delta": delta}
    return _("The %(days)s days before: %(before)s (%(delta)s)") % {
        "days": days,
        "before": before,
        "delta": delta,
    }


def hours_text(hours: int) -> str:
    return _("%(h)s h") % {"h": f"{hours:,}"}


def minutes_text(minutes: int) -> str:
    """``3 min``, ``1 h 5 min``, ``12 h``: time as it happened, to the minute."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return _("%(m)s min") % {"m": f"{rest:,}"}
    if not rest:
        return hours_text(hours)
    return _("%(h)s h %(m)s min") % {"h": f"{hours:,}", "m": rest}


def count_text(n: int) -> str:
    return f"{n:,}"


def _versus_int(now: int, before: int, days: int, text: Callable[[int], str] = count_text) -> str:
    return versus_text(text(before), _signed(now - before, text(abs(now - before))), days)


#: What each total counts (docs/manual.md, "Activity's figures", says the same).
DEFINITIONS: dict[str, str | Promise] = {
    "total-time": gettext_lazy(
        "The minutes in which at least one call was held off, at peak or asleep, "
        "read from each decision's own time: a minute counts once however many "
        "calls it held off, and a dry run holds nothing off. Counted from single "
        "decisions, so only as far back as they are kept."
    ),
    "total-not-sent": gettext_lazy(
        "Calls Curfew answered itself while your AI was off, so no request went "
        "to the model. A dry run answers nothing."
    ),
    "total-tokens": gettext_lazy(
        "While your AI gets sleepy, Curfew lowers the longest answer a call may "
        "ask for (max_tokens). This is the sum of those cuts: tokens not asked "
        "for, not tokens saved (an answer may have ended sooner anyway), so they "
        "are not priced."
    ),
    "total-refused": gettext_lazy(
        "Embedding requests refused while your AI was off: nothing was sent and "
        "nothing answered. Not priced."
    ),
    "total-money": gettext_lazy(
        "What the turns answered without a request would have cost: each priced "
        "as a typical call that went through in the period (the usage it "
        "reported), at your prices below. Only where that usage is known; budget "
        "cuts are never priced."
    ),
}


def definition(total_id: str) -> str:
    return str(DEFINITIONS.get(total_id, ""))


def totals(
    this: Night,
    before: Night,
    saved: Savings,
    saved_before: Savings,
    *,
    days: int,
    before_partial: bool = False,
    retention_days: int = 0,
) -> list[Total]:
    """The period's totals: AI time kept off, turns answered without a
    request, tokens not asked for (budget cuts), embeddings refused (when there
    were any), and money, each beside the period before and with its
    definition. Money counts only what it can price, and says what it left out."""
    changes = compared(this, before)
    minutes = changes["minutes_kept_off"]
    time_note = ""
    if before_partial:
        time_note = _(
            "Single decisions are kept for %(days)s days: the period before is "
            "counted from those still kept."
        ) % {"days": retention_days}
    out = [
        Total(
            "total-time",
            minutes_text(minutes.now),
            _("of AI time kept off (%(peak)s at peak, %(asleep)s asleep)")
            % {
                "peak": minutes_text(this.peak_minutes),
                "asleep": minutes_text(this.asleep_minutes),
            },
            _versus_int(minutes.now, minutes.before, days, minutes_text),
            time_note,
            definition("total-time"),
        ),
        Total(
            "total-not-sent",
            f"{this.answered:,}",
            _("turns answered without a request"),
            _versus_int(this.answered, before.answered, days),
            definition=definition("total-not-sent"),
        ),
        Total(
            "total-tokens",
            f"{this.tokens_not_asked_for:,}",
            _("tokens not asked for (budget cuts)"),
            _versus_int(this.tokens_not_asked_for, before.tokens_not_asked_for, days),
            definition=definition("total-tokens"),
        ),
    ]
    refused = changes["embeddings_refused"]
    if refused.now or refused.before:
        out.append(
            Total(
                "total-refused",
                f"{refused.now:,}",
                _("embeddings refused (not answered, not priced)"),
                _versus_int(refused.now, refused.before, days),
                definition=definition("total-refused"),
            )
        )
    out.append(money_total(saved, saved_before, days=days))
    return out


def money_total(saved: Savings, before: Savings, *, days: int) -> Total:
    """The money, where the usage is known. A turn answered without a request
    is priced as a typical call that went through; with no such call's usage
    known there is nothing to price it by, so it is left out and the note says
    so (a total of 0.0013 beside 14 turns answered would otherwise read as
    "those turns were worth nothing"). A budget cut is never priced: how much
    of it an answer would have used is not known."""
    unpriced_turns = saved.unpriced_requests - saved.embeddings_refused
    priced_anything = saved.money > 0 or unpriced_turns == 0
    number = f"{saved.currency} {money_text(saved.money)}" if priced_anything else _("not known")
    note = ""
    if unpriced_turns > 0:
        note = ngettext(
            "The %(n)s turn answered without a request is not in this sum: no call "
            "that went through told Curfew how many tokens it used, so there is "
            "nothing to price it by.",
            "The %(n)s turns answered without a request are not in this sum: no call "
            "that went through told Curfew how many tokens it used, so there is "
            "nothing to price them by.",
            unpriced_turns,
        ) % {"n": f"{unpriced_turns:,}"}
    delta = saved.money - before.money
    versus = versus_text(
        f"{before.currency} {money_text(before.money)}",
        _signed(delta, money_text(abs(delta))),
        days,
    )
    return Total(
        "total-money", number, _("saved, estimated"), versus, note, definition("total-money")
    )


def period_totals(
    buckets: list[Bucket],
    before: list[Bucket],
    saved: Savings,
    saved_before: Savings,
    *,
    days: int,
    held: Mapping[str, int] | None = None,
    held_before: Mapping[str, int] | None = None,
    before_since: dt.datetime | None = None,
    retention_days: int = 0,
) -> list[Total]:
    """``totals`` of two periods' hourly totals and their minutes held off
    (``ledger_page.minutes_held_off``): the page's one call. The time of the
    period before starting at ``before_since`` is partial when single
    decisions (kept ``retention_days``) no longer reach back that far."""
    before_partial = (
        before_since is not None
        and retention_days > 0
        and before_since < timezone.now() - dt.timedelta(days=retention_days)
    )
    return totals(
        night(buckets, held),
        night(before, held_before),
        saved,
        saved_before,
        days=days,
        before_partial=before_partial,
        retention_days=retention_days,
    )


# ---- reasons in words ---------------------------------------------------------


def reason_words(reason: str) -> str:
    """A stored reason line (the engine's English, kept as data in the ledger
    and the export) in the reader's words, by the one vocabulary
    (``vocabulary.reason_words``), without its leading local date and time:
    the When column shows it."""
    parts = reason.split(" · ")
    if parts and _REASON_DATE.fullmatch(parts[0].strip()):
        parts = parts[1:]
    return vocabulary.reason_words(" · ".join(parts))


_REASON_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")


def did_word(action: str, origin: str) -> str:
    """What the curfew did with one decision: an embedding short-circuited was
    refused, not answered."""
    if action == "short-circuit" and origin == "embeddings":
        return str(KIND_WORDS[REFUSED])
    return action_word(action)


# ---- the export --------------------------------------------------------------

#: The export's columns (the API's field names: data, not prose).
CSV_COLUMNS = (
    "at",
    "session",
    "purpose",
    "state",
    "action",
    "reason",
    "budget_before",
    "budget_after",
    "input_tokens",
    "output_tokens",
    "origin",
    "exempt",
    "dry_run",
)
#: A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula, made plain text by a
    leading apostrophe (OWASP's advice); numbers and flags as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _cell(line: DecisionLine, column: str) -> Any:
    """One export cell: the line's field of that name, an instant in ISO 8601
    and a flag as ``yes``/``no``."""
    value = getattr(line, column)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def csv_row(line: DecisionLine) -> list[Any]:
    """The line's cells in ``CSV_COLUMNS`` order, each named once there."""
    return [safe_cell(_cell(line, column)) for column in CSV_COLUMNS]


def _csv_text(rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


Chunk = Callable[[tuple[dt.datetime, int] | None], list[DecisionLine]]


def export_chunker(*, user_id: int, period: Period, query: LedgerQuery) -> Chunk:
    """Reads the export's chunks: ``chunk(None)`` the first, then
    ``chunk((at, id))`` of the last line sent for the next."""

    def chunk(after: tuple[dt.datetime, int] | None) -> list[DecisionLine]:
        return export_chunk(
            user_id=user_id,
            period=period,
            session=query.session or None,
            action=query.action or None,
            after=after,
        )

    return chunk


def _key(lines: list[DecisionLine]) -> tuple[dt.datetime, int]:
    return (lines[-1].at, lines[-1].id)


def csv_lines(chunk: Chunk, first: list[DecisionLine]) -> Iterator[bytes]:
    """The export for a synchronous server: the header, the ``first`` chunk
    (read by the view, so an outage then is the page's 503), then the rest
    chunk by chunk."""
    yield _csv_text([list(CSV_COLUMNS)])
    lines = first
    while lines:
        yield _csv_text([csv_row(line) for line in lines])
        lines = chunk(_key(lines))


async def csv_lines_async(chunk: Chunk, first: list[DecisionLine]) -> AsyncIterator[bytes]:
    """The same export for the ASGI server: each further chunk read on the
    database thread, so a long export neither blocks the event loop nor is
    read whole first."""
    read = sync_to_async(chunk)
    yield _csv_text([list(CSV_COLUMNS)])
    lines = first
    while lines:
        yield _csv_text([csv_row(line) for line in lines])
        lines = await read(_key(lines))


# ---- the price table ---------------------------------------------------------

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*[-–—~]\s*(\d{1,2}):(\d{2})\s*$")


def windows_text(windows: list[list[str]]) -> str:
    return ", ".join(f"{start}-{end}" for start, end in windows)


def _plain(number: Decimal) -> str:
    return format(number.normalize(), "f")


class PriceForm(forms.Form):
    """The price table as a person types it: the discount in percent, the
    discount windows as ``10:00-01:00, 04:00-06:00`` (UTC)."""

    input_per_million = forms.DecimalField(
        label=gettext_lazy("Input price per million tokens"),
        min_value=Decimal(0),
        max_value=MAX_PRICE,
        decimal_places=6,
    )
    output_per_million = forms.DecimalField(
        label=gettext_lazy("Output price per million tokens"),
        min_value=Decimal(0),
        max_value=MAX_PRICE,
        decimal_places=6,
    )
    currency = forms.CharField(
        label=gettext_lazy("Currency"),
        # Bounded, but a wrong length gets the same plain advice as a wrong code.
        max_length=40,
        help_text=gettext_lazy("A three-letter code, like USD or CNY."),
    )
    discount_windows = forms.CharField(
        label=gettext_lazy("Discount hours (UTC)"),
        required=False,
        help_text=gettext_lazy(
            "Start-end in UTC, separated by commas, like 10:00-01:00, 04:00-06:00. "
            "Empty: no discount."
        ),
    )
    discount_percent = forms.DecimalField(
        label=gettext_lazy("Discount in those hours (%)"),
        min_value=Decimal(0),
        max_value=Decimal(100),
        decimal_places=4,
    )

    def clean_currency(self) -> str:
        code = str(self.cleaned_data["currency"]).strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", code):
            raise forms.ValidationError(_("Use a three-letter code, like USD or CNY."))
        return code

    def clean_discount_windows(self) -> list[list[str]]:
        text = str(self.cleaned_data.get("discount_windows") or "")
        parts = [p for p in re.split(r"[,;\n]", text) if p.strip()]
        if len(parts) > MAX_WINDOWS:
            raise forms.ValidationError(_("At most %(n)s windows.") % {"n": MAX_WINDOWS})
        windows = []
        for part in parts:
            match = _WINDOW.match(part)
            if match is None:
                raise forms.ValidationError(
                    _("“%(part)s” is not a window; write it as 22:00-06:00.")
                    % {"part": part.strip()[:40]}
                )
            h1, m1, h2, m2 = (int(g) for g in match.groups())
            if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
                raise forms.ValidationError(
                    _("“%(part)s” is not a time of day.") % {"part": part.strip()[:40]}
                )
            start, end = f"{h1:02d}:{m1:02d}", f"{h2:02d}:{m2:02d}"
            if start == end:
                raise forms.ValidationError(_("A window must end at another time than it starts."))
            windows.append([start, end])
        return windows

    def changes(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "input_per_million": _plain(data["input_per_million"]),
            "output_per_million": _plain(data["output_per_million"]),
            "currency": data["currency"],
            "discount_windows": data["discount_windows"],
            "discount_rate": _plain(data["discount_percent"] / 100),
        }


#: The service's field names -> the form's.
PRICE_FIELD_OF = {
    "input_per_million": "input_per_million",
    "output_per_million": "output_per_million",
    "currency": "currency",
    "discount_windows": "discount_windows",
    "discount_rate": "discount_percent",
}


def price_form_initial(table: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "input_per_million": table["input_per_million"],
        "output_per_million": table["output_per_million"],
        "currency": table["currency"],
        "discount_windows": windows_text(table["discount_windows"]),
        "discount_percent": _plain(Decimal(table["discount_rate"]) * 100),
    }


def flag_price_errors(form: PriceForm, errors: Mapping[str, str]) -> None:
    """The service refused what the form let through: each field it named is
    flagged (in the reader's language; the service speaks English)."""
    for key in errors:
        form.add_error(PRICE_FIELD_OF.get(key), _("This value was not accepted."))
