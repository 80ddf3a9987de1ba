"""The Now card agrees with itself: one story about what holds and until when.

The real clock is pinned (``django.utils.timezone.now``) to Tuesday
2026-09-29 19:00 in Shanghai (the default schedule's zone): on duty, the
curfew starts at 23:00. Each case reads the server-rendered card.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import zoneinfo

import pytest
from django.utils import timezone

from tests.web.conftest import PageClient

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
#: The pinned real clock: an on-duty evening, four hours before the curfew.
NOW = dt.datetime(2026, 9, 29, 19, 0, tzinfo=SHANGHAI).astimezone(dt.UTC)
NO_OVERRIDE = "no override changes it"


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def _card(page: PageClient) -> str:
    html = page.get("/").content.decode()
    match = re.search(r'<article class="card now-card".*?</article>', html, re.S)
    assert match, "no Now card on the page"
    return match.group(0)


def _as_of(card: str) -> str:
    """The card's "<weekday> HH:MM · <zone>" line, without its tags."""
    match = re.search(r'<p class="muted as-of">(.*?)(?:<span class="tag|</p>)', card, re.S)
    assert match, "no 'as of' line on the card"
    return " ".join(re.sub(r"<[^>]+>", "", match.group(1)).split())


def _holds_until(card: str) -> str:
    match = re.search(r'<dd id="now-holds-until">([^<]*)</dd>', card)
    assert match, "no 'Holds until' on the card"
    return match.group(1).strip()


def test_plain_schedule_says_no_override_and_holds_until_the_next_change(
    page: PageClient,
) -> None:
    card = _card(page)
    assert _as_of(card) == "Tue 19:00 · Shanghai"
    assert "pretending" not in card
    assert 'id="now-override"' not in card
    assert NO_OVERRIDE in card
    assert _holds_until(card) == "23:00"  # the curfew starts


def test_overtime_is_never_called_what_the_schedule_says(page: PageClient) -> None:
    page.post("/overrides/", {"verb": "overtime", "duration": "2h"})
    card = _card(page)
    assert "Overtime until 21:00" in card
    # The schedule is on duty too, and still an override is in force.
    assert NO_OVERRIDE not in card
    assert "The schedule alone says:" in card
    assert _holds_until(card) == "21:00"


def test_overtime_past_a_scheduled_change_holds_until_its_end(page: PageClient) -> None:
    # Overtime from 19:00 for 5h runs through the 23:00 curfew start: what
    # holds (on duty) holds until the overtime ends, not until 23:00.
    page.post("/overrides/", {"verb": "overtime", "duration": "5h"})
    card = _card(page)
    assert "Overtime until 2026-09-30 00:00" in card
    assert _holds_until(card) == "2026-09-30 00:00"


def test_force_off_holds_until_the_override_ends(page: PageClient) -> None:
    page.post("/overrides/", {"verb": "off"})
    card = _card(page)
    assert "Forced off until 2026-09-30 09:00" in card
    assert NO_OVERRIDE not in card
    # Not 23:00 (a schedule change the forced lights-out does not notice).
    assert _holds_until(card) == "2026-09-30 09:00"


def test_time_machine_shows_its_moment_and_holds_until_the_pretend_ends(
    page: PageClient,
) -> None:
    # 10:00 that morning: peak hours (off duty) until 12:00, pretended for 1 h.
    page.post("/overrides/", {"verb": "debug", "moment": "2026-09-29T10:00", "duration": "1h"})
    card = _card(page)
    assert _as_of(card) == "Tue 10:00 · Shanghai"
    assert "pretending" in card
    assert 'id="now-state" data-state="off-duty"' in card
    # Details never contradict the banner: the pretend is named, not denied...
    assert NO_OVERRIDE not in card
    schedule_line = re.search(r'id="now-schedule">(.*?)</p>', card, re.S)
    assert schedule_line
    assert " ".join(schedule_line.group(1).split()) == (
        "Pretending: this is what the schedule says at 2026-09-29 10:00, "
        "the moment gateways are being told it is."
    )
    # ...and what gateways get holds until the pretend ends on the real clock
    # (19:00 + 1 h, as the banner says), not the pretended schedule's 12:00.
    assert _holds_until(card) == "20:00 (on the real clock, when pretending ends)"
    banner = re.search(
        r'<div class="pretend-banner".*?</div>', page.get("/").content.decode(), re.S
    )
    assert banner
    assert "(until 20:00 on the real clock," in " ".join(banner.group(0).split())


def test_time_machine_on_another_day_still_holds_until_the_real_end(page: PageClient) -> None:
    # A week later at 23:30, winding: the pretend's end is tonight on the real
    # clock (19:00 + 4 h), named by its time alone (the real today).
    page.post("/overrides/", {"verb": "debug", "moment": "2026-10-06T23:30", "duration": "4h"})
    card = _card(page)
    assert _as_of(card) == "Tue 23:30 · Shanghai"
    assert _holds_until(card) == "23:00 (on the real clock, when pretending ends)"


@pytest.mark.parametrize("moment", ["1900-01-01T08:06", "8999-12-31T23:00"])
def test_time_machine_at_the_ends_of_its_range_still_draws_the_card(
    page: PageClient, moment: str
) -> None:
    # The card asks the schedule again as of the time machine's moment; at
    # the ends of the range allowed there is still an answer, never a 500.
    assert page.post("/overrides/", {"verb": "debug", "moment": moment}).status_code == 302
    assert _holds_until(_card(page))


def test_details_json_is_on_the_users_clock(page: PageClient) -> None:
    # 19:00 in Shanghai is 11:00 UTC; the curfew starts at 23:00 Shanghai.
    card = _card(page)
    details = re.search(r'<pre class="json"[^>]*>(.*?)</pre>', card, re.S)
    assert details
    payload = json.loads(html.unescape(details.group(1)))
    assert payload["at"] == "2026-09-29T19:00:00+08:00"
    assert payload["valid_until"] == "2026-09-29T23:00:00+08:00"
    # The place in words (上海 on a Chinese page); the zone id is the JSON's own.
    assert "times on your clock, Shanghai;" in card
    assert payload["timezone"] == "Asia/Shanghai"
