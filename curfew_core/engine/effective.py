"""The effective plan: what a user's AI will actually do, stretch by stretch.

One truth for every surface (issue 39). The verdict says what happens *now*;
a page, a capsule, a heads-up or a CLI also tells what happens *next*. Each of
them used to walk the user's own schedule for that, and so, for a team member,
told their own night while gateways applied the team's. Here the coming hours
are read off ``decide_member`` itself (``decide`` without a team), overrides,
the time machine and the team's side included:

- the instants where anything may change are collected (every edge of the
  user's schedule walk, of the team's, and of each override's end);
- the verdict is asked at the start of each stretch between them, and
  neighbours in the same state and peak are joined.

So the state of a stretch *is* the verdict's at its start, by construction, and
a test holds every instant inside it to ``decide_member`` too (the cut list
must not miss an edge). Each stretch also says which side sets it (``own``,
``team`` or ``both``), whose rule held until it started (``held_by``) and
which override is in force, for the words that say why: every surface reads
those here (the page, the capsule, the Team API, the CLI), none re-derives
them. Pure, like ``decide``: every instant is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from curfew_core.engine.clock import to_wall, wall_midnight
from curfew_core.engine.decide import decide, segments
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import RequestContext, Schedule
from curfew_core.engine.team import TeamSide, combine, member_sides
from curfew_core.engine.verdict import SEVERITY, State, Verdict

#: Which side's rules make a stretch what it is.
Side = Literal["own", "team", "both"]
#: The override in force over a stretch, if any (``pretend``: the time machine).
OverrideName = Literal["overtime", "off", "pretend"]

#: The verdict's question for a plan: a call that says nothing about itself
#: (no session, no purpose, not a subagent), as the state route and pages ask.
PLAIN_CALL = RequestContext()
#: No override set.
NO_OVERRIDES = Overrides()


@dataclass(frozen=True, slots=True)
class Stretch:
    """A span of real time in one effective state (``end`` exclusive)."""

    start: datetime
    end: datetime
    state: State
    peak: bool
    #: Whose rules make it so: the user's own schedule, the team's, or both
    #: alike (always ``own`` without a team).
    side: Side
    override: OverrideName | None
    #: Whose rule held until ``start``, so it starts when it does
    #: (``held_by``): ``team`` when the stretch before it was the team's
    #: alone, else ``side``. A member woken at 09:30 by the team's night
    #: (their own wake-up is 09:00) starts a stretch both sides agree on
    #: (``both``), yet the team held them until then. A plan's first stretch
    #: has no stretch before it: its ``side``.
    held_by: Side


@dataclass(frozen=True, slots=True)
class Change:
    """The next moment the effective state changes, and to what."""

    at: datetime
    state: State
    #: Whose rules make the state it changes to (the stretch that starts).
    side: Side
    override: OverrideName | None
    #: Whose rule makes it change *then* (``Stretch.held_by``): the team's
    #: when the team alone held the state before it. What a surface says
    #: after the change ("by your team's schedule").
    held_by: Side


def _held_by(before: Side | None, side: Side) -> Side:
    """Whose rule makes the plan change into a stretch of ``side`` after a
    stretch of ``before`` (``None``: none before it in the plan): the team's
    when the stretch it ends was the team's alone, else ``side``."""
    return "team" if before == "team" else side


def _cuts(
    start: datetime,
    end: datetime,
    schedule: Schedule,
    overrides: Overrides,
    team: TeamSide | None,
    member_overtime_from: datetime | None,
) -> list[datetime]:
    """Every instant in ``(start, end)`` at which the verdict's state may change."""
    found: set[datetime] = set()
    sides = [schedule] if team is None else [schedule, team.schedule]
    for side in sides:
        for segment in segments(start, end, side):
            found.add(segment.start)
    ends = [overrides.overtime_until, overrides.forced_off_until, overrides.debug_until]
    if team is not None:
        ends.append(team.overtime_until)
        if member_overtime_from is not None:
            ends.append(member_overtime_from + team.policy.member_overtime)
    found.update(instant for instant in ends if instant is not None)
    return sorted(
        instant.astimezone(UTC) for instant in found if start < instant.astimezone(UTC) < end
    )


def _sides(
    instant: datetime,
    schedule: Schedule,
    overrides: Overrides,
    team: TeamSide | None,
    member_overtime_from: datetime | None,
) -> tuple[Verdict, Side]:
    if team is None:
        return decide(instant, schedule, PLAIN_CALL, overrides), "own"
    # ``decide_member`` for a call without scope is the two halves combined
    # (no exemption applies): asked once, the halves also say whose rule it is.
    own, theirs = member_sides(
        instant, schedule, PLAIN_CALL, overrides, team, member_overtime_from=member_overtime_from
    )
    verdict = combine(own, theirs)
    if SEVERITY[own.state] == SEVERITY[theirs.state]:
        return verdict, "both"
    return verdict, "own" if SEVERITY[own.state] > SEVERITY[theirs.state] else "team"


def _override_of(verdict: Verdict) -> OverrideName | None:
    if verdict.debug_at is not None:
        return "pretend"
    return verdict.override


