"""A member's "only watch" (dry run) where the team acts, and the team's where
the member's own schedule acts: the call is acted on (the engine's dry run is
both sides' or none), so the watching side's reason part no longer says what
it "would" do as if nothing happened; it says who acted. Where nobody acts
(the other side passes, or its curfew is off), the verdict is a dry run, its
"would" the watching side's: what "Only watch" holds back."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from curfew_core.engine import Overrides, Schedule
from curfew_core.engine.schedule import RequestContext
from curfew_core.engine.team import (
    BY_MEMBER,
    BY_TEAM,
    TeamPolicy,
    TeamSide,
    decide_member,
    dry_run_holds,
)
from curfew_core.engine.verdict import Action

SHANGHAI = ZoneInfo("Asia/Shanghai")
NIGHT = datetime(2026, 12, 2, 4, 30, tzinfo=SHANGHAI)  # a Wednesday, asleep
PEAK = datetime(2026, 12, 2, 16, 30, tzinfo=SHANGHAI)
PLAIN = RequestContext()
NONE = Overrides()


def _member(at: datetime, own: Schedule, team: Schedule) -> tuple[Action, bool, list[str]]:
    verdict = decide_member(at, own, PLAIN, NONE, TeamSide(team, TeamPolicy()))
    return verdict.action, verdict.dry_run, verdict.reason.split(" · ")


def test_the_members_dry_run_where_the_team_acts_says_the_team_acted() -> None:
    action, dry_run, parts = _member(NIGHT, Schedule(dry_run=True), Schedule())
    assert (action, dry_run) == (Action.SHORT_CIRCUIT, False)
    assert BY_TEAM in parts
    assert not [part for part in parts if "would" in part]


def test_the_teams_dry_run_where_the_member_acts_says_the_member_acted() -> None:
    action, dry_run, parts = _member(NIGHT, Schedule(), Schedule(dry_run=True))
    assert (action, dry_run) == (Action.SHORT_CIRCUIT, False)
    assert f"team: {BY_MEMBER}" in parts
    assert not [part for part in parts if "would" in part]


def test_both_watching_nobody_acts_and_both_say_would() -> None:
    """The control: a dry run on both sides is the verdict's, each side's "would" stands."""
    action, dry_run, parts = _member(NIGHT, Schedule(dry_run=True), Schedule(dry_run=True))
    assert (action, dry_run) == (Action.PASS, True)
    assert parts.count("dry run: would short-circuit") == 1
    assert parts.count("team: dry run: would short-circuit") == 1


def test_the_members_dry_run_where_the_team_passes_is_a_dry_run() -> None:
    """Peak hours by the member's own schedule alone, only watched; the team
    has none: nobody acts, so the verdict is a dry run and says what the
    member's own schedule would have done."""
    at, own = PEAK, Schedule(dry_run=True, peak_shift=True)
    verdict = decide_member(at, own, PLAIN, NONE, TeamSide(Schedule(peak_shift=False)))
    assert (verdict.action, verdict.dry_run) == (Action.PASS, True)
    assert verdict.would is not None
    assert verdict.would["action"] == "short-circuit"
    assert "dry run: would short-circuit" in verdict.reason.split(" · ")
    assert BY_TEAM not in verdict.reason


@pytest.mark.parametrize("team", [Schedule(enabled=False), Schedule(dry_run=True)])
def test_a_team_that_never_acts_keeps_the_members_dry_run_all_day(team: Schedule) -> None:
    """A team whose curfew is off, or that only watches too: the member's dry
    run holds at night and by day (``dry_run_holds``), as the Replies page says."""
    side = TeamSide(team, TeamPolicy())
    assert dry_run_holds(side)
    for at in (NIGHT, PEAK):
        verdict = decide_member(at, Schedule(dry_run=True), PLAIN, NONE, side)
        assert (verdict.action, verdict.dry_run) == (Action.PASS, True), at


def test_a_team_that_acts_does_not_keep_it() -> None:
    """The control: an active team acts where its schedule says (its night)."""
    assert not dry_run_holds(TeamSide(Schedule(), TeamPolicy()))
