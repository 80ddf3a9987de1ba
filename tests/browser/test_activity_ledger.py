"""The Activity section's decision ledger in real headless Chromium (issue 14,
"the page and the export in a browser test").

Decisions are seeded the way a gateway reports them (``POST /api/v1/decisions``,
written before it is answered). Then Activity is opened at desktop in English
and on a phone in Chinese: the chart is drawn by Plotly from its JSON block,
the totals are the ledger's, the filter narrows the list in place (htmx) and
the CSV link downloads the decisions. No console error, no CSP violation,
nothing spilling sideways.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser import support
from tests.browser.support import Watched, api, api_post, assert_fits

pytestmark = pytest.mark.browser

USER = "web-activity"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def seeded(served_app: ServedApp) -> str:
    """The module's account with a few days of decisions reported by a gateway."""
    token = served_app.create_user(USER, PASSWORD)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    decisions: list[dict[str, Any]] = []
    for day in range(6):
        # Half past an hour: the three peak calls a minute apart stay in one
        # hour (at 13:01 they once fell on both sides of 12:00, two hours a day).
        base = (now - dt.timedelta(days=day, hours=1)).replace(minute=30, second=0)
        decisions += [
            {
                "id": f"pass-{day}",
                "at": (base - dt.timedelta(hours=5)).isoformat(),
                "state": "on-duty",
                "action": "pass",
                "session_id": "writer",
                "reason": "on duty",
                "input_tokens": 1200,
                "output_tokens": 800,
            },
            {
                "id": f"clamp-{day}",
                "at": (base - dt.timedelta(hours=2)).isoformat(),
                "state": "winding",
                "action": "clamp",
                "session_id": "writer",
                "reason": "winding 40% · budget 1200",
                "budget_before": 4000,
                "budget_after": 1200,
            },
            *(
                {
                    "id": f"peak-{day}-{n}",
                    "at": (base - dt.timedelta(minutes=n)).isoformat(),
                    "state": "off-duty",
                    "action": "short-circuit",
                    "session_id": "=cmd|calc" if n == 0 else "night-bot",
                    "reason": "peak hours",
                    "budget_before": 2000,
                    "budget_after": 0,
                }
                for n in range(3)
            ),
        ]
    decisions.append(
        {
            "id": "dry-1",
            "at": (now - dt.timedelta(minutes=30)).isoformat(),
            "state": "lights-out",
            "action": "short-circuit",
            "dry_run": True,
            "session_id": "night-bot",
            "reason": "lights out (dry run)",
        }
    )
    answer = api_post(served_app, token, "/api/v1/decisions", {"decisions": decisions})
    assert answer["stored"] == len(decisions)
    return token


#: Each look at the page: a desktop in English, a phone in Chinese and dark.
DESKTOP_EN_AND_PHONE_ZH = pytest.mark.parametrize(
    ("size", "lang", "scheme"),
    [((1280, 900), "en", "light"), ((390, 844), "zh", "dark")],
    ids=["desktop-en", "phone-zh"],
)


def open_activity(
    browser: Any, app: ServedApp, *, width: int, height: int, lang: str, scheme: str
) -> tuple[Any, Watched]:
    context = support.open_context(
        browser,
        width=width,
        height=height,
        scheme=scheme,
        locale="zh-CN" if lang == "zh" else "en-US",
        language=(app, "zh-hans" if lang == "zh" else "en"),
        accept_downloads=True,
    )
    watched = Watched(context.new_page())
    support.sign_in(watched.page, app, USER, PASSWORD)
    watched.page.goto(f"{app.base_url}/activity/")
    watched.page.wait_for_selector("#ledger-chart[data-drawn]")
    return context, watched