def effective_plan(
    start: datetime,
    end: datetime,
    schedule: Schedule,
    overrides: Overrides = NO_OVERRIDES,
    team: TeamSide | None = None,
    *,
    member_overtime_from: datetime | None = None,
) -> tuple[Stretch, ...]:
    """What the AI does from ``start`` to ``end``, as the verdicts will say it.

    ``schedule``, ``overrides`` and ``team`` are exactly what the user's
    verdicts are decided with (``decide_member``), so a stretch's state is the
    state of every verdict inside it. Instants come back in ``start``'s zone.
    """
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("effective_plan() needs aware instants; naive datetimes are ambiguous")
    zone = start.tzinfo
    begin, finish = start.astimezone(UTC), end.astimezone(UTC)
    if finish <= begin:
        return ()
    edges = [begin, *_cuts(begin, finish, schedule, overrides, team, member_overtime_from), finish]
    stretches: list[Stretch] = []
    for index in range(len(edges) - 1):
        verdict, side = _sides(edges[index], schedule, overrides, team, member_overtime_from)
        override = _override_of(verdict)
        last = stretches[-1] if stretches else None
        if (
            last is not None
            and last.state is verdict.state
            and last.peak == verdict.peak
            and last.side == side
            and last.override == override
        ):
            stretches[-1] = Stretch(
                last.start, edges[index + 1], last.state, last.peak, side, override, side
            )
        else:
            # ``held_by`` is set once the neighbours are joined (below).
            stretches.append(
                Stretch(
                    edges[index],
                    edges[index + 1],
                    verdict.state,
                    verdict.peak,
                    side,
                    override,
                    side,
                )
            )
    return tuple(
        Stretch(
            part.start.astimezone(zone),
            part.end.astimezone(zone),
            part.state,
            part.peak,
            part.side,
            part.override,
            _held_by(stretches[index - 1].side if index else None, part.side),
        )
        for index, part in enumerate(stretches)
    )


#: How far ahead a "next change" looks: past the coming night and the next
#: day's peak hours.
HORIZON = timedelta(hours=30)


def next_change(
    at: datetime,
    schedule: Schedule,
    overrides: Overrides = NO_OVERRIDES,
    team: TeamSide | None = None,
    *,
    member_overtime_from: datetime | None = None,
    horizon: timedelta = HORIZON,
) -> Change | None:
    """The first moment after ``at`` (within ``horizon``) at which the
    effective state differs from the state at ``at``; ``None`` if none."""
    plan = effective_plan(
        at, at + horizon, schedule, overrides, team, member_overtime_from=member_overtime_from
    )
    if not plan:
        return None
    now = plan[0].state
    for stretch in plan[1:]:
        if stretch.state is not now:
            return Change(
                stretch.start, stretch.state, stretch.side, stretch.override, stretch.held_by
            )
    return None


# -- the team's share of a week ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeamShare:
    """A stretch where the team's rule alone makes a member's AI what it is
    (``Stretch.side == "team"``: the team's state is harsher than their own)."""

    start: datetime
    end: datetime
    #: The state the member's AI is in over it (the team's).
    state: State
    peak: bool
    #: The member's own states over it, in order: what their own schedule
    #: alone would have made it.
    own: tuple[State, ...]


@dataclass(frozen=True, slots=True)
class ShareDay:
    """One local day of a member's week and the team's stretches that start on it."""

    day: date
    shares: tuple[TeamShare, ...]


def team_week(
    first: date, schedule: Schedule, team: TeamSide, *, days: int = 7
) -> tuple[ShareDay, ...]:
    """Where, over ``days`` local days from ``first`` (on the member's own
    clock, ``schedule.timezone``), the team's schedule is harsher than the
    member's own: the standing policy, as the Team page's card tells it.

    Read off ``effective_plan`` with no override of either side (no
    overtime, force-off, time machine or release night: those pass, the
    policy stays) for a plain call: each stretch whose side is ``team``,
    under the local day it starts on (a night belongs to its evening: a
    stretch from 22:00 to 03:00 is its first day's). Each share also names
    the member's own states over it (``effective_plan`` without the team).
    """
    zone = schedule.timezone
    standing = TeamSide(team.schedule, team.policy)

    def midnight(day: date) -> datetime:
        return wall_midnight(day).replace(tzinfo=zone)

    # From the evening before (a stretch running into ``first`` starts then,
    # and is not ``first``'s) to a day past the last (its night ends then).
    begin, finish = midnight(first - timedelta(days=1)), midnight(first + timedelta(days=days + 1))
    plan = effective_plan(begin, finish, schedule, NO_OVERRIDES, standing)
    own_plan = effective_plan(begin, finish, schedule)
    found: dict[date, list[TeamShare]] = {first + timedelta(days=n): [] for n in range(days)}
    for stretch in plan:
        if stretch.side != "team":
            continue
        shares = found.get(to_wall(stretch.start, zone).date())
        if shares is None:
            continue
        own = tuple(
            dict.fromkeys(
                part.state
                for part in own_plan
                if part.start < stretch.end and stretch.start < part.end
            )
        )
        shares.append(TeamShare(stretch.start, stretch.end, stretch.state, stretch.peak, own))
    return tuple(ShareDay(day, tuple(shares)) for day, shares in found.items())
