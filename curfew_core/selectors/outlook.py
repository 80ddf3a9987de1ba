"""What a user's AI will do from now on, read off the engine's one plan.

Every surface that tells what comes next (the overview's countdown, steps and
bands, the heads-up, the capsule, the CLI) reads it here, from exactly the
inputs a verdict of the user's is decided with (``verdicts.decide_for``):
their own schedule, their overrides, their team's side and when they took
overtime. Nothing here walks a schedule: the engine's ``effective_plan`` and
``next_change`` do, over ``decide_member`` itself (issue 39, one truth).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from curfew_core.engine import Overrides, Schedule, Verdict
from curfew_core.engine.effective import (
    HORIZON,
    PLAIN_CALL,
    Change,
    Stretch,
    effective_plan,
    next_change,
)
from curfew_core.engine.team import TeamSide, decide_member
from curfew_core.selectors.bundles import UserBundle


@dataclass(frozen=True, slots=True)
class Outlook:
    """A user's verdict inputs, and the real instant the outlook starts at."""

    now: datetime
    schedule: Schedule
    overrides: Overrides
    team: TeamSide | None
    overtime_from: datetime | None

    @property
    def team_schedule(self) -> Schedule | None:
        """The team's schedule a member's band is drawn with (harsher wins)."""
        return None if self.team is None else self.team.schedule

    def verdict(self, instant: datetime) -> Verdict:
        """The verdict of a plain call at ``instant`` (the state route's question)."""
        return decide_member(
            instant,
            self.schedule,
            PLAIN_CALL,
            self.overrides,
            self.team,
            member_overtime_from=self.overtime_from,
        )

    def plan(self, until: datetime) -> tuple[Stretch, ...]:
        """The engine's effective plan from ``now`` to ``until``."""
        return effective_plan(
            self.now,
            until,
            self.schedule,
            self.overrides,
            self.team,
            member_overtime_from=self.overtime_from,
        )

    def next_change(self) -> Change | None:
        """The engine's next change after ``now`` (within its ``HORIZON``)."""
        return next_change(
            self.now,
            self.schedule,
            self.overrides,
            self.team,
            member_overtime_from=self.overtime_from,
            horizon=HORIZON,
        )


def curfew_applies(bundle: UserBundle) -> bool:
    """Whether anything may be held back from the user's AI: their own curfew
    is on, or they are in a team, whose schedule applies whatever their own
    switch says (harsher wins). Off: no countdown, no steps, no heads-up."""
    return bool(bundle.config["enabled"]) or bundle.team is not None


def outlook_of(bundle: UserBundle, *, now: datetime, at: datetime | None = None) -> Outlook:
    """The outlook of ``bundle``'s user at the real ``now``, or, for a what-if
    at ``at``, as ``decide_for`` asks it: from ``at``, without the time
    machine. ``at`` is the overview's preview, or the time machine's moment
    while it is on (``verdict.debug_at``): a page and a capsule count their
    clocks from the verdict's ``at``, so what comes next is told from the
    pretended moment, as it would come then (the pretended night)."""
    overrides = bundle.overrides
    if at is not None:
        now = at
        overrides = overrides.for_what_if()
    return Outlook(now, bundle.schedule, overrides, bundle.team, bundle.overtime_from)
