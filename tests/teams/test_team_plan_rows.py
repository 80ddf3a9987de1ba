"""The day band's exact plan (the list under the band on the Overview and
Schedule pages) names each run of one state once. A member asleep by the
team's night from 01:00 to 09:30 on a Monday, whose own peak hours start at
09:00, read "01:00–09:00 Asleep, 09:00–09:30 Asleep": the engine's plan cuts
where the peak flag changes, which the list does not show. The rows are the
engine's effective plan of the day, joined by state; a one-person control
on the same night (no team) reads the same."""

from __future__ import annotations

import datetime as dt
import itertools
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core.engine.clock import to_wall
from curfew_core.engine.effective import effective_plan
from curfew_core.models import Team
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.schedules import schedule_update
from tests.teams.test_team_policy_card import _committed, _night, _save, pair
from tests.web.conftest import PageClient

__all__ = ["pair"]

SHANGHAI = dt.timezone(dt.timedelta(hours=8))
MONDAY = dt.date(2026, 12, 7)
TEAM_NIGHT = _night("22:00", "01:00", "09:30")


def _rows(user: User, path: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 12, 5, 15, tzinfo=SHANGHAI))
    with translation.override("en"):
        page = PageClient(user).get(path, {"band_date": MONDAY.isoformat()}).content.decode()
    plan = page.split('class="plan"')[1].split("</ol>")[0]
    return re.findall(
        r's-([a-z-]+)" aria-hidden="true"></span><span class="plan-time">([0-9:]+)–([0-9:]+)<', plan
    )


def _engine_runs(user: User) -> list[tuple[str, str, str]]:
    """The engine's plan of the day (standing schedules), neighbours in one state joined."""
    bundle = bundle_for(user.pk)
    zone = bundle.schedule.timezone
    start = dt.datetime.combine(MONDAY, dt.time(), zone)
    plan = effective_plan(start, start + dt.timedelta(days=1), bundle.schedule, team=bundle.team)
    runs: list[list[str]] = []
    for stretch in plan:
        begin = to_wall(stretch.start, zone).strftime("%H:%M")
        end = to_wall(stretch.end, zone).strftime("%H:%M")
        end = "24:00" if stretch.end == start + dt.timedelta(days=1) else end
        if runs and runs[-1][0] == stretch.state.value:
            runs[-1][2] = end
        else:
            runs.append([stretch.state.value, begin, end])
    return [(state, begin, end) for state, begin, end in runs]


@pytest.mark.parametrize("path", ["/", "/schedule/"])
def test_a_members_asleep_run_is_one_row(
    pair: tuple[Team, User], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    team, bob = pair
    _save(team, bob, TEAM_NIGHT, {})
    rows = _rows(bob, path, monkeypatch)
    assert ("lights-out", "01:00", "09:30") in rows
    assert rows == _engine_runs(bob)
    states = [state for state, _start, _end in rows]
    assert all(a != b for a, b in itertools.pairwise(states)), rows


def test_one_person_on_the_same_night_reads_the_same(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    eve = User.objects.create_user("eve")
    with _committed():
        schedule_update(user=eve, changes=TEAM_NIGHT, source="test")
    rows = _rows(eve, "/", monkeypatch)
    assert ("lights-out", "01:00", "09:30") in rows
    assert rows == _engine_runs(eve)
