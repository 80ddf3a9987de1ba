"""How long a verdict stands: the later instants that decide it again.

A gateway asks many times a second, and between two instants of one local
minute that are on the same side of every edge, step and override end (the
verdict's ``valid_until``), the schedule reads the same: every field of the
verdict is the same but ``at``, and while winding its ``progress``, which
moves with the wall clock by the engine's own arithmetic. ``steady`` gives
that stretch for a verdict ``decide`` gave, or ``None`` when it cannot vouch
for any later instant; ``Stretch.verdict_at`` is the verdict at a later
instant of it (``None`` once winding's whole percent, which the reason
names, has moved on). The selectors keep each user's last verdict per
request and answer from it inside its stretch (``selectors/verdicts.py``);
``decide`` itself keeps nothing, so its answer never depends on what it was
asked before.

Not vouched for, because a later instant reads differently there:

- the schedule winding under an override (forced off or overtime): the
  reason names the night's percent, and the verdict carries no progress to
  follow it by;
- the time machine ("pretend it is ..."), set at all: it is read on its own
  clock, and its end changes what is read;
- a ``valid_until`` that is the 24-hour horizon (it moves with the instant)
  or within a second (the engine's "look again in a second" when an edge's
  wall time has already passed: measured from the instant);
- an instant not in UTC: ``valid_until`` is written in the instant's zone;
- a change of the zone's offset before the stretch ends (``decide`` already
  ends ``valid_until`` at one; looked for again because the stretch's minute
  and the winding clock are read on the offset at the instant).

The stretch ends at the next local minute, since the reason names it.

A team member's verdict (``decide_member``: their side and the team's,
combined) stands where both sides stand (``steady_member``), neither of them
winding, and until the member's overtime stops lifting the team's night.

Pure, standard library only, like ``decide`` (``tests/engine/test_engine_steady.py``
checks its promise against ``decide`` itself, near offset changes too).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from curfew_core.engine.clock import next_transition
from curfew_core.engine.decide import HORIZON, winding_clock
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import Schedule
from curfew_core.engine.team import TeamSide, member_lift, team_overrides
from curfew_core.engine.verdict import State, Verdict, new_verdict, progress_percent

_SECOND = timedelta(seconds=1)
_TICK = timedelta(microseconds=1)
_US = 1_000_000
_MINUTE_US = 60 * _US


class Stretch:
    """The instants ``[since, until)`` (UTC) that decide a verdict again."""

    __slots__ = ("length", "percent", "since", "start", "until", "wall")

    def __init__(
        self,
        since: datetime,
        until: datetime,
        clock: tuple[int, int, float] | None = None,
        percent: int | None = None,
    ) -> None:
        self.since = since
        self.until = until
        #: Winding: the wall reading at ``since`` and the window's start and
        #: length (``decide.winding_clock``), and the reason's whole percent.
        self.wall: int | None = None
        self.start = 0
        self.length = 1.0
        if clock is not None:
            self.wall, self.start, self.length = clock
        self.percent = percent

    def verdict_at(self, verdict: Verdict, at: datetime) -> Verdict | None:
        """``verdict`` (the one the stretch was found for) at ``at``, an instant
        of the stretch: the same fields, ``at`` moved and the winding progress
        with it (its dry run's ``would`` a copy of its own: a caller may change
        what it was given); ``None`` when the percent has moved on."""
        progress = verdict.progress
        if self.wall is not None:
            wall = self.wall + (at - self.since) // _TICK
            # As ``decide`` works it out (``_winding``): the same float.
            progress = (wall - self.start) / _US / self.length
            if progress_percent(progress) != self.percent:
                return None
        would = verdict.would
        return new_verdict(
            verdict.state,
            verdict.schedule_state,
            verdict.action,
            verdict.reply,
            verdict.max_tokens,
            verdict.persona,
            verdict.tools,
            verdict.reasoning_effort,
            progress,
            verdict.peak,
            verdict.reason,
            verdict.exempt,
            verdict.dry_run,
            verdict.valid_until,
            at,
            verdict.budget,
            verdict.override,
            verdict.override_until,
            verdict.debug_at,
            verdict.debug_until,
            None if would is None else dict(would),
        )


def steady(
    verdict: Verdict, now: datetime, schedule: Schedule, overrides: Overrides
) -> Stretch | None:
    """The stretch after ``now`` that decides ``verdict`` again, or ``None``.
    ``verdict`` is ``decide(now, schedule, request, overrides)`` (the request
    is no matter: it is read the same at every instant)."""
    if now.tzinfo is not UTC or overrides.debug_at is not None:
        return None
    if verdict.debug_at is not None or verdict.at != now:
        return None
    winding = verdict.schedule_state is State.WINDING
    if winding and (verdict.state is not State.WINDING or verdict.progress is None):
        return None
    if not winding and verdict.progress is not None:
        return None
    until = verdict.valid_until
    if until.tzinfo is not UTC or until - now <= _SECOND or until >= now + HORIZON:
        return None
    local = now.astimezone(schedule.timezone)
    into = local.second * _US + local.microsecond
    minute_ends = now + timedelta(microseconds=_MINUTE_US - into)
    if minute_ends < until:
        until = minute_ends
    if next_transition(now, until, schedule.timezone) is not None:
        return None
    if verdict.progress is None:
        return Stretch(now, until)
    clock = winding_clock(now, schedule, verdict.progress)
    if clock is None:
        return None
    return Stretch(now, until, clock, progress_percent(verdict.progress))


def steady_member(
    own: Verdict,
    theirs: Verdict,
    now: datetime,
    schedule: Schedule,
    overrides: Overrides,
    team: TeamSide,
    *,
    member_overtime_from: datetime | None = None,
) -> Stretch | None:
    """``steady`` for a team member: the stretch after ``now`` that decides
    their verdict again (``decide_member``'s at ``now``, the combination of
    ``own`` and ``theirs``, the two sides ``member_sides`` gave for the same
    arguments), or ``None``. Both sides must stand: the stretch is where both
    do. Not vouched for while either side winds (the combined progress is a
    winding side's, and follows whichever side acts). Cut where the member's
    overtime stops lifting the team's night (``team_overrides`` reads the
    instant there)."""
    if own.progress is not None or theirs.progress is not None:
        return None
    mine = steady(own, now, schedule, overrides)
    if mine is None:
        return None
    read_with = team_overrides(team, overrides, now=now, member_overtime_from=member_overtime_from)
    ours = steady(theirs, now, team.schedule, read_with)
    if ours is None:
        return None
    until = min(mine.until, ours.until)
    lift = member_lift(team, overrides, member_overtime_from)
    if lift is not None and now < lift < until:
        until = lift
    return Stretch(now, until)
