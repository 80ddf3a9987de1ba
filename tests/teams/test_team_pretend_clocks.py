"""Pretending, the Overview tells one instant: the pretended one, as the
engine decides it (``decide_member`` at the pretended moment, its next
change), in the Now card's clock, its countdown and the band's "now" cell;
the one real time on it, when pretending ends, says it is on the real clock
(in the banner and in the card's "Holds until"). It used to say "until 16:00"
beside "Sun 09:15" with nothing to tell a Saturday's real 16:00 from a
pretended Sunday's. A team member (woken by the team at 09:30) and a
one-person control, in English and Chinese."""

from __future__ import annotations

import datetime as dt
import html as htmllib
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.engine import Overrides
from curfew_core.engine.clock import to_wall
from curfew_core.engine.effective import PLAIN_CALL, next_change
from curfew_core.engine.team import decide_member
from curfew_core.models import Team
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from tests.teams.test_team_policy_card import _committed, _night, _save, pair
from tests.web.conftest import PageClient

__all__ = ["pair"]

SHANGHAI = dt.timezone(dt.timedelta(hours=8))
#: The real clock: a Saturday afternoon; the pretend is Sunday morning, for an hour.
REAL = dt.datetime(2026, 12, 5, 15, 0, tzinfo=SHANGHAI)
PRETENDED = dt.datetime(2026, 12, 6, 9, 15, tzinfo=SHANGHAI)
TEAM_NIGHT = _night("22:00", "01:00", "09:30")
REAL_CLOCK = {"en": "16:00 on the real clock", "zh-hans": "真实时间 16:00"}
HOLDS = {
    "en": "16:00 (on the real clock, when pretending ends)",
    "zh-hans": "16:00 (真实时间，假装结束时)",
}
HEADERS = {"en": {"HTTP_ACCEPT_LANGUAGE": "en"}, "zh-hans": {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}}


def _text(fragment: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _check(user: User, language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with _committed():
        override_apply(
            user=user, command=from_words(["debug", "2026-12-06 09:15", "for", "1h"]), now=REAL
        )
    monkeypatch.setattr(timezone, "now", lambda: REAL)
    bundle = bundle_for(user.pk)
    zone = bundle.schedule.timezone
    # The engine at the pretended moment (no override but the pretend itself).
    verdict = decide_member(PRETENDED, bundle.schedule, PLAIN_CALL, Overrides(), bundle.team)
    change = next_change(PRETENDED, bundle.schedule, Overrides(), bundle.team)
    assert change is not None

    client = PageClient(user)
    client.client.cookies["django_language"] = language
    page = client.get("/", **HEADERS[language]).content.decode()
    card = page.split('id="now"')[1].split('id="overrides"')[0]
    as_of = _text(card.split('class="muted as-of">')[1].split("</p>")[0])
    assert to_wall(PRETENDED, zone).strftime("%H:%M") in as_of
    assert f'data-state="{verdict.state.value}"' in card.split('id="now-state"')[1][:40]
    countdown = card.split('id="now-next"')[1].split("</p>")[0]
    assert f'data-at="{change.at.astimezone(dt.UTC).isoformat()}"' in countdown
    assert to_wall(change.at, zone).strftime("%H:%M") in _text(countdown.split(">", 1)[1])
    now_cells = re.findall(r'<li class="cell[^"]*is-now[^"]*"[^>]*title="([0-9:]+)–', page)
    assert now_cells == ["09:15"]
    assert 'data-date="2026-12-06"' in page.split("is-now")[0].rsplit("band-row", 1)[1]

    # The real end, named as such wherever a person reads it.
    banner = _text(page.split('id="pretend-banner"')[1].split("</form>")[0])
    assert REAL_CLOCK[language] in banner, banner
    holds = _text(card.split('id="now-holds-until">')[1].split("</dd>")[0])
    assert holds == HOLDS[language]


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_member_pretending_reads_one_instant(
    pair: tuple[Team, User], language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    team, bob = pair
    _save(team, bob, TEAM_NIGHT, {})
    _check(bob, language, monkeypatch)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_one_person_pretending_reads_one_instant(
    db: None, language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eve = User.objects.create_user("eve")
    with _committed():
        schedule_update(user=eve, changes=TEAM_NIGHT, source="test")
    _check(eve, language, monkeypatch)
