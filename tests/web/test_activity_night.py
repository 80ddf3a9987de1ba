"""Activity tells the night in time and money, honestly (issue 25), and the
heads-up's facts come from the engine's own next change.

In process: the totals beside the week before, the money that says what it
could not price, refused embeddings counted apart, reasons and origins in
Chinese on the Chinese page; the capsule's and the Now card's ``next``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core.ledger.entry import Entry
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.heads_up import LEAD, next_payload
from curfew_core.selectors.outlook import outlook_of
from curfew_core.selectors.verdicts import capsule_payload, verdict_for
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.web.activity import words as ledger_words
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


def _card(html: str, element_id: str) -> str:
    match = re.search(rf'<div class="total" id="{element_id}-card">.*?</div>', html, re.S)
    assert match is not None, element_id
    return re.sub(r"<[^>]+>", " ", match.group(0))


def _night(person: User, at: dt.datetime, *, answered: int, peak_hours: int = 1) -> None:
    for hour in range(peak_hours):
        for _ in range(answered // peak_hours):
            record(
                person,
                at + dt.timedelta(hours=hour),
                state="off-duty",
                action="short-circuit",
                reason="2026-09-29 10:00 · peak hours",
            )


def test_the_week_beside_the_week_before(page: PageClient, user: User) -> None:
    now = timezone.now().replace(microsecond=0)
    this_week = now - dt.timedelta(hours=30)
    week_before = now - dt.timedelta(days=9)
    _night(user, this_week, answered=6, peak_hours=3)
    record(user, this_week, state="winding", action="clamp", budget_before=4096, budget_after=96)
    _night(user, week_before, answered=10, peak_hours=1)
    recorder.flush()
    html = page.get("/activity/").content.decode()
    # Three minutes held off (one in each of three hours), never "3 h".
    assert _text(html, "total-time") == "3 min"
    assert "Week before: 1 min (+2 min)" in _card(html, "total-time")
    assert _text(html, "total-not-sent") == "6"
    assert "Week before: 10 (−4)" in _card(html, "total-not-sent")
    assert _text(html, "total-tokens") == "4,000"
    assert "Week before: 0 (+4,000)" in _card(html, "total-tokens")
    assert "tokens not asked for (budget cuts)" in _card(html, "total-tokens")
    # No embeddings were refused in either week: no card for them.
    assert 'id="total-refused"' not in html
    # The 30 days view compares with the 30 days before.
    month = page.get("/activity/", {"period": "30"}).content.decode()
    assert _text(month, "total-not-sent") == "16"
    assert "The 30 days before: 0 (+16)" in _card(month, "total-not-sent")


def test_money_with_no_usage_known_says_what_it_left_out(page: PageClient, user: User) -> None:
    """The issue's page: 14 turns answered beside USD 0.0013 and no word why.
    Now the 14 are named as left out of the sum, because nothing passed with
    a usage to price them by."""
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
    _night(user, at, answered=14)
    record(user, at, state="winding", action="clamp", budget_before=2048, budget_after=1000)
    recorder.flush()
    html = page.get("/activity/").content.decode()
    assert _text(html, "total-not-sent") == "14"
    note = _text(html, "total-money-note")
    assert "The 14 turns answered without a request are not in this sum" in note
    assert "nothing to price them by" in note
    # A budget cut is tokens not asked for, never money: nothing here has a
    # price, so the money is not known, not the clamp's 1,048 tokens priced.
    assert "shortened" not in note
    assert _text(html, "total-money") == "not known"
    assert _text(html, "total-tokens") == "1,048"
    recorder.discard()
    zh = page.get("/activity/", **ZH).content.decode()
    assert "没有算进金额" in _text(zh, "total-money-note")


def test_nothing_to_price_is_not_known_rather_than_zero(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
    _night(user, at, answered=3)
    recorder.flush()
    html = page.get("/activity/").content.decode()
    assert _text(html, "total-money") == "not known"
    assert "The 3 turns answered" in _text(html, "total-money-note")
    # Control: one passed call with its usage known, and the same turns are priced.
    record(user, at, input_tokens=1000, output_tokens=500)
    recorder.flush()
    priced = page.get("/activity/").content.decode()
    assert _text(priced, "total-money").startswith("USD ")
    assert 'id="total-money-note"' not in priced


def test_refused_embeddings_are_counted_apart_from_answers(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
    _night(user, at, answered=2)
    for _ in range(5):
        record(user, at, state="off-duty", action="short-circuit", origin="embeddings")
    recorder.flush()
    html = page.get("/activity/").content.decode()
    assert _text(html, "total-not-sent") == "2"
    assert _text(html, "total-refused") == "5"
    assert "embeddings refused" in _card(html, "total-refused")
    # In the list, such a decision reads as refused, not answered.
    assert html.count("embedding refused") >= 5
    # And in the chart, its own series.
    figure = json.loads(re.search(r'id="ledger-figure"[^>]*>(.*?)</script>', html, re.S)[1])
    assert {t["meta"]["action"] for t in figure["data"]} >= {"refused", "short-circuit"}


def test_reasons_and_origins_in_chinese(page: PageClient, user: User) -> None:
    at = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
    record(
        user,
        at,
        state="winding",
        action="clamp",
        reason="2026-09-29 23:30 · winding 75% · budget 320",
        budget_before=2048,
        budget_after=320,
        origin="messages",
    )
    recorder.flush()
    zh = page.get("/activity/", **ZH).content.decode()
    row = re.search(r"<tr data-action=.*?</tr>", zh, re.S)
    assert row is not None
    cells = re.sub(r"<[^>]+>", "|", row.group(0))
    assert "犯困中，夜晚已过 75%" in cells
    assert "回答最多 320 个 token" in cells
    assert "代理：消息" in cells
    for english in ("winding", "budget", "messages", "proxy"):
        assert english not in cells.replace('data-action="clamp"', ""), english
    # The stored English line stays data (the export, the API), never text a
    # Chinese reader is shown, not even as a tooltip (tests/web/test_plain_words.py).
    assert "2026-09-29 23:30 · winding 75%" not in row.group(0)
    en = page.get("/activity/").content.decode()
    assert "getting sleepy, 75% through the night · answers up to 320 tokens" in en


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("2026-09-29 10:00 · peak hours", "off for peak hours"),
        ("2026-10-10 10:00 · peak hours (国庆节后调休)", "off for peak hours (国庆节后调休)"),
        ("2026-09-30 04:00 · lights out until 09:00", "asleep until 09:00"),
        (
            "2026-09-30 04:00 · on duty · overtime until 05:00",
            "working · overtime until 05:00",
        ),
        ("2026-09-30 04:00 · lights out · exempt session", "asleep · this session is let through"),
        (
            "2026-09-30 04:00 · lights out · dry run: would short-circuit",
            "asleep · only watching: would have answered for the AI",
        ),
        ("something new", "something new"),
        ("", ""),
    ],
)
def test_reason_words(reason: str, words: str) -> None:
    with translation.override("en"):
        assert ledger_words.reason_words(reason) == words


# ---- the heads-up's facts -----------------------------------------------------


@pytest.fixture
def evening() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local("2026-09-29 22:45"))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


def test_the_next_change_is_the_engines(user: User, evening: FrozenClock) -> None:
    payload = capsule_payload(user_id=user.pk, now=evening.now)
    nxt = payload["next"]
    assert nxt["state"] == "winding"
    assert nxt["at"] == local("2026-09-29 23:00").astimezone(dt.UTC).isoformat()
    assert nxt["local"] == "23:00"
    assert nxt["heads_up_at"] == (local("2026-09-29 23:00") - LEAD).astimezone(dt.UTC).isoformat()
    assert nxt["words"]["en"] == "Your AI gets sleepy in {minutes} min ({at})."
    assert "犯困" in nxt["words"]["zh"]
    # At lights-out's eve, the next change is falling asleep.
    late = capsule_payload(user_id=user.pk, now=local("2026-09-30 02:50"))["next"]
    assert (late["state"], late["local"]) == ("lights-out", "03:00")
    # Waking up needs no heads-up (to peak hours, here: a Wednesday at 09:00),
    # a change with no words: less is held back than now.
    night = capsule_payload(user_id=user.pk, now=local("2026-09-30 04:00"))["next"]
    assert (night["state"], night["local"], night["words"]) == ("off-duty", "09:00", None)


def test_an_overtime_moves_the_next_change_to_its_end(user: User, evening: FrozenClock) -> None:
    override_apply(user=user, command=from_words(["overtime", "2h"]), now=evening.now, actor=user)
    nxt = capsule_payload(user_id=user.pk, now=evening.now)["next"]
    # Overtime until 00:45 keeps the AI working; then the schedule's winding resumes.
    assert (nxt["state"], nxt["local"]) == ("winding", "00:45")


def test_no_heads_up_in_a_dry_run_or_with_the_curfew_off(
    user: User, other_user: User, evening: FrozenClock
) -> None:
    # Control first: the default schedule has a next change with words.
    verdict, bundle = verdict_for(user_id=other_user.pk, now=evening.now)
    assert next_payload(verdict, outlook_of(bundle, now=evening.now)) is not None
    schedule_update(user=user, changes={"dry_run": True}, source="test", actor=user)
    assert capsule_payload(user_id=user.pk, now=evening.now)["next"] is None
    schedule_update(user=other_user, changes={"enabled": False}, source="test", actor=other_user)
    verdict, bundle = verdict_for(user_id=other_user.pk, now=evening.now)
    assert next_payload(verdict, outlook_of(bundle, now=evening.now), enabled=False) is None


def test_the_now_card_carries_the_facts_and_a_preview_does_not(
    page: PageClient, user: User, evening: FrozenClock
) -> None:
    html = page.get("/").content.decode()
    block = re.search(r'id="heads-up-facts"[^>]*>(.*?)</script>', html, re.S)
    assert block is not None
    facts = json.loads(block.group(1))
    assert facts["next"]["state"] == "winding"
    assert 'id="heads-up-template"' in html
    assert 'name="verb" value="overtime"' in html.split('id="heads-up-template"', 1)[1]
    preview = page.get("/", {"at": "2026-09-29T22:50"}).content.decode()
    assert 'id="heads-up-facts"' not in preview
