"""Activity honest (issue 39): time kept off counted as it happened, a budget
cut counted as tokens not asked for (never money), each total's definition one
click away, and "Why" from the decision's own recorded state.

In process, on the real engine's reasons where a reason matters.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from html import unescape
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core.ledger.entry import Entry
from curfew_core.ledger.why import led_by_state
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.verdicts import verdict_for
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.overrides import override_apply
from curfew_core.web.activity import totals, words
from tests.api.conftest import FrozenClock, local
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


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


def _text(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">([^<]*)<', html)
    assert match is not None, element_id
    return match.group(1)


def _why_cells(html: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r'<td data-label="Why" class="reason">(.*?)</td>', html, re.S)
    ]


# ---- time, to the minute ----------------------------------------------------------


def test_three_minutes_switched_off_are_three_minutes(page: PageClient, user: User) -> None:
    """The issue's page: about 3 minutes switched off read "1 h of AI time
    kept off". A call held off in each of three minutes is 3 min."""
    start = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(hours=2)
    for minute in range(3):
        for second in (5, 40):
            record(
                user,
                start + dt.timedelta(minutes=minute, seconds=second),
                state="lights-out",
                action="short-circuit",
            )
    # Control: a dry run in a fourth minute held nothing off; a pass is no time off.
    record(
        user,
        start + dt.timedelta(minutes=3),
        state="lights-out",
        action="short-circuit",
        dry_run=True,
    )
    record(user, start + dt.timedelta(minutes=4))
    recorder.flush()
    html = activity_page(page)
    assert _text(html, "total-time") == "3 min"
    card = re.search(r'id="total-time-card">(.*?)</div>', html, re.S)
    assert card is not None
    assert "0 min at peak, 3 min asleep" in card.group(1)
    zh = page.get("/activity/", **ZH).content.decode()
    assert _text(zh, "total-time") == "3 分钟"


def test_longer_spans_read_in_hours_and_minutes() -> None:
    with translation.override("en"):
        assert totals.minutes_text(0) == "0 min"
        assert totals.minutes_text(65) == "1 h 5 min"
        assert totals.minutes_text(120) == "2 h"
    with translation.override("zh-hans"):
        assert totals.minutes_text(65) == "1 小时 5 分钟"


def activity_page(page: PageClient, **extra: Any) -> str:
    response = page.get("/activity/", **extra)
    assert response.status_code == 200
    return str(response.content.decode())


# ---- tokens not asked for, money only where priced ---------------------------------


def test_a_budget_cut_is_tokens_not_asked_for_and_never_money(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=1)
    record(user, at, state="winding", action="clamp", budget_before=32000, budget_after=2000)
    recorder.flush()
    html = activity_page(page)
    assert _text(html, "total-tokens") == "30,000"
    assert "tokens not asked for (budget cuts)" in html
    assert "tokens saved" not in html.replace("not tokens saved", "")
    # Nothing was priced: a cut is not tokens saved, so not money either.
    assert _text(html, "total-money") == "USD 0.00"
    # Control: a turn answered, with a passed call's usage to price it by, is money.
    record(user, at, input_tokens=1000, output_tokens=500)
    record(user, at, state="off-duty", action="short-circuit")
    recorder.flush()
    assert _text(activity_page(page), "total-money") != "USD 0.00"


def test_every_total_has_its_definition_one_click_away(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=1)
    record(user, at, state="off-duty", action="short-circuit", origin="embeddings")
    recorder.flush()
    html = activity_page(page)
    cards = re.findall(r'<div class="total" id="([a-z-]+)-card">(.*?)</div>', html, re.S)
    assert [name for name, _card in cards] == [
        "total-time",
        "total-not-sent",
        "total-tokens",
        "total-refused",
        "total-money",
    ]
    for name, card in cards:
        found = re.search(r"<details class=\"total-def small\"[^>]*>(.*?)</details>", card)
        assert found is not None, name
        assert "What this counts" in found.group(1)
        assert str(totals.DEFINITIONS[name]) in unescape(found.group(1))
    assert "not tokens saved" in html
    zh = activity_page(page, **ZH)
    assert "统计的是什么" in zh
    assert "不是省下的 token" in zh


# ---- "Why" from the decision's own state ----------------------------------------------


@pytest.fixture
def winding() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local("2026-09-29 23:30"))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


def test_an_asleep_rows_why_begins_with_why_it_was_asleep(
    page: PageClient, user: User, winding: FrozenClock
) -> None:
    """Switched off by hand while the schedule winds: the engine's reason
    line begins "winding 25%", and the row's state is lights-out."""
    override_apply(user=user, command=from_words(["off"]), now=winding.now, actor=user)
    verdict, _bundle = verdict_for(user_id=user.pk, now=winding.now)
    assert verdict.state.value == "lights-out"
    assert verdict.reason.split(" · ")[1].startswith("winding")
    record(
        user,
        winding.now,
        state=verdict.state.value,
        action="short-circuit",
        reason=verdict.reason,
    )
    recorder.flush()
    [why] = _why_cells(activity_page(page))
    assert why.startswith("switched off by hand until"), why
    # Nothing dropped: the schedule's side is still told, after.
    assert "getting sleepy" in why
    # Control: the reason in words, as the page said it before, began with winding.
    with translation.override("en"):
        assert words.reason_words(verdict.reason).startswith("getting sleepy")


@pytest.mark.parametrize(
    ("state", "reason", "led"),
    [
        # A team member: their own night winds, the team's is asleep.
        (
            "lights-out",
            "2026-09-29 22:30 · winding 25% · budget 1824 · team: lights out until 09:00",
            "2026-09-29 22:30 · team: lights out until 09:00 · winding 25% · budget 1824",
        ),
        # The team winds while the member is at peak: the budget goes with the team's winding.
        (
            "winding",
            "2026-09-29 10:30 · on duty · team: winding 10% · budget 1900",
            "2026-09-29 10:30 · team: winding 10% · budget 1900 · on duty",
        ),
        # Already led by its state: unchanged.
        (
            "winding",
            "2026-09-29 23:30 · winding 12% · budget 1824",
            "2026-09-29 23:30 · winding 12% · budget 1824",
        ),
        (
            "off-duty",
            "2026-09-29 10:00 · peak hours · exempt session",
            "2026-09-29 10:00 · peak hours · exempt session",
        ),
        # Nothing tells the state: as it was.
        ("lights-out", "something new", "something new"),
        ("on-duty", "", ""),
    ],
)
def test_why_is_led_by_the_recorded_state(state: str, reason: str, led: str) -> None:
    assert led_by_state(state, reason) == led