@DESKTOP_EN_AND_PHONE_ZH
def test_activity_draws_the_ledger_and_downloads_it(
    browser: Any,
    served_app: ServedApp,
    seeded: str,
    artifacts_dir: str,
    size: tuple[int, int],
    lang: str,
    scheme: str,
) -> None:
    width, height = size
    context, watched = open_activity(
        browser, served_app, width=width, height=height, lang=lang, scheme=scheme
    )
    page = watched.page
    try:
        # The chart: Plotly drew one bar trace per kind of decision, named in words.
        names = page.evaluate(
            "Array.from(document.querySelector('#ledger-chart').data).map(t => t.name)"
        )
        bars = page.locator("#ledger-chart .barlayer .point").count()
        assert bars > 0
        if lang == "en":
            assert "answered without a request (peak)" in names
            assert "shortened (sleepy)" in names
            assert "passed (working)" in names
        else:
            assert "未请求即作答（高峰）" in names
        # The totals, as the API's savings say (the one arithmetic).
        savings = api(served_app, seeded, "GET", "/api/v1/savings")
        assert page.inner_text("#total-not-sent") == f"{savings['requests_not_sent']:,}"
        assert page.inner_text("#total-not-sent") == "18"  # 6 days x 3; the dry run never acts
        # The clamps' cuts, tokens not asked for: 6 x (4000 - 1200).
        assert page.inner_text("#total-tokens") == "16,800"
        assert page.inner_text("#total-money").startswith("USD ")
        # Three peak minutes a day, six days, held calls off (never "6 h", the
        # hours they fell in); the week before had none.
        assert page.inner_text("#total-time") == ("18 min" if lang == "en" else "18 分钟")
        versus = page.inner_text("#total-not-sent-card .total-versus")
        assert versus == ("Week before: 0 (+18)" if lang == "en" else "前一周：0（+18）")
        # Every legend entry its own colour (or pattern): Plotly's drawn traces.
        looks = page.evaluate(
            """Array.from(document.querySelector('#ledger-chart')._fullData).map(t =>
                 [t.marker.color, (t.marker.pattern || {}).shape || ''].join(' '))"""
        )
        assert len(looks) == len(names)
        assert len(set(looks)) == len(looks), looks
        # The reasons in the page's words.
        reasons = page.locator("#decision-table td.reason").all_inner_texts()
        if lang == "zh":
            assert "高峰休息" in reasons
            assert not any("peak" in r or "winding" in r for r in reasons), reasons
        else:
            assert "off for peak hours" in reasons
        # The recent decisions, the dry run marked.
        assert page.locator("#decision-table tbody tr").count() == 25
        assert page.locator("#decision-table tr[data-dry-run]").count() == 1
        assert_fits(page, width, inside="main")
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(
            path=str(Path(artifacts_dir) / f"activity-ledger-{lang}.png"), full_page=True
        )
        page.locator("#ledger-totals").scroll_into_view_if_needed()
        page.screenshot(path=str(Path(artifacts_dir) / f"activity-ledger-{lang}-top.png"))
        page.locator("#ledger-chart").scroll_into_view_if_needed()
        page.screenshot(path=str(Path(artifacts_dir) / f"activity-ledger-{lang}-chart.png"))
        # The CSV link downloads this period's decisions, formula cells defused.
        with page.expect_download() as info:
            page.click("#csv-link")
        path = info.value.path()
        rows = list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
        assert rows[0][:3] == ["at", "session", "purpose"]
        assert len(rows) == 1 + 6 * 5 + 1
        assert {row[1] for row in rows[1:]} == {"writer", "night-bot", "'=cmd|calc"}
        watched.assert_clean()
    finally:
        context.close()


def test_the_filter_narrows_the_list_in_place(
    browser: Any, served_app: ServedApp, seeded: str, artifacts_dir: str
) -> None:
    context, watched = open_activity(
        browser, served_app, width=1280, height=900, lang="en", scheme="light"
    )
    page = watched.page
    try:
        page.evaluate("document.querySelector('#ledger').dataset.before = '1'")
        page.select_option("#filter-action", "clamp")
        page.wait_for_url("**/activity/?*action=clamp*")
        page.wait_for_selector("#ledger-chart[data-drawn]")
        # Swapped in place (htmx), not reloaded: the marker on the old card is gone,
        # the page itself stayed.
        assert page.evaluate("document.querySelector('#ledger').dataset.before") is None
        rows = page.locator("#decision-table tbody tr")
        assert rows.count() == 6
        assert set(
            page.eval_on_selector_all(
                "#decision-table tbody tr", "rows => rows.map(r => r.dataset.action)"
            )
        ) == {"clamp"}
        # The 30-day switch draws days instead of hours, the filter kept.
        page.check("#period-30", force=True)
        page.wait_for_url("**/activity/?*period=30*")
        page.wait_for_selector("#ledger-chart[data-drawn]")
        assert page.locator("#decision-table tbody tr").count() == 6
        assert "action=clamp" in (page.get_attribute("#csv-link", "href") or "")
        page.screenshot(path=str(Path(artifacts_dir) / "activity-ledger-30d.png"), full_page=True)
        watched.assert_clean()
    finally:
        context.close()


