"""Verdicts and the status payload for one user at one instant."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings

from curfew_core.engine import (
    Overrides,
    RequestContext,
    Schedule,
    Verdict,
    decide,
    format_wall,
)
from curfew_core.engine import day_plan as engine_day_plan
from curfew_core.engine.clock import to_wall
from curfew_core.selectors.bundles import UserBundle, bundle_for


def verdict_for(
    *,
    user_id: int,
    now: datetime,
    request: RequestContext | None = None,
    at: datetime | None = None,
) -> tuple[Verdict, UserBundle]:
    """The verdict for one model call; ``at`` asks "what if it were then?".

    An explicit ``at`` is a what-if for that instant: it replaces both the real
    clock and the time machine, so overrides are judged as of ``at`` too.
    """
    bundle = bundle_for(user_id)
    overrides = bundle.overrides
    if at is not None:
        now = at
        overrides = Overrides(overrides.overtime_until, overrides.forced_off_until, None)
    return decide(now, bundle.schedule, request or RequestContext(), overrides), bundle


def verdict_payload(verdict: Verdict, *, now: datetime) -> dict[str, Any]:
    """The API's JSON for a verdict, with the advice on how long to cache it."""
    payload = verdict.as_dict()
    until = min(verdict.valid_until, now + timedelta(seconds=settings.CURFEW_VERDICT_MAX_AGE))
    payload["max_age"] = max(0, int((until - now).total_seconds()))
    return payload


#: Day plans per (built schedule, local date): a plan only changes with the
#: schedule, and every capsule of a user asks for the same one at each push.
#: Keyed by the identity of the built ``Schedule`` (a new one per saved
#: version); the entry keeps the object, so an ``id`` is never reused under it.
_PLAN_MEMO_SIZE = 4096
_plans: dict[tuple[int, date], tuple[Schedule, list[dict[str, Any]]]] = {}


def day_plan(bundle: UserBundle, at: datetime) -> list[dict[str, Any]]:
    """The schedule's segments for the local day containing ``at``."""
    tz = bundle.schedule.timezone
    wall = to_wall(at, tz)
    key = (id(bundle.schedule), wall.date())
    hit = _plans.get(key)
    if hit is not None and hit[0] is bundle.schedule:
        plan = hit[1]
    else:
        plan = [
            {
                "start": format_wall(seg.start),
                "end": format_wall(seg.end),
                "state": seg.state.value,
                "peak": seg.peak,
            }
            for seg in engine_day_plan(bundle.schedule, wall.date())
        ]
        if len(_plans) >= _PLAN_MEMO_SIZE:
            _plans.clear()
        _plans[key] = (bundle.schedule, plan)
    # Callers get their own lists: a payload may be mutated before it is sent.
    return [dict(segment) for segment in plan]


def state_payload(*, user_id: int, now: datetime) -> dict[str, Any]:
    """What a status display needs (``GET /api/v1/state`` and the capsule)."""
    verdict, bundle = verdict_for(user_id=user_id, now=now)
    overtime_left = None
    if verdict.override == "overtime" and verdict.override_until is not None:
        overtime_left = max(0, int((verdict.override_until - now).total_seconds()))
    return {
        "state": verdict.state.value,
        "schedule_state": verdict.schedule_state.value,
        "reason": verdict.reason,
        "progress": None if verdict.progress is None else round(verdict.progress, 4),
        "max_tokens": verdict.budget,
        "reply": verdict.reply,
        "peak": verdict.peak,
        "override": verdict.override,
        "override_until": None
        if verdict.override_until is None
        else verdict.override_until.isoformat(),
        "overtime_left": overtime_left,
        "forced": verdict.override == "off",
        "debug_at": None if verdict.debug_at is None else verdict.debug_at.isoformat(),
        "at": verdict.at.isoformat(),
        "valid_until": verdict.valid_until.isoformat(),
        "timezone": bundle.config["timezone"],
        "enabled": bundle.config["enabled"],
        "dry_run": verdict.dry_run,
        "day": day_plan(bundle, verdict.at),
    }
