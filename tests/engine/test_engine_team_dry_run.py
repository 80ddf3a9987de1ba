"""A member's "only watch" (dry run) where the team acts, and the team's where
the member's own schedule acts: the call is acted on (the engine's dry run is
both sides' or none), so the watching side's reason part no longer says what
it "would" do as if nothing happened; it says who acted. Where nobody acts
(the other side passes), the dry run's "would" stands."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from curfew_core.engine import Overrides, Schedule
from curfew_core.engine.schedule import RequestContext
from curfew_core.engine.team import BY_MEMBER, BY_TEAM, TeamPolicy, TeamSide, decide_member
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


def test_the_members_dry_run_where_the_team_passes_still_says_would() -> None:
    """Peak hours by the member's own schedule alone, only watched; the team
    has none: the call passes, so the member's "would" is what happened."""
    action, dry_run, parts = _member(
        PEAK, Schedule(dry_run=True, peak_shift=True), Schedule(peak_shift=False)
    )
    assert (action, dry_run) == (Action.PASS, False)
    assert "dry run: would short-circuit" in parts
    assert BY_TEAM not in parts
