"""A team member's verdict: the team's schedule and the member's own, harsher wins.

Pure, like ``decide``: both sides are decided at the same instant, each on its
own schedule, and the two verdicts are combined field by field by the
engine's one rule (``SEVERITY``): the harsher state, the harsher action, the
smaller budget, tools denied by either, the earlier ``valid_until``. The team's
peak hours and holidays are the team schedule's own, so they reach every member.

Two things are not a plain "harsher of two verdicts", and are settled here:

- **Exemptions** count only if both sides allow them: the member's schedule
  must exempt the call (session, purpose, subagents), and so must the team's,
  or the team lets members exempt (``TeamPolicy.members_may_exempt``).
- **Overtime**: a member's overtime lifts their own night, never the team's,
  unless the team allows member overtime, and then for at most
  ``TeamPolicy.member_overtime`` from when it was taken. A whole-team overtime
  (an admin's "release night") is the team side's own override.

The member's time machine ("pretend it is ...") reads both schedules at the
pretended instant: a gateway under test sees what a member would then see.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from curfew_core.engine.decide import DRY_RUN_MARK, PRETEND_MARK, decide
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import RequestContext, Schedule, purpose_key
from curfew_core.engine.verdict import SEVERITY, Action, State, Verdict, new_verdict

#: The harsher action wins, as the harsher state does.
ACTION_SEVERITY: dict[Action, int] = {Action.PASS: 0, Action.CLAMP: 1, Action.SHORT_CIRCUIT: 2}


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    """What the team's admins decided beyond the schedule."""

    #: Whether a member's own exemptions (sessions, purposes, subagents) count
    #: although the team's schedule does not list them.
    members_may_exempt: bool = False
    #: How long a member's overtime may lift the team's night; zero: never.
    member_overtime: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class TeamSide:
    """The team's half of a member's verdict."""

    schedule: Schedule
    policy: TeamPolicy = TeamPolicy()
    #: The team's own overrides: a whole-team overtime ("release night").
    overtime_until: datetime | None = None


def scope_exempts(schedule: Schedule, request: RequestContext) -> bool:
    """Whether ``schedule`` exempts this call, whatever the state: ``decide``'s
    own scope rule (a listed purpose, an exempt session, a spared subagent)."""
    purpose = purpose_key(request.purpose)
    if purpose is not None and purpose in schedule.exempt_purposes:
        return True
    if request.session_id is not None and request.session_id in schedule.exempt_sessions:
        return True
    return request.subagent and not schedule.apply_to_subagents


def team_lets_exempt(team: TeamSide, request: RequestContext) -> bool:
    """Whether a member's own exemption of this call counts inside the team:
    the team lets members exempt, or the team's schedule exempts the call
    too. ``decide_member``'s rule, and what the Replies page reads to show a
    ticked exemption void (issue 39)."""
    return team.policy.members_may_exempt or scope_exempts(team.schedule, request)


def member_lift(
    team: TeamSide, member: Overrides, member_overtime_from: datetime | None
) -> datetime | None:
    """Until when the member's overtime lifts the team's night, as far as the
    policy lets it (from ``member_overtime_from``, when it was taken), or
    ``None``: it never does. Before that instant ``team_overrides`` reads
    the lift, from it on not."""
    allowed = team.policy.member_overtime
    if allowed <= timedelta(0) or member.overtime_until is None or member_overtime_from is None:
        return None
    return min(member.overtime_until, member_overtime_from + allowed)


def team_overrides(
    team: TeamSide,
    member: Overrides,
    *,
    now: datetime,
    member_overtime_from: datetime | None,
) -> Overrides:
    """The overrides the team's schedule is read with for one member: the
    team's own overtime; the member's overtime only as far as the policy
    lets it lift the team (from ``member_overtime_from``, when it was taken);
    the member's time machine (never its force-off: the member side has it)."""
    until = team.overtime_until
    lift = member_lift(team, member, member_overtime_from)
    if lift is not None and lift > now and (until is None or lift > until):
        until = lift
    return Overrides(
        overtime_until=until,
        forced_off_until=None,
        debug_at=member.debug_at,
        debug_until=member.debug_until,
    )


def decide_member(
    now: datetime,
    schedule: Schedule,
    request: RequestContext,
    overrides: Overrides,
    team: TeamSide | None,
    *,
    member_overtime_from: datetime | None = None,
) -> Verdict:
    """A member's verdict: ``decide`` on their own schedule combined with the
    team's (``combine``); exactly ``decide``'s verdict without a team."""
    if team is None:
        return decide(now, schedule, request, overrides)
    own, theirs = member_sides(
        now, schedule, request, overrides, team, member_overtime_from=member_overtime_from
    )
    return member_verdict(own, theirs, schedule, request, team)