def test_without_script_the_filter_is_a_plain_form_and_prices_save(
    browser: Any, served_app: ServedApp, seeded: str, artifacts_dir: str
) -> None:
    context = support.open_context(
        browser, width=1280, height=900, language=(served_app, "en"), java_script_enabled=False
    )
    watched = Watched(context.new_page())
    page = watched.page
    try:
        support.sign_in(page, served_app, USER, PASSWORD)
        page.goto(f"{served_app.base_url}/activity/")
        page.select_option("#filter-session", "writer")
        page.select_option("#filter-action", "pass")
        page.click("#ledger-filter button[type=submit]")
        page.wait_for_url("**/activity/?*session=writer*")
        assert page.locator("#decision-table tbody tr").count() == 6
        # A refused price is flagged on its field; a good one is saved.
        page.click(".price-edit summary")
        page.fill("#id_currency", "euros")
        page.click("#price-form button[type=submit]")
        assert page.inner_text("#err-currency").strip()
        page.locator("#prices").screenshot(
            path=str(Path(artifacts_dir) / "activity-prices-refused.png")
        )
        # The refusal is a 400 (Chromium logs it); nothing else may be.
        refused = (
            "console error: Failed to load resource: the server responded with a status of 400"
        )
        assert [p for p in watched.problems if p.startswith(refused)] != []
        watched.problems = [p for p in watched.problems if not p.startswith(refused)]
        assert "USD" in page.inner_text("#prices p.small")
        page.fill("#id_currency", "EUR")
        page.click("#price-form button[type=submit]")
        page.wait_for_url("**/activity/#prices")
        assert page.inner_text("#total-money").startswith("EUR ")
        # Back to USD for the other tests of this module.
        page.click(".price-edit summary")
        page.fill("#id_currency", "USD")
        page.click("#price-form button[type=submit]")
        page.wait_for_url("**/activity/#prices")
        watched.assert_clean()
    finally:
        context.close()


@DESKTOP_EN_AND_PHONE_ZH
def test_picking_a_session_redraws_the_chart_and_totals_for_it(
    browser: Any,
    served_app: ServedApp,
    seeded: str,
    artifacts_dir: str,
    size: tuple[int, int],
    lang: str,
    scheme: str,
) -> None:
    """The seeded days hold 18 peak short-circuits, 12 of them night-bot's (one
    more of its is a dry run, which saves nothing); the passes and clamps are writer's."""
    width, height = size
    context, watched = open_activity(
        browser, served_app, width=width, height=height, lang=lang, scheme=scheme
    )
    page = watched.page
    try:
        assert page.inner_text("#total-not-sent") == "18"
        page.select_option("#filter-session", "night-bot")
        page.wait_for_url("**/activity/?*session=night-bot*")
        page.wait_for_selector("#ledger-chart[data-drawn]")
        assert page.inner_text("#total-not-sent") == "12"
        # Night-bot never passed: its requests are priced as writer's typical call,
        # and it was never shortened.
        assert page.inner_text("#total-tokens") == "0"
        assert page.inner_text("#total-money").startswith("USD ")
        note = page.inner_text("#ledger-note")
        assert "night-bot" in note
        assert ("13 decisions" if lang == "en" else "共 13 次决定") in note
        drawn = page.evaluate(
            "document.getElementById('ledger-chart').data"
            ".reduce((n, trace) => n + trace.y.reduce((a, b) => a + b, 0), 0)"
        )
        assert drawn == 13
        assert_fits(page)
        page.screenshot(
            path=str(Path(artifacts_dir) / f"activity-session-{lang}-{scheme}.png"), full_page=True
        )
        watched.assert_clean()
    finally:
        context.close()
