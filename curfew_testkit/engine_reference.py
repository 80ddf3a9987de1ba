"""The engine's ``decide`` and ``segments`` as they were before the per-date
plans of integer wall microseconds (main at 10d5e5d, issue 13, plus the pretend
mode's end from abb019b): datetimes for every night and peak window, compared
as naive wall readings.

Kept verbatim as the oracle the fast path must equal on every instant
(tests/engine/test_engine_fast_path.py) and as the baseline beside it in
bench/engine_speed.py. Only the engine and the standard library: the engine
suite runs it without Django.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from curfew_core.engine.clock import (
    format_wall,
    next_transition,
    to_wall,
    wall_to_instant,
)
from curfew_core.engine.curve import budget_at, next_budget_change
from curfew_core.engine.days import day_kind, night_window
from curfew_core.engine.decide import HORIZON, join_sentences
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import RequestContext, Schedule, purpose_key
from curfew_core.engine.verdict import (
    SEVERITY,
    Action,
    Segment,
    State,
    Verdict,
    progress_percent,
)

_DAY = timedelta(days=1)
_TICK = timedelta(microseconds=1)
_DEFAULT_REQUEST = RequestContext()
_NO_OVERRIDES = Overrides()


@dataclass(frozen=True, slots=True)
class _Winding:
    start: datetime
    end: datetime
    progress: float
    budget: int
    tier: int
    #: Wall time of the next budget or persona-tier step inside this window.
    next_step: datetime | None


@dataclass(frozen=True, slots=True)
class _Reading:
    """What the schedule alone says at one wall-clock moment."""

    state: State
    peak: bool
    winding: _Winding | None
    wake_up: datetime | None
    valley: str | None
    #: The workday (``"make-up workday"``) that cancels today's valley, if any.
    workday: str | None
    #: Next wall time at which the schedule state or the peak flag may change.
    next_edge: datetime | None


def _midnight(wall: datetime) -> datetime:
    return wall.replace(hour=0, minute=0, second=0, microsecond=0)


def _winding(schedule: Schedule, start: datetime, end: datetime, wall: datetime) -> _Winding:
    length = (end - start).total_seconds()
    progress = (wall - start).total_seconds() / length
    points = schedule.fractions
    tiers = max(len(schedule.tier_texts), 1)
    tier = min(int(progress * tiers), tiers - 1)
    steps = [start + timedelta(seconds=(tier + 1) / tiers * length)] if tier + 1 < tiers else []
    if points:
        budget = budget_at(points, schedule.curve, progress)
        change = next_budget_change(points, schedule.curve, progress)
        if change is not None:
            step = max(start + timedelta(seconds=change * length), wall + _TICK)
            # ``change`` is where the raw curve meets a half-token line, rounded
            # to the microsecond; going down, x.5 still rounds up, so the budget
            # only changes just after it. Settle on the first microsecond whose
            # budget really differs: a boundary that is early by a hair would
            # otherwise be answered by ``wall_to_instant``'s one-second fallback.
            for _ in range(3):
                if step >= end:
                    break
                ahead = (step - start).total_seconds() / length
                if budget_at(points, schedule.curve, ahead) != budget:
                    break
                step += _TICK
            steps.append(step)
    else:
        budget = 0
    return _Winding(start, end, progress, budget, tier, min(steps) if steps else None)


@dataclass(frozen=True, slots=True)
class _Frame:
    """What the schedule says about one local date, apart from the instant.

    Built once per (schedule, date) and reused by every reading that falls on
    that date: the four nights and three days of peak windows are the same
    datetimes for every instant of the day, and holiday lookups are not free.
    """

    #: ``(start, lights_out, wake_up)`` of the nights of the two evenings
    #: before the date, the date's own and the next one's.
    nights: tuple[tuple[datetime, datetime, datetime], ...]
    #: Non-empty peak windows of the day before, the date and the day after
    #: (valley days left out), or none with the peak shift off.
    peaks: tuple[tuple[datetime, datetime], ...]
    #: Every night and peak edge, sorted: the next edge is one bisection away.
    edges: tuple[datetime, ...]
    valley: str | None
    workday: str | None


def _build_frame(schedule: Schedule, today: datetime) -> _Frame:
    nights = []
    # A night starts at most a day after its evening and spans at most 24h, so
    # the nights of the two evenings before today, today's and tomorrow's are
    # every night that can cover a moment of today or start next.
    for offset in (-2, -1, 0, 1):
        night = night_window(schedule, (today + offset * _DAY).date())
        nights.append((night.start, night.lights_out, night.wake_up))
    peaks = []
    valley_today, workday_today = (
        day_kind(schedule, today.date()) if schedule.peak_shift else (None, None)
    )
    if schedule.peak_shift:
        for offset in (-1, 0, 1):
            day = today + offset * _DAY
            valley = valley_today if offset == 0 else day_kind(schedule, day.date())[0]
            if valley is not None:
                continue
            for window_start, window_end in schedule.peak_windows:
                start = day + timedelta(minutes=window_start)
                end = start + timedelta(minutes=(window_end - window_start) % (24 * 60))
                if start != end:
                    peaks.append((start, end))
    edges = sorted([edge for night in nights for edge in night] + [e for p in peaks for e in p])
    return _Frame(tuple(nights), tuple(peaks), tuple(edges), valley_today, workday_today)


#: Frames per (schedule, local date). Keyed by the identity of the built
#: ``Schedule`` (frozen; a new one per saved version); the entry keeps the
#: object, so an ``id`` is never reused under it. Bounded: cleared when full.
_FRAME_MEMO_SIZE = 4096
_frames: dict[tuple[int, date], tuple[Schedule, _Frame]] = {}


def _frame(schedule: Schedule, wall: datetime) -> _Frame:
    key = (id(schedule), wall.date())
    hit = _frames.get(key)
    if hit is not None and hit[0] is schedule:
        return hit[1]
    frame = _build_frame(schedule, _midnight(wall))
    if len(_frames) >= _FRAME_MEMO_SIZE:
        _frames.clear()
    _frames[key] = (schedule, frame)
    return frame


def _read(schedule: Schedule, wall: datetime) -> _Reading:
    frame = _frame(schedule, wall)
    state = State.ON_DUTY
    winding: _Winding | None = None
    wake_up: datetime | None = None

    for start, lights_out, wake in frame.nights:
        if start <= wall < lights_out:
            candidate = _winding(schedule, start, lights_out, wall)
            # Overlapping windows (odd per-weekday times): the tighter budget wins,
            # and a step of either window may change which one that is.
            if winding is not None:
                steps = [s for s in (winding.next_step, candidate.next_step) if s is not None]
                tighter = candidate if candidate.budget < winding.budget else winding
                winding = replace(tighter, next_step=min(steps, default=None))
            else:
                winding = candidate
            if SEVERITY[State.WINDING] > SEVERITY[state]:
                state = State.WINDING
        elif lights_out <= wall < wake:
            state = State.LIGHTS_OUT
            wake_up = wake if wake_up is None else max(wake_up, wake)

    peak = any(start <= wall < end for start, end in frame.peaks)
    valley_today, workday_today = frame.valley, frame.workday
    after = bisect_right(frame.edges, wall)
    next_edge = frame.edges[after] if after < len(frame.edges) else None
    if peak and SEVERITY[State.OFF_DUTY] > SEVERITY[state]:
        state = State.OFF_DUTY

    return _Reading(
        state=state,
        peak=peak,
        winding=winding if state is State.WINDING else None,
        wake_up=wake_up,
        valley=valley_today,
        workday=workday_today,
        next_edge=next_edge,
    )


def _describe(reading: _Reading) -> str:
    if reading.state is State.OFF_DUTY:
        # A Saturday at peak needs its why: it is a make-up workday.
        return "peak hours" if reading.workday is None else f"peak hours ({reading.workday})"
    if reading.state is State.LIGHTS_OUT:
        if reading.wake_up is None:
            return "lights out"
        return f"lights out until {format_wall(reading.wake_up.hour * 60 + reading.wake_up.minute)}"
    if reading.state is State.WINDING and reading.winding is not None:
        pct = progress_percent(reading.winding.progress)
        return f"winding {pct}% · budget {reading.winding.budget}"
    if reading.valley is not None:
        return f"on duty · valley day ({reading.valley})"
    if reading.workday is not None:
        return f"on duty · {reading.workday}"
    return "on duty"


#: Weekdays as a reason names them, Monday first; never the locale's ``%a``.
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _local_hhmm(instant: datetime, schedule: Schedule) -> str:
    return to_wall(instant, schedule.timezone).strftime("%H:%M")


def reference_decide(
    now: datetime,
    schedule: Schedule,
    request: RequestContext = _DEFAULT_REQUEST,
    overrides: Overrides = _NO_OVERRIDES,
) -> Verdict:
    """Decide what the gateway does with one model call at the real instant ``now``.

    Pure: ``now`` is the only clock. ``overrides.debug_at`` (Pretend)
    replaces the moment the schedule is read at; overtime and force-off are
    measured against the real ``now``.
    """
    if now.tzinfo is None:
        raise ValueError("decide() needs an aware instant; naive datetimes are ambiguous")
    caller_tz = now.tzinfo
    debug_at = overrides.debug_at_now(now)
    at = debug_at or now
    # Work on UTC instants: aware datetimes sharing one tzinfo (``now`` written
    # in the schedule's own zone) compare and subtract as wall readings, which
    # ignores ``fold`` and every DST jump between them.
    now = now.astimezone(UTC)
    tz = schedule.timezone
    wall = to_wall(at, tz)
    reading = _read(schedule, wall)
    reasons = [f"{wall:%Y-%m-%d %H:%M}"]

    # -- valid_until: the first moment any decision field may change ----------
    limits: list[datetime] = [now + HORIZON]
    if debug_at is not None and overrides.debug_until is not None:
        limits.append(overrides.debug_until)
    if debug_at is None:
        steps = [reading.next_edge]
        if reading.winding is not None:
            steps.append(reading.winding.next_step)
        next_wall = min((s for s in steps if s is not None), default=None)
        if next_wall is not None:
            boundary = wall_to_instant(next_wall, tz, after=now)
            transition = next_transition(now, boundary, tz)
            limits.append(transition or boundary)
        else:
            transition = next_transition(now, now + HORIZON, tz)
            if transition is not None:
                limits.append(transition)

    # -- overrides: what will actually happen ---------------------------------
    state = reading.state
    override: Literal["overtime", "off"] | None = None
    override_until: datetime | None = None
    if overrides.forced_off_until is not None and overrides.forced_off_until > now:
        state, override, override_until = State.LIGHTS_OUT, "off", overrides.forced_off_until
        reasons.append(f"forced off until {_local_hhmm(override_until, schedule)}")
    elif overrides.overtime_until is not None and overrides.overtime_until > now:
        state, override, override_until = State.ON_DUTY, "overtime", overrides.overtime_until
        reasons.append(f"overtime until {_local_hhmm(override_until, schedule)}")
    if override_until is not None:
        limits.append(override_until)
    if debug_at is not None:
        # Both clocks said: the pretended moment, and the real end.
        pretended = f"pretending it is {_WEEKDAYS[wall.weekday()]} {wall:%H:%M}"
        if overrides.debug_until is None:
            reasons.append(pretended)
        else:
            end = _local_hhmm(overrides.debug_until, schedule)
            reasons.append(f"{pretended} until {end} real time")

    schedule_state = reading.state
    if not schedule.enabled:
        state = schedule_state = State.ON_DUTY
        override = override_until = None
        reasons = [reasons[0], "curfew disabled"]
    elif override is None or reading.state is not State.ON_DUTY:
        reasons.insert(1, _describe(reading))

    valid_until = min(limits).astimezone(caller_tz)
    winding = reading.winding if state is State.WINDING else None
    peak = reading.peak and schedule.enabled

    # -- scope: is this call acted on at all? ---------------------------------
    exempt = False
    if schedule.enabled and state is not State.ON_DUTY:
        purpose = purpose_key(request.purpose)
        if purpose is not None and purpose in schedule.exempt_purposes:
            exempt = True
            reasons.append(f"purpose {purpose!r} is exempt")
        elif request.session_id is not None and request.session_id in schedule.exempt_sessions:
            exempt = True
            reasons.append("exempt session")
        elif request.subagent and not schedule.apply_to_subagents:
            exempt = True
            reasons.append("subagents spared")
        elif request.purpose:
            # Said, though it changes nothing: a gateway sending an unlisted
            # purpose (a typo, a new helper) sees why its call was acted on.
            reasons.append(f"purpose {_cut(request.purpose)!r} is not exempt")

    action = Action.PASS
    reply: str | None = None
    max_tokens: int | None = None
    persona: str | None = None
    tools: Literal["allow", "deny"] = "allow"
    reasoning_effort: str | None = None
    if not exempt:
        if state is State.WINDING and winding is not None:
            action = Action.CLAMP
            max_tokens = _clamp(request.max_tokens, winding.budget)
            tier_text = schedule.tier_texts[winding.tier] if schedule.tier_texts else ""
            persona = join_sentences(schedule.tired_persona, tier_text) or None
            reasoning_effort = schedule.winding_reasoning_effort
        elif state in (State.OFF_DUTY, State.LIGHTS_OUT):
            action = Action.SHORT_CIRCUIT
            reply = (
                schedule.off_duty_reply if state is State.OFF_DUTY else schedule.lights_out_reply
            )
            if "{until}" in reply:
                text, switch = _reply_until(
                    schedule, wall, reading, override_until, now, debug_at is not None
                )
                reply = re.sub(r"\{until\}", lambda _: text, reply)
                if switch is not None:
                    valid_until = min(valid_until, switch.astimezone(caller_tz))
            if schedule.safety_max_tokens is not None:
                max_tokens = _clamp(request.max_tokens, schedule.safety_max_tokens)
            if schedule.deny_tools_when_off_duty:
                tools = "deny"

    would: dict[str, object] | None = None
    if schedule.dry_run and schedule.enabled:
        # A dry run decides and reports, and never acts.
        would = {
            "action": action.value,
            "reply": reply,
            "max_tokens": max_tokens,
            "persona": persona,
            "tools": tools,
            "reasoning_effort": reasoning_effort,
        }
        if action is not Action.PASS:
            reasons.append(f"dry run: would {action.value}")
        action, reply, max_tokens, persona, tools, reasoning_effort = (
            Action.PASS,
            None,
            None,
            None,
            "allow",
            None,
        )

    return Verdict(
        state=state,
        schedule_state=schedule_state,
        action=action,
        reply=reply,
        max_tokens=max_tokens,
        persona=persona,
        tools=tools,
        reasoning_effort=reasoning_effort,
        progress=winding.progress if winding is not None else None,
        peak=peak,
        reason=" · ".join(reasons),
        exempt=exempt,
        dry_run=schedule.dry_run and schedule.enabled,
        valid_until=valid_until,
        at=at,
        budget=winding.budget if winding is not None else None,
        override=override,
        override_until=override_until,
        debug_at=debug_at,
        debug_until=overrides.debug_until if debug_at is not None else None,
        would=would,
    )


def _reply_until(
    schedule: Schedule,
    wall: datetime,
    reading: _Reading,
    override_until: datetime | None,
    now: datetime,
    pretending: bool,
) -> tuple[str, datetime | None]:
    """``{until}`` (issue 24 item 4), worked out on datetimes, and the real
    instant it drops its date, if it shows one and the clock moves: when what
    stops this call ends. A forced off ends at a real instant; otherwise the
    wake-up, or the end of the peak hours, windows that touch or overlap read
    as one (followed for at most a week), on the clock the schedule is read at."""
    tz = schedule.timezone
    if override_until is not None:
        end = to_wall(override_until, tz)
        if override_until - now > timedelta(days=1):
            return f"{end:%Y-%m-%d %H:%M}", override_until - timedelta(days=1)
        return f"{end:%H:%M}", None
    if reading.state is State.LIGHTS_OUT and reading.wake_up is not None:
        end = reading.wake_up
    else:
        end = wall
        while end - wall <= timedelta(days=7):
            frame = _frame(schedule, end)
            holding = [stop for start, stop in frame.peaks if start <= end < stop]
            if not holding:
                break
            end = max(holding)
    if end - wall <= timedelta(days=1):
        return f"{end:%H:%M}", None
    switch = None
    if not pretending:
        boundary = wall_to_instant(end - timedelta(days=1), tz, after=now)
        switch = next_transition(now, boundary, tz) or boundary
    return f"{end:%Y-%m-%d %H:%M}", switch


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _clamp(current: int | None, budget: int) -> int:
    return budget if current is None else min(current, budget)


def reference_segments(start: datetime, end: datetime, schedule: Schedule) -> list[Segment]:
    """The schedule's states from ``start`` to ``end`` as contiguous segments.

    Walks state edges only (not every budget step), so a day is a handful of
    evaluations. Overrides are not applied: this is what the schedule says.
    """
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("segments() needs aware instants; naive datetimes are ambiguous")
    tz = schedule.timezone
    caller_tz = start.tzinfo
    # UTC instants, as in ``decide``: the caller may well pass local midnights.
    cursor, end = start.astimezone(UTC), end.astimezone(UTC)
    out: list[Segment] = []
    while cursor < end:
        wall = to_wall(cursor, tz)
        reading = _read(schedule, wall)
        state = reading.state if schedule.enabled else State.ON_DUTY
        peak = reading.peak and schedule.enabled
        if reading.next_edge is None:
            upto = end
        else:
            boundary = wall_to_instant(reading.next_edge, tz, after=cursor)
            upto = min(next_transition(cursor, boundary, tz) or boundary, end)
        if out and out[-1].state is state and out[-1].peak == peak:
            out[-1] = Segment(out[-1].start, upto, state, peak)
        else:
            out.append(Segment(cursor, upto, state, peak))
        cursor = upto
    return [
        Segment(
            part.start.astimezone(caller_tz), part.end.astimezone(caller_tz), part.state, part.peak
        )
        for part in out
    ]