def member_verdict(
    own: Verdict, theirs: Verdict, schedule: Schedule, request: RequestContext, team: TeamSide
) -> Verdict:
    """``decide_member``'s verdict from its two sides (``member_sides``): the
    two combined, exempt where both sides allow it."""
    combined = combine(own, theirs)
    if combined.state is not State.ON_DUTY and (
        scope_exempts(schedule, request) and team_lets_exempt(team, request)
    ):
        return _exempted(combined)
    return combined


def member_sides(
    now: datetime,
    schedule: Schedule,
    request: RequestContext,
    overrides: Overrides,
    team: TeamSide,
    *,
    member_overtime_from: datetime | None = None,
) -> tuple[Verdict, Verdict]:
    """The two halves ``decide_member`` combines: the member's own verdict and
    the team's, each for the call without its scope (exemptions are settled
    on the combination)."""
    plain = RequestContext(max_tokens=request.max_tokens)
    own = decide(now, schedule, plain, overrides)
    theirs = decide(
        now,
        team.schedule,
        plain,
        team_overrides(team, overrides, now=now, member_overtime_from=member_overtime_from),
    )
    return own, theirs


def _tighter(a: Verdict, b: Verdict) -> Verdict:
    """The side whose action is harsher; on a tie, the harsher state, then the
    smaller budget, then ``a``."""
    rank_a, rank_b = ACTION_SEVERITY[a.action], ACTION_SEVERITY[b.action]
    if rank_a != rank_b:
        return a if rank_a > rank_b else b
    if SEVERITY[a.state] != SEVERITY[b.state]:
        return a if SEVERITY[a.state] > SEVERITY[b.state] else b
    if b.max_tokens is not None and (a.max_tokens is None or b.max_tokens < a.max_tokens):
        return b
    return a


