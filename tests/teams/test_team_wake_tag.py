"""When the team wakes later than the member (member 09:00, team 09:30), the
overview's next change at 09:30 says it is the team's schedule that holds it
("by your team's schedule"), and so does the step that starts then. The
engine names the side of the stretch that starts (``both``: both are awake),
so the tag was missing; the plan's stretch before it is the team's alone.
A one-person control on the team's night, with no team, gets no tag at the
same time."""

from __future__ import annotations

import datetime as dt
import html as htmllib
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core.engine import Overrides, State
from curfew_core.engine.effective import PLAIN_CALL, next_change
from curfew_core.engine.team import decide_member
from curfew_core.models import Team
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.schedules import schedule_update
from tests.teams.test_team_policy_card import _committed, _night, _save, pair
from tests.web.conftest import PageClient

__all__ = ["pair"]

SHANGHAI = dt.timezone(dt.timedelta(hours=8))
#: A Sunday (no peak hours): bob's own night is over, the team's is not.
SUNDAY_0915 = dt.datetime(2026, 12, 6, 9, 15, tzinfo=SHANGHAI)
TEAM_NIGHT = _night("22:00", "01:00", "09:30")


def _overview(user: User, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(timezone, "now", lambda: SUNDAY_0915)
    with translation.override("en"):
        return PageClient(user).get("/").content.decode()


def _countdown(page: str) -> str:
    part = page.split('id="now-next"')[1].split("</p>")[0]
    return htmllib.unescape(re.sub(r"<[^>]+>", "", part.split(">", 1)[1])).strip()


def _step_at(page: str, clock: str) -> str:
    steps = page.split('id="now-steps"')[1].split("</ol>")[0]
    [step] = [item for item in steps.split("<li")[1:] if f'step-time">{clock}<' in item]
    return step


def test_the_teams_later_wake_up_is_tagged(
    pair: tuple[Team, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    team, bob = pair
    _save(team, bob, TEAM_NIGHT, {})
    bundle = bundle_for(bob.pk)
    assert bundle.team is not None
    # The engine: asleep by the team's night alone, awake at the team's 09:30.
    verdict = decide_member(SUNDAY_0915, bundle.schedule, PLAIN_CALL, Overrides(), bundle.team)
    assert verdict.state is State.LIGHTS_OUT
    change = next_change(SUNDAY_0915, bundle.schedule, Overrides(), bundle.team)
    assert change is not None
    assert (change.at, change.state) == (SUNDAY_0915 + dt.timedelta(minutes=15), State.ON_DUTY)

    page = _overview(bob, monkeypatch)
    assert _countdown(page) == "Back to work in 15 min (09:30). by your team's schedule"
    assert 'data-side="team"' in page.split('id="now-next"')[1].split(">")[0]
    assert "tag-team" in _step_at(page, "09:30")


def test_one_person_on_the_same_night_gets_no_tag(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    eve = User.objects.create_user("eve")
    with _committed():
        schedule_update(user=eve, changes=TEAM_NIGHT, source="test")
    page = _overview(eve, monkeypatch)
    assert _countdown(page) == "Back to work in 15 min (09:30)."
    assert "tag-team" not in _step_at(page, "09:30")
