"""The Activity section's decision ledger, in process: totals against
hand-computed decisions, the filters, the CSV export (its content, its
formula-safe cells, chunked streaming), another user's decisions never shown,
bad filter input named and ignored (never a 500), and the price table edited
through the price service (a refused field flagged, nothing changed)."""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.ledger.entry import Entry
from curfew_core.selectors import ledger_page
from curfew_core.selectors.ledger import price_table
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.prices import price_table_set
from curfew_core.services.schedules import schedule_update
from curfew_core.web.activity import chart, export, query
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db

ZONE = "Asia/Shanghai"


@pytest.fixture
def now() -> dt.datetime:
    return timezone.now().replace(microsecond=0)


def _zone(*users: User) -> None:
    for person in users:
        schedule_update(user=person, changes={"timezone": ZONE}, source="test", actor=person)


def record(person: User, at: dt.datetime, **fields: Any) -> None:
    values: dict[str, Any] = {
        "at": at,
        "state": "on-duty",
        "action": "pass",
        "origin": "chat",
        "user_id": person.pk,
    }
    values.update(fields)
    recorder.record(Entry(**values))


def _plain_prices(person: User) -> None:
    """10 per million input, 20 per million output, no discount: easy sums."""
    price_table_set(
        user=person,
        changes={
            "input_per_million": "10",
            "output_per_million": "20",
            "currency": "EUR",
            "discount_windows": [],
            "discount_rate": "0",
        },
        actor=person,
        channel="page",
    )


