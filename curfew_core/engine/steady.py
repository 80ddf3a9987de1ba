"""How long a verdict stands: the later instants that decide it again.

A gateway asks many times a second, and between two instants of one local
minute that are on the same side of every edge, step and override end (the
verdict's ``valid_until``), the schedule reads the same: every field of the
verdict is the same but ``at``. ``steady_until`` says until when that holds
for a verdict ``decide`` gave, or ``None`` when it cannot vouch for any later
instant; ``verdict_at`` is that verdict at a later instant of the stretch.
The selectors keep each user's last verdict per request and answer from it
inside its stretch (``selectors/verdicts.py``); ``decide`` itself keeps
nothing, so its answer never depends on what it was asked before.

Not vouched for, because a later instant reads differently there:

- winding (the schedule's reading, even under an override): its progress
  moves with every microsecond, and the reason's percent with it;
- the time machine ("pretend it is ..."), set at all: it is read on its own
  clock, and its end changes what is read;
- a ``valid_until`` that is the 24-hour horizon (it moves with the instant)
  or within a second (the engine's "look again in a second" when an edge's
  wall time has already passed: measured from the instant);
- an instant not in UTC: ``valid_until`` is written in the instant's zone;
- a change of the zone's offset before the stretch ends (``decide`` already
  ends ``valid_until`` at one; looked for again because the stretch's minute
  is read on the offset at the instant).

The stretch ends at the next local minute, since the reason names it.

Pure, standard library only, like ``decide`` (``tests/engine/test_engine_steady.py``
checks its promise against ``decide`` itself, near offset changes too).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from curfew_core.engine.clock import next_transition
from curfew_core.engine.decide import HORIZON
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import Schedule
from curfew_core.engine.verdict import State, Verdict, new_verdict

_SECOND = timedelta(seconds=1)
_MINUTE_US = 60_000_000


def steady_until(
    verdict: Verdict, now: datetime, schedule: Schedule, overrides: Overrides
) -> datetime | None:
    """The instant (UTC) before which every later instant decides ``verdict``
    again but for ``at`` (``verdict_at``), or ``None``. ``verdict`` is
    ``decide(now, schedule, request, overrides)`` (the request is no matter:
    it is read the same at every instant)."""
    if now.tzinfo is not UTC or overrides.debug_at is not None:
        return None
    if verdict.schedule_state is State.WINDING or verdict.progress is not None:
        return None
    if verdict.debug_at is not None or verdict.at != now:
        return None
    until = verdict.valid_until
    if until.tzinfo is not UTC or until - now <= _SECOND or until >= now + HORIZON:
        return None
    local = now.astimezone(schedule.timezone)
    into = local.second * 1_000_000 + local.microsecond
    minute_ends = now + timedelta(microseconds=_MINUTE_US - into)
    if minute_ends < until:
        until = minute_ends
    if next_transition(now, until, schedule.timezone) is not None:
        return None
    return until


def verdict_at(verdict: Verdict, at: datetime) -> Verdict:
    """``verdict`` at the later instant ``at`` of its steady stretch: the same
    fields, ``at`` moved (and its dry run's ``would`` a copy of its own: a
    caller may change what it was given)."""
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
        verdict.progress,
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
