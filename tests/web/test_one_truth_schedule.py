"""QA "look" finding 2: a team member's Schedule page at the team's night.
The band (and its "now" cell) is what gateways get, the two schedules
together, and the chart carries the engine's line with the team beside the
member's own curve, each line captioned for what it is. Checked against
``decide_member`` at the same instants; a person outside the team (the
control) sees the page as before."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.utils import translation

from curfew_core.engine import Overrides
from curfew_core.engine.effective import PLAIN_CALL
from curfew_core.engine.team import TeamSide, decide_member
from curfew_core.selectors.bundles import bundle_for
from tests.api.conftest import FrozenClock, local
from tests.web.conftest import PageClient
from tests.web.test_one_truth_overview import AFTERNOON, band_cells, make_member, pretend

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local(AFTERNOON))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _page(person: User) -> str:
    return str(PageClient(person).get("/schedule/").content.decode())


def _now_cell(html: str) -> str:
    found = re.search(r'<li class="cell [^"]*is-now" data-state="([^"]+)"', html)
    assert found is not None, "no now cell"
    return found.group(1)


def _figure(html: str) -> dict[str, Any]:
    block = re.search(r'id="curve-figure"[^>]*>(.*?)</script>', html, re.S)
    assert block is not None
    figure: dict[str, Any] = json.loads(block.group(1))
    return figure


def _caption(html: str) -> str:
    found = re.search(r'<p class="muted small chart-caption">(.*?)</p>', html, re.S)
    assert found is not None
    return " ".join(found.group(1).split())


def test_a_members_schedule_page_shows_what_gateways_get(clock: FrozenClock) -> None:
    alice = make_member("alice", in_team=True)
    pretend(alice, "2026-12-02 21:30", clock)
    html = _page(alice)
    bundle = bundle_for(alice.pk)
    assert bundle.team is not None
    at = local("2026-12-02 21:30")
    verdict = decide_member(
        at, bundle.schedule, PLAIN_CALL, bundle.overrides.for_what_if(), bundle.team
    )
    assert verdict.state.value == "winding"  # the team's night
    # The band's now cell is the engine's state, not the member's own (working).
    assert _now_cell(html) == "winding"
    cells = band_cells(html)
    assert cells[21 * 4] == "winding"
    assert cells[22 * 4] == "lights-out"
    # The chart: the member's own curve first, then the engine's line with the team.
    figure = _figure(html)
    [team_line] = [trace for trace in figure["data"] if trace.get("meta") == "with-team"]
    assert figure["data"][0]["name"] == "Answer length"
    standing = TeamSide(bundle.team.schedule, bundle.team.policy)
    night_start = local("2026-12-02 23:00")
    checked = 0
    for x, y in zip(team_line["x"], team_line["y"], strict=True):
        instant = night_start + dt.timedelta(minutes=x)
        expected = decide_member(instant, bundle.schedule, PLAIN_CALL, Overrides(), standing)
        held = 0 if expected.state.value in ("lights-out", "off-duty") else expected.budget
        assert y == held, (x, y, expected.state)
        checked += 1
    assert checked > 20
    # It starts at the team's 21:00, two hours before the member's own night.
    assert team_line["x"][0] == -120
    assert figure["layout"]["xaxis"]["range"][0] <= -120
    caption = _caption(html)
    assert "exactly as gateways will get it" not in caption
    assert "the dashed line is what gateways get" in caption


def test_a_person_without_a_team_sees_one_line(clock: FrozenClock) -> None:
    bob = make_member("bob", in_team=False)
    pretend(bob, "2026-12-02 21:30", clock)
    html = _page(bob)
    assert _now_cell(html) == "on-duty"
    figure = _figure(html)
    assert [t for t in figure["data"] if t.get("meta") == "with-team"] == []
    assert "exactly as gateways will get it" in _caption(html)