def _text(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">([^<]*)<', html)
    assert match is not None, element_id
    return match.group(1)


def _rows(html: str) -> list[str]:
    body = html.split('id="decision-table"', 1)
    if len(body) == 1:
        return []
    return re.findall(r"<tr data-action=.*?</tr>", body[1], re.S)


def _csv(response: Any) -> list[list[str]]:
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


# ---- totals ------------------------------------------------------------------


def test_totals_are_the_ledgers_savings_of_hand_computed_decisions(
    page: PageClient, user: User, other_user: User, now: dt.datetime
) -> None:
    _zone(user, other_user)
    _plain_prices(user)
    at = now - dt.timedelta(hours=1)
    # Two calls passed untouched: a typical call is 2000 tokens in, 600 out.
    record(user, at, input_tokens=1000, output_tokens=400)
    record(user, at, input_tokens=3000, output_tokens=800)
    # Three answered without a request (peak), one more only in a dry run.
    for _ in range(3):
        record(user, at, state="off-duty", action="short-circuit", budget_before=0)
    record(user, at, state="off-duty", action="short-circuit", dry_run=True)
    # One reply shortened from 4096 to 1000 tokens.
    record(user, at, state="winding", action="clamp", budget_before=4096, budget_after=1000)
    # The control: another user's decisions in the same hour count for nothing here.
    for _ in range(5):
        record(other_user, at, state="off-duty", action="short-circuit")
    record(other_user, at, state="winding", action="clamp", budget_before=9000, budget_after=1)
    recorder.flush()

    html = page.get("/activity/").content.decode()
    assert _text(html, "total-not-sent") == "3"
    # The tokens the clamp did not ask for: 4096 - 1000.
    assert _text(html, "total-tokens") == "3,096"
    # The money prices the 3 not sent as the typical call (600 out each), and
    # never the budget cut (not tokens saved, so no price):
    # 3 x 2000 in x 10/M + 3 x 600 out x 20/M = 0.06 + 0.036 = 0.096.
    assert _text(html, "total-money") == "EUR 0.10"
    assert "7 decisions" in html


def test_the_chart_names_each_kind_in_words_and_keeps_dry_runs_apart(
    page: PageClient, user: User, now: dt.datetime
) -> None:
    _zone(user)
    at = now - dt.timedelta(hours=1)
    record(user, at, state="off-duty", action="short-circuit")
    record(user, at, state="off-duty", action="short-circuit", dry_run=True)
    record(user, at, state="winding", action="clamp", budget_before=10, budget_after=5)
    recorder.flush()
    html = page.get("/activity/").content.decode()
    block = re.search(r'<script id="ledger-figure" type="application/json">(.*?)</script>', html)
    assert block is not None
    figure = json.loads(block.group(1))
    local = at.astimezone(ledger_page.zone_of(ZONE))
    hour = f"{local:%Y-%m-%d %H}:00"
    by_name = {trace["name"]: (trace["x"], trace["y"]) for trace in figure["data"]}
    assert by_name == {
        "shortened (sleepy)": ([hour], [1]),
        "answered without a request (peak)": ([hour], [1]),
        "dry run, nothing done (peak)": ([hour], [1]),
    }
    assert figure["layout"]["barmode"] == "stack"
    # Three decisions at most in a bar: a tick per whole decision, never 0 1 1 2 2 3 3.
    assert figure["layout"]["yaxis"]["dtick"] == 1
    # 30 days: a bar per local day.
    html = page.get("/activity/", {"period": "30"}).content.decode()
    block = re.search(r'<script id="ledger-figure" type="application/json">(.*?)</script>', html)
    assert block is not None
    days = {tuple(t["x"]) for t in json.loads(block.group(1))["data"]}
    assert days == {(f"{local:%Y-%m-%d}",)}
    chinese = page.get("/activity/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "未请求即作答（高峰）" in chinese


# ---- the list and its filters ------------------------------------------------


def test_recent_decisions_show_local_time_reason_budget_and_marks(
    page: PageClient, user: User, now: dt.datetime
) -> None:
    _zone(user)
    at = now - dt.timedelta(hours=2)
    record(
        user,
        at,
        state="winding",
        action="clamp",
        session="essay",
        purpose="draft",
        reason="winding 40% · budget 1200",
        budget_before=4000,
        budget_after=1200,
        origin="responses",
    )
    record(user, at - dt.timedelta(minutes=1), exempt=True, session="pager", input_tokens=12)
    record(
        user, at - dt.timedelta(minutes=2), state="lights-out", action="short-circuit", dry_run=True
    )
    recorder.flush()
    html = page.get("/activity/").content.decode()
    rows = _rows(html)
    assert len(rows) == 3
    local = at.astimezone(ledger_page.zone_of(ZONE))
    assert f"{local:%Y-%m-%d %H:%M:%S}" in rows[0]
    assert "essay" in rows[0]
    assert "draft" in rows[0]
    # The engine's reason in the page's words (the export keeps the English).
    assert "getting sleepy, 40% through the night · answers up to 1200 tokens" in rows[0]
    assert "4000 → 1200" in rows[0]
    assert "proxy: responses" in rows[0]
    assert "Getting sleepy · shortened" in rows[0]
    assert "exempt" in rows[1]
    assert "12 in, — out" in rows[1]
    assert "dry run" in rows[2]
    assert "not known" in rows[2]


def test_filters_by_session_and_action_and_never_show_another_users(
    page: PageClient, user: User, other_user: User, now: dt.datetime
) -> None:
    _zone(user, other_user)
    at = now - dt.timedelta(hours=1)
    record(user, at, session="alpha", action="clamp", state="winding", reason="mine-a-clamp")
    record(user, at, session="alpha", reason="mine-a-pass")
    record(user, at, session="beta", reason="mine-b-pass")
    record(other_user, at, session="alpha", reason="theirs-alpha")
    recorder.flush()
    everything = page.get("/activity/").content.decode()
    assert len(_rows(everything)) == 3
    assert "theirs-alpha" not in everything
    assert '<option value="alpha"' in everything
    assert '<option value="beta"' in everything
    alpha = page.get("/activity/", {"session": "alpha"}).content.decode()
    assert len(_rows(alpha)) == 2
    assert "mine-b-pass" not in alpha
    assert "theirs-alpha" not in alpha
    clamps = page.get("/activity/", {"session": "alpha", "action": "clamp"}).content.decode()
    assert [("mine-a-clamp" in row) for row in _rows(clamps)] == [True]
    # The export link carries the filter.
    assert "decisions.csv?session=alpha&amp;action=clamp" in clamps
    nothing = page.get("/activity/", {"session": "nobody"}).content.decode()
    assert _rows(nothing) == []
    assert 'id="decisions-empty"' in nothing


def _figure_total(html: str) -> int:
    block = re.search(r'<script id="ledger-figure" type="application/json">(.*?)</script>', html)
    assert block is not None
    return sum(sum(trace["y"]) for trace in json.loads(block.group(1))["data"])


def test_the_chart_and_totals_follow_the_session_filter(
    page: PageClient, user: User, other_user: User, now: dt.datetime
) -> None:
    """Before, the totals and the chart were every session's whatever the
    filter said: picking a session changed only the list."""
    _zone(user, other_user)
    _plain_prices(user)
    at = now - dt.timedelta(hours=1)
    for _ in range(3):
        record(user, at, session="alpha", state="off-duty", action="short-circuit")
    record(user, at, session="beta", state="off-duty", action="short-circuit")
    record(
        user,
        at,
        session="beta",
        state="winding",
        action="clamp",
        budget_before=500,
        budget_after=100,
    )
    record(other_user, at, session="alpha", state="off-duty", action="short-circuit")
    recorder.flush()

    everything = page.get("/activity/").content.decode()
    assert _text(everything, "total-not-sent") == "4"
    assert _text(everything, "total-tokens") == "400"
    assert _figure_total(everything) == 5
    assert "all sessions: 5 decisions" in everything

    alpha = page.get("/activity/", {"session": "alpha"}).content.decode()
    assert _text(alpha, "total-not-sent") == "3"
    assert _text(alpha, "total-tokens") == "0"
    assert _figure_total(alpha) == 3
    assert "session “alpha”: 3 decisions" in alpha
    assert "kept for 30 days" in alpha

    beta = page.get("/activity/", {"session": "beta"}, HTTP_HX_REQUEST="true").content.decode()
    assert _text(beta, "total-not-sent") == "1"
    assert _text(beta, "total-tokens") == "400"
    assert _figure_total(beta) == 2
    chinese = page.get("/activity/", {"session": "beta"}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert "会话“beta”：共 2 次决定" in chinese.content.decode()

    # The action filter narrows the list, not the totals (the chart shows each action).
    clamps = page.get("/activity/", {"session": "beta", "action": "clamp"}).content.decode()
    assert len(_rows(clamps)) == 1
    assert _text(clamps, "total-not-sent") == "1"


def test_a_session_never_passed_is_priced_as_the_users_typical_call(
    page: PageClient, user: User, now: dt.datetime
) -> None:
    """A bot that is always answered without a request has no passed call of its
    own to price its requests by: it takes the user's (all sessions), not zero;
    a session with known usage of its own keeps its own."""
    _zone(user)
    _plain_prices(user)
    at = now - dt.timedelta(hours=1)
    record(user, at, session="writer", input_tokens=1000, output_tokens=400)
    record(user, at, session="writer", input_tokens=3000, output_tokens=800)
    for _ in range(3):
        record(user, at, session="night-bot", state="off-duty", action="short-circuit")
    record(user, at, session="own", input_tokens=100, output_tokens=50)
    record(user, at, session="own", state="off-duty", action="short-circuit")
    recorder.flush()
    bot = page.get("/activity/", {"session": "night-bot"}).content.decode()
    # The user's typical call: (1000 + 3000 + 100) / 3 in, (400 + 800 + 50) / 3 out.
    # 3 x (1366.67 x 10 + 416.67 x 20) / 1M = 0.066
    assert _text(bot, "total-money") == "EUR 0.07"
    assert 'id="total-money-note"' not in bot  # priced: nothing left out
    own = page.get("/activity/", {"session": "own"}).content.decode()
    # Its own typical call: 1 x (100 x 10 + 50 x 20) / 1M.
    assert _text(own, "total-money") == "EUR 0.0020"


_KINDS: list[dict[str, Any]] = [
    {"state": "on-duty", "action": "pass", "input_tokens": 1200, "output_tokens": 300},
    {"state": "off-duty", "action": "short-circuit", "budget_before": 0},
    # A refused embedding: tallied apart (``ledger.batch.tally_action``) by both sums.
    {"state": "off-duty", "action": "short-circuit", "origin": "embeddings"},
    {"state": "lights-out", "action": "short-circuit", "dry_run": True},
    {"state": "winding", "action": "clamp", "budget_before": 4096, "budget_after": 1000},
    {"state": "winding", "action": "clamp", "budget_before": 100, "budget_after": 100},
    {"state": "winding", "action": "clamp", "budget_after": 64},
    {
        "state": "winding",
        "action": "clamp",
        "budget_before": 800,
        "budget_after": 90,
        "dry_run": True,
    },
    {"state": "on-duty", "action": "pass", "exempt": True, "output_tokens": 7},
    {
        "state": "winding",
        "action": "clamp",
        "budget_before": 900,
        "budget_after": 200,
        "input_tokens": 5,
    },
]


@pytest.mark.parametrize(
    "zone_name",
    [
        "America/New_York",  # falls back on 2026-11-01 at 06:00 UTC: two 01:00 hours
        "Asia/Kolkata",  # +05:30: its hours start at :30 UTC
        "Asia/Kathmandu",  # +05:45
        "Australia/Lord_Howe",  # a half-hour DST offset (+11:00 in November)
    ],
)
def test_one_sessions_hours_summed_in_sql_are_the_stored_hours(user: User, zone_name: str) -> None:
    """For a session the page sums raw decisions in SQL; the stored hours were
    summed by the flusher in Python. With every decision in one session the two
    must be the same cells and buckets, across a fall-back night and in zones
    whose offset is not whole hours."""
    schedule_update(user=user, changes={"timezone": zone_name}, source="test", actor=user)
    now = dt.datetime(2026, 11, 3, 17, 0, tzinfo=dt.UTC)
    period = ledger_page.period_of(7, now=now, tz_name=zone_name)
    start = dt.datetime(2026, 10, 31, 20, 0, 30, tzinfo=dt.UTC)
    for n, minute in enumerate(range(0, 14 * 60, 11)):
        record(
            user, start + dt.timedelta(minutes=minute), session="only", **_KINDS[n % len(_KINDS)]
        )
    recorder.flush()
    stored = ledger_page.hours(user_id=user.pk, period=period)
    summed = ledger_page.hours(user_id=user.pk, period=period, session="only")
    assert (stored.from_decisions, summed.from_decisions) == (False, True)
    assert len({c.local_hour for c in stored.cells}) >= 13
    assert summed.cells == stored.cells
    assert summed.buckets == stored.buckets
    assert "refused" in {c.action for c in stored.cells}
    assert ledger_page.hours(user_id=user.pk, period=period, session="other").cells == []


def test_pages_of_decisions_and_the_htmx_partial(
    page: PageClient, user: User, now: dt.datetime
) -> None:
    _zone(user)
    for n in range(query.PER_PAGE + 5):
        record(user, now - dt.timedelta(minutes=n + 1), reason=f"n{n}")
    recorder.flush()
    first = page.get("/activity/").content.decode()
    assert len(_rows(first)) == query.PER_PAGE
    assert 'id="page-next"' in first
    assert 'id="page-prev"' not in first
    second = page.get("/activity/", {"page": "2"}).content.decode()
    assert len(_rows(second)) == 5
    assert 'id="page-prev"' in second
    assert 'id="page-next"' not in second
    assert ">n29<" in second
    assert ">n0<" not in second
    partial = page.get("/activity/", {"page": "2"}, htmx=True)
    assert partial.status_code == 200
    body = partial.content.decode()
    assert "<html" not in body
    assert body.strip().startswith('<section class="card ledger-card"')
    assert len(_rows(body)) == 5


@pytest.mark.parametrize(
    "params",
    [
        {"period": "365"},
        {"period": "7; DROP TABLE"},
        {"action": "delete"},
        {"page": "0"},
        {"page": "-1"},
        {"page": "abc"},
        {"page": "9" * 40},
        {"page": "１"},
        {"session": "x" * 500},
    ],
)
def test_bad_filter_input_is_named_and_ignored(
    page: PageClient, user: User, now: dt.datetime, params: dict[str, str]
) -> None:
    record(user, now - dt.timedelta(minutes=5), reason="still shown")
    recorder.flush()
    response = page.get("/activity/", params)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="ledger-problems"' in html
    assert len(_rows(html)) == 1  # the defaults: the last 7 days, everything
    assert page.get("/activity/", params, htmx=True).status_code == 422
    export = page.get("/activity/decisions.csv", params)
    assert export.status_code == 200
    assert len(_csv(export)) == 2


def test_a_nul_in_the_session_is_dropped_not_an_error(page: PageClient, user: User) -> None:
    assert page.get("/activity/", {"session": "a\x00b"}).status_code == 200
    assert page.get("/activity/decisions.csv", {"session": "a\x00b"}).status_code == 200


# ---- the export --------------------------------------------------------------


def test_the_csv_holds_the_periods_decisions_formula_safe(
    page: PageClient, user: User, other_user: User, now: dt.datetime
) -> None:
    _zone(user, other_user)
    at = now - dt.timedelta(hours=1)
    record(
        user,
        at,
        session='=HYPERLINK("http://evil","x")',
        purpose="+1",
        reason="-2 @ noon",
        budget_before=100,
        budget_after=100,
        input_tokens=5,
        output_tokens=7,
    )
    record(user, at - dt.timedelta(minutes=1), session="@SUM(A1)", reason="plain", exempt=True)
    record(user, at - dt.timedelta(days=12), session="old", reason="outside 7 days")
    record(other_user, at, session="theirs", reason="not yours")
    recorder.flush()
    response = page.get("/activity/decisions.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="curfew-decisions-')
    assert response["Cache-Control"] == "no-store"
    rows = _csv(response)
    assert rows[0] == list(export.CSV_COLUMNS)
    assert len(rows) == 3
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["session"] == '\'=HYPERLINK("http://evil","x")'
    assert first["purpose"] == "'+1"
    assert first["reason"] == "'-2 @ noon"
    assert (first["budget_before"], first["input_tokens"], first["output_tokens"]) == (
        "100",
        "5",
        "7",
    )
    assert dt.datetime.fromisoformat(first["at"]) == at
    assert first["at"].endswith("+08:00")  # the user's clock
    second = dict(zip(rows[0], rows[2], strict=True))
    assert second["session"] == "'@SUM(A1)"
    assert second["exempt"] == "yes"
    # 30 days reach the older one; another user's never.
    month = _csv(page.get("/activity/decisions.csv", {"period": "30"}))
    assert [row[1] for row in month[1:]] == [rows[1][1], "'@SUM(A1)", "old"]
    assert (
        "theirs"
        not in b"".join(
            page.get("/activity/decisions.csv", {"period": "30"}).streaming_content
        ).decode()
    )


def test_the_csv_streams_in_keyset_chunks_without_loss_or_double(
    page: PageClient, user: User, now: dt.datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = now - dt.timedelta(hours=1)
    # Several decisions share one instant: the keyset must still step past each once.
    for n in range(7):
        record(user, at - dt.timedelta(seconds=n // 3), reason=f"r{n}")
    recorder.flush()
    calls: list[int] = []

    def small(**kwargs: Any) -> list[ledger_page.DecisionLine]:
        lines = ledger_page.export_chunk(**kwargs, size=2)
        calls.append(len(lines))
        return lines

    monkeypatch.setattr(export, "export_chunk", functools.partial(small))
    rows = _csv(page.get("/activity/decisions.csv"))
    assert sorted(row[5] for row in rows[1:]) == [f"r{n}" for n in range(7)]
    # Keyset pages of two; the empty one ends the file.
    assert calls == [2, 2, 2, 1, 0]


async def test_the_csv_streams_asynchronously_under_asgi(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the ASGI server the export is an async iterator whose chunks are
    read off the event loop (the database thread), one at a time."""
    import threading

    now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
    line = ledger_page.DecisionLine(
        1,
        now,
        "=x",
        "",
        "off-duty",
        "short-circuit",
        "peak",
        10,
        0,
        "chat",
        False,
        False,
        None,
        None,
    )
    loop_thread = threading.get_ident()
    seen: list[tuple[Any, bool]] = []

    def fake_chunk(**kwargs: Any) -> list[ledger_page.DecisionLine]:
        seen.append((kwargs["after"], threading.get_ident() != loop_thread))
        return [] if kwargs["after"] else [line]

    monkeypatch.setattr(export, "export_chunk", fake_chunk)
    period = ledger_page.period_of(7, now=now, tz_name=ZONE)
    chunk = export.export_chunker(user_id=1, period=period, query=query.LedgerQuery())
    chunks = [part async for part in export.csv_lines_async(chunk, [line])]
    assert len(chunks) == 2  # the header, then one chunk
    assert chunks[1].decode().startswith(f"{now.isoformat()},'=x,")
    # The first chunk came from the view; the next was asked for off the loop.
    assert seen == [((now, 1), True)]


# ---- the price table ---------------------------------------------------------

GOOD_PRICES = {
    "input_per_million": "2",
    "output_per_million": "8.5",
    "currency": "cny",
    "discount_windows": "16:30-00:30, 02:00–03:00",
    "discount_percent": "75",
}


def test_prices_are_saved_through_the_price_service(page: PageClient, user: User) -> None:
    response = page.post("/activity/prices/", GOOD_PRICES)
    assert response.status_code == 302
    assert response["Location"].endswith("/activity/#prices")
    assert price_table(user.pk) == {
        "input_per_million": "2",
        "output_per_million": "8.5",
        "currency": "CNY",
        "discount_windows": [["16:30", "00:30"], ["02:00", "03:00"]],
        "discount_rate": "0.75",
    }
    html = page.get("/activity/").content.decode()
    assert "Prices saved" in html  # the audit trail names it in words
    assert 'value="16:30-00:30, 02:00-03:00"' in html
    assert 'value="75"' in html


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("input_per_million", "-1"),
        ("input_per_million", "lots"),
        ("output_per_million", "10001"),
        ("currency", "dollars"),
        ("currency", "U1"),
        ("discount_windows", "25:00-01:00"),
        ("discount_windows", "10:00-10:00"),
        ("discount_windows", "noon"),
        ("discount_windows", ",".join(["01:00-02:00"] * 9)),
        ("discount_percent", "150"),
        ("discount_percent", ""),
    ],
)
def test_a_bad_price_is_flagged_on_its_field_and_nothing_changes(
    page: PageClient, user: User, field: str, value: str
) -> None:
    before = price_table(user.pk)
    response = page.post("/activity/prices/", {**GOOD_PRICES, field: value})
    assert response.status_code == 400
    html = response.content.decode()
    error = re.search(rf'id="err-{field}" aria-live="polite">([^<]*)<', html)
    assert error is not None
    assert error.group(1).strip()
    for other in set(GOOD_PRICES) - {field}:
        flagged = re.search(rf'id="err-{other}" aria-live="polite">([^<]*)<', html)
        assert flagged is not None, other
        assert not flagged.group(1).strip(), other
    assert '<details class="price-edit" open>' in html
    assert price_table(user.pk) == before
    assert "Prices saved" not in html


def test_a_bad_price_is_flagged_in_chinese(page: PageClient, user: User) -> None:
    html = page.post(
        "/activity/prices/", {**GOOD_PRICES, "currency": "x"}, HTTP_ACCEPT_LANGUAGE="zh-CN"
    ).content.decode()
    assert "请使用三个字母的代码" in html
    english = page.post("/activity/prices/", {**GOOD_PRICES, "currency": "euros"}).content
    assert "Use a three-letter code, like USD or CNY." in english.decode()
    assert "没有保存任何内容" in html


# ---- an outage ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/activity/", "/activity/decisions.csv"])
def test_a_database_outage_is_the_styled_503_page(
    user: User, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    from django.db import OperationalError

    from curfew_testkit.asgi_client import Client

    def down(**kwargs: Any) -> Any:
        raise OperationalError("the database went away")

    monkeypatch.setattr(ledger_page, "hours", down)
    monkeypatch.setattr(export, "export_chunk", down)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert "Temporarily unavailable" in response.content.decode()


# ---- local days across a clock change ------------------------------------------


def test_a_fall_back_week_is_seven_local_days_and_its_repeated_hour_one_bar(
    user: User,
) -> None:
    """New York falls back on 2026-11-01: that week has 7 x 24 + 1 hours, and
    the two 01:00 hours (two aggregates) are one bar at 01:00 on the wall clock."""
    schedule_update(user=user, changes={"timezone": "America/New_York"}, source="test", actor=user)
    now = dt.datetime(2026, 11, 3, 17, 0, tzinfo=dt.UTC)  # noon on the 3rd in New York
    period = ledger_page.period_of(7, now=now, tz_name="America/New_York")
    assert (period.first_day, period.last_day) == (dt.date(2026, 10, 28), dt.date(2026, 11, 3))
    assert period.until - period.since == dt.timedelta(hours=7 * 24 + 1)
    first_one = dt.datetime(2026, 11, 1, 5, 30, tzinfo=dt.UTC)  # 01:30 EDT
    second_one = dt.datetime(2026, 11, 1, 6, 30, tzinfo=dt.UTC)  # 01:30 EST
    record(user, first_one, state="lights-out", action="short-circuit")
    record(user, second_one, state="lights-out", action="short-circuit")
    record(user, second_one, state="lights-out", action="short-circuit")
    recorder.flush()
    cells = ledger_page.hours(user_id=user.pk, period=period).cells
    assert [(c.local_hour, c.count) for c in cells] == [(1, 1), (1, 2)]
    figure = chart.ledger_figure(cells, period)
    [trace] = figure["data"]
    assert (trace["x"], trace["y"]) == (["2026-11-01 01:00"], [3])


@pytest.mark.parametrize(("count", "dtick"), [(1, 1), (10, 1), (11, None)])
def test_short_bars_tick_per_whole_decision(count: int, dtick: int | None) -> None:
    now = dt.datetime(2026, 11, 3, 17, 0, tzinfo=dt.UTC)
    period = ledger_page.period_of(7, now=now, tz_name=ZONE)
    half = count // 2
    cells = [
        ledger_page.ChartCell(dt.date(2026, 11, 3), 9, "off-duty", "short-circuit", half),
        ledger_page.ChartCell(dt.date(2026, 11, 3), 9, "winding", "clamp", count - half),
    ]
    assert chart.ledger_figure(cells, period)["layout"]["yaxis"].get("dtick") == dtick
