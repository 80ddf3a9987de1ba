"""The overview's page-only preview: ``/?at=…`` (or the scrubber's
``?day=…&minute=…``) shows that moment's state with a banner saying so, and
stores nothing: no override, no audit entry, and gateways keep getting the
real verdict.

The real clock is pinned to Tuesday 2026-09-29 19:00 in Shanghai (on duty).
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
import zoneinfo
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.engine import decide
from curfew_core.models import AuditEntry, Override, Schedule, ScheduleRevision
from curfew_core.schedules import config as schedule_config
from curfew_core.web.schedule.story import answer_length
from tests.conftest import ApiClient
from tests.web.conftest import PageClient

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
NOW = dt.datetime(2026, 9, 29, 19, 0, tzinfo=SHANGHAI).astimezone(dt.UTC)
#: A winding Tuesday night, two months ahead.
LATER = dt.datetime(2026, 12, 1, 23, 30, tzinfo=SHANGHAI)
BANNER = "a preview on this page only"


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def _card(html: str) -> str:
    match = re.search(r'<article class="card now-card".*?</article>', html, re.S)
    assert match, "no Now card on the page"
    return match.group(0)


def _details(card: str) -> str:
    match = re.search(r'<details class="details" id="now-details">.*?</details>', card, re.S)
    assert match, "no Details on the Now card"
    return match.group(0)


def _stored(user: User) -> tuple[int, ...]:
    return (
        Override.objects.filter(user=user).count(),
        AuditEntry.objects.count(),
        Schedule.objects.filter(user=user).count(),
        ScheduleRevision.objects.count(),
    )


def test_the_overview_tells_now_without_a_banner(page: PageClient) -> None:
    response = page.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert BANNER not in html
    card = _card(html)
    assert 'id="now"' in card
    assert 'id="now-state" data-state="on-duty"' in card
    assert "Your AI is working normally." in card
    assert "Gets sleepy in 4 h (23:00)." in card
    # The card polls itself only when it shows now.
    assert 'hx-trigger="every 60s"' in html


@pytest.mark.parametrize(
    "query",
    [{"at": "2026-12-01T23:30"}, {"day": "2026-12-01", "minute": str(23 * 60 + 30)}],
    ids=["picker", "scrubber"],
)
def test_a_moment_is_shown_with_a_banner(page: PageClient, query: dict[str, str]) -> None:
    response = page.get("/", query)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Showing Tue 2026-12-01 23:30: a preview on this page only." in html
    assert 'id="look-clear"' in html  # "Back to now"
    card = _card(html)
    assert "At 23:30" in card
    assert re.search(
        r'class="muted as-of">Tue 23:30 · <span translate="no">Shanghai</span>\s', card
    )
    assert 'id="now-state" data-state="winding"' in card
    budget = decide(LATER, schedule_config.build(schedule_config.default_config())).budget
    assert budget is not None
    assert f"answers are kept to {answer_length(budget)}." in card
    assert f"{budget} tokens" in _details(card)  # the tokens are behind Details
    assert 'data-date="2026-12-01"' in html  # the band is that day's
    assert 'hx-trigger="every 60s"' not in html  # a preview does not tick back to now
    assert 'id="look-at" name="at" value="2026-12-01T23:30"' in html


def test_the_preview_stores_nothing_and_gateways_are_not_told(
    page: PageClient, user: User, api: ApiClient
) -> None:
    def verdict() -> dict[str, Any]:
        response = api.post("/api/v1/verdict", {})
        assert response.status_code == 200
        payload: dict[str, Any] = response.json()
        return payload

    before = verdict()
    assert before["state"] == "on-duty"
    stored = _stored(user)
    for query in (
        {"at": "2026-12-01T23:30"},
        {"at": "2026-09-30T04:00"},
        {"day": "2026-09-29", "minute": "600"},
    ):
        assert page.get("/", query).status_code == 200
        assert page.get("/", query, htmx=True).status_code == 200
    assert _stored(user) == stored
    assert verdict() == before
    # And the page itself is back to now once the preview is left.
    html = page.get("/").content.decode()
    assert BANNER not in html
    assert 'id="now-state" data-state="on-duty"' in _card(html)


def test_the_scrubber_answers_htmx_with_the_banner_card_and_band(page: PageClient) -> None:
    html = page.get("/", {"day": "2026-09-29", "minute": "600"}, htmx=True).content.decode()
    # hx-select picks these out of the page: they must all be there.
    assert 'id="look-banner"' in html
    assert "Showing Tue 2026-09-29 10:00" in html
    assert 'id="status"' in html
    assert 'id="band"' in html
    assert 'id="now-state" data-state="off-duty"' in _card(html)  # peak hours at 10:00


def test_the_overview_reads_its_replies_from_the_engine_not_the_schedule(
    page: PageClient, api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: an engine rule changes, and every word the overview says
    follows it (the now card, the story's headline and its steps), as the
    gateways' verdicts do. Reading the replies off the schedule instead kept
    promising the old ones."""
    # The module, not the function the package exports under the same name.
    engine = importlib.import_module("curfew_core.engine.decide")

    stored = schedule_config.build(schedule_config.default_config())
    assert (stored.off_duty_reply, stored.lights_out_reply) == ("。", "明天再说。")

    def rule(state: Any, schedule: Any, *facts: Any) -> str | None:
        return None if state.value in ("on-duty", "winding") else f"rule says {state.value}"

    monkeypatch.setattr(engine, "reply_for", rule)
    # Gateways are told the new reply (the control: the rule really changed).
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI))
    assert api.post("/api/v1/verdict", {}).json()["reply"] == "rule says off-duty"

    html = page.get("/").content.decode()
    card = _card(html)
    assert 'data-state="off-duty"' in card
    assert "“rule says off-duty”" in card
    assert "“。”" not in card
    # The story's steps: tonight's lights-out is told with the engine's reply too.
    assert "asleep, replies “rule says lights-out”" in html
    assert "明天再说" not in html.split('id="schedule-form"')[0]

    # A preview of lights-out reads the same rule.
    card = _card(page.get("/", {"at": "2026-09-30T04:00"}).content.decode())
    assert "“rule says lights-out”" in card
    assert "明天再说" not in card