def _smaller(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _harsher_state(a: State, b: State) -> State:
    return a if SEVERITY[a] >= SEVERITY[b] else b


def _would(a: Verdict, b: Verdict) -> dict[str, Any] | None:
    """A dry run's "would": the harsher of what the two sides would have done."""
    if a.would is None:
        return b.would
    if b.would is None:
        return a.would
    rank_a = ACTION_SEVERITY[Action(a.would["action"])]
    rank_b = ACTION_SEVERITY[Action(b.would["action"])]
    return a.would if rank_a >= rank_b else b.would


#: What begins the team's side of a member's reason (``… · team: lights out
#: until 07:00``): pages find it by this mark to say it in their language.
TEAM_MARK = "team: "
#: What a display puts before the member's own side when the team's leads
#: (the Activity's "Why", ``selectors.ledger_page``): the engine writes the
#: member's side first, unmarked.
OWN_MARK = "yours: "


def combine(own: Verdict, team: Verdict) -> Verdict:
    """Two verdicts of one call at one instant as one, harsher wins.

    Commutative in everything a gateway acts on (state, action, budget,
    tools, ``valid_until``, peak); the texts come from the side that acts
    hardest (``own`` on a tie), and ``reason`` tells both, the member's first.
    """
    acting = _tighter(own, team)
    action = acting.action
    state = _harsher_state(own.state, team.state)
    override, override_until = _override_told(own, team)
    progress, budget = _winding_told(state, acting, own, team)
    # A dry run where a side only watches and nobody acts: a side that acts
    # overrides the other's (its "would" is not what happened: its reason says
    # so); a team whose curfew is off, or that passes, leaves the member's.
    acted = action is not Action.PASS
    dry_run = (own.dry_run or team.dry_run) and not acted
    return new_verdict(
        state=state,
        schedule_state=_harsher_state(own.schedule_state, team.schedule_state),
        action=action,
        reply=acting.reply if action is Action.SHORT_CIRCUIT else None,
        max_tokens=_max_tokens(action, own, team),
        persona=acting.persona if action is Action.CLAMP else None,
        tools=_tools(action, own, team),
        reasoning_effort=acting.reasoning_effort if action is Action.CLAMP else None,
        progress=progress,
        peak=own.peak or team.peak,
        reason=_reasons(
            _acted_on(own.reason, BY_TEAM) if acted and own.dry_run else own.reason,
            _acted_on(team.reason, BY_MEMBER) if acted and team.dry_run else team.reason,
        ),
        exempt=own.exempt and team.exempt,
        dry_run=dry_run,
        valid_until=min(own.valid_until, team.valid_until),
        at=own.at,
        budget=budget,
        override=override,
        override_until=override_until,
        debug_at=own.debug_at,
        debug_until=own.debug_until,
        would=_would(own, team) if dry_run else None,
    )


#: A side's dry run part where the other side acts (``combine``): "would"
#: is not what happened, so the member's reason says who acted instead. The
#: member's own "only watch" overridden by the team's schedule:
BY_TEAM = "dry run overridden: the team's schedule acts"
#: The team's dry run overridden by the member's own schedule (its part
#: marked ``team: `` as the team's parts are):
BY_MEMBER = "dry run overridden: the member's own schedule acts"


def _acted_on(reason: str, said: str) -> str:
    """``reason`` with its dry run part (``dry run: would …``) replaced by
    ``said``: the call was acted on by the other side."""
    return " · ".join(
        said if part.startswith(DRY_RUN_MARK) else part for part in reason.split(" · ")
    )


def dry_run_holds(team: TeamSide) -> bool:
    """Whether a member's own dry run ("Only watch") holds back everything in
    ``team``: the team's side never acts (its curfew off, or only watching
    too), so ``combine`` never overrides it."""
    return not team.schedule.enabled or team.schedule.dry_run


def _max_tokens(action: Action, own: Verdict, team: Verdict) -> int | None:
    """The smaller budget of the sides that act as ``action`` does (a clamp's,
    or a short-circuit's safety cap); a side passing has none."""
    if action is Action.PASS:
        return None
    max_tokens = None
    for side in (own, team):
        if side.action is action:
            max_tokens = _smaller(max_tokens, side.max_tokens)
    return max_tokens


def _tools(action: Action, own: Verdict, team: Verdict) -> Literal["allow", "deny"]:
    """Tools are denied if either side denies them and the call is acted on."""
    if action is not Action.PASS and "deny" in (own.tools, team.tools):
        return "deny"
    return "allow"


def _override_told(
    own: Verdict, team: Verdict
) -> tuple[Literal["overtime", "off"] | None, datetime | None]:
    """The override the combined verdict tells: a forced off is the member's
    own and stands; otherwise the overtime that lasts longer (the member's
    on a tie)."""
    if own.override == "off" or team.override is None or team.override_until is None:
        return own.override, own.override_until
    if own.override_until is None or team.override_until > own.override_until:
        return team.override, team.override_until
    return own.override, own.override_until


def _winding_told(
    state: State, acting: Verdict, own: Verdict, team: Verdict
) -> tuple[float | None, int | None]:
    """``(progress, budget)`` of a combined winding: the progress of the acting
    side if it winds, else of the first side that does; the smaller budget of
    the winding sides. ``(None, None)`` when the combination is not winding."""
    if state is not State.WINDING:
        return None, None
    winding = [side for side in (acting, own, team) if side.state is State.WINDING]
    progress = winding[0].progress if winding else None
    budget = min(
        (s.budget for s in (own, team) if s.state is State.WINDING and s.budget is not None),
        default=None,
    )
    return progress, budget


def _reasons(own: str, team: str) -> str:
    """The member's reason, then the team's side, each of its parts marked
    (``team: lights out until 10:00 · team: budget 560``): a display that
    puts the part telling the state first (the Activity's "Why") moves a part,
    and each keeps saying whose it is. The team's leading moment (the
    member's says it) and the time machine's part, which both sides share and
    the member's reason already says ("pretending it is ..."), are left out:
    said once."""
    said = set(own.split(" · "))
    _, sep, rest = team.partition(" · ")
    parts = [
        part
        for part in (rest if sep else team).split(" · ")
        if part and not (part in said and part.startswith(PRETEND_MARK))
    ]
    return " · ".join([own, *(f"{TEAM_MARK}{part}" for part in parts)])


def _exempted(verdict: Verdict) -> Verdict:
    """``verdict`` as an exempt call's: its state, acted on by nobody (a rare
    call, so the plain dataclass copy rather than ``new_verdict``)."""
    return replace(
        verdict,
        action=Action.PASS,
        reply=None,
        max_tokens=None,
        persona=None,
        tools="allow",
        reasoning_effort=None,
        reason=f"{verdict.reason} · exempt (team and member)",
        exempt=True,
        would=None,
    )
