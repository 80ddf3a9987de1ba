"""The decision: ``decide(now, schedule, request, overrides) -> Verdict``.

Two gates read the same wall-clock moment: the peak/valley shift and the
curfew curve. Harsher wins (``SEVERITY``). Overrides then say what will
actually happen, and the request's scope and the dry-run switch say whether
this call is acted on at all.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache, partial
from typing import Any, Literal

from curfew_core.engine.clock import MINUTES_PER_DAY, format_wall, next_transition, to_wall
from curfew_core.engine.curve import Points, budget_at, next_budget_change, segment_of
from curfew_core.engine.days import Night, day_kind, night_window
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import Curve, RequestContext, Schedule, purpose_key
from curfew_core.engine.verdict import (
    HELD_OFF,
    SEVERITY,
    Action,
    Segment,
    State,
    Verdict,
    new_verdict,
    progress_percent,
)

#: How far ahead ``valid_until`` looks when nothing is scheduled to change.
HORIZON = timedelta(hours=24)
_DAY = timedelta(days=1)
_TICK = timedelta(microseconds=1)
_DEFAULT_REQUEST = RequestContext()
_NO_OVERRIDES = Overrides()


def _closes_without_space(char: str) -> bool:
    """Chinese and Japanese text sets no space after a sentence (or a word):
    their ideographs, kana and full-width punctuation (。，！？、 and the
    full-width forms). Hangul is left out: Korean does put spaces between words."""
    code = ord(char)
    return (
        0x3000 <= code <= 0x30FF  # CJK punctuation, hiragana, katakana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0xFF00 <= code <= 0xFF60  # full-width forms (，！？：；)
        or 0x20000 <= code <= 0x3FFFF  # CJK extensions B and later
    )


def join_sentences(*parts: str) -> str:
    """The non-empty parts as one text: a space after Latin text ("sleepy. Be
    brief", also before Chinese: "tired. 正常回答"), none after a Chinese
    sentence end ("打断。正常回答"), where a space reads as a stray gap."""
    text = ""
    for part in parts:
        if not part:
            continue
        if (
            text
            and not text[-1].isspace()
            and not part[0].isspace()
            and not _closes_without_space(text[-1])
        ):
            text += " "
        text += part
    return text


# -- what a local date says, apart from the instant -------------------------------
#
# Everything below compares wall readings as whole microseconds (``_wall_us``):
# integers order exactly as the naive wall datetimes they stand for, so a
# reading is a few integer comparisons, and nothing that holds for a whole date
# (its nights, peak windows, day kind, texts) is built again per call.

_US = 1_000_000
_MINUTE_US = 60 * _US
_DAY_US = 24 * 60 * _MINUTE_US
_SECOND = timedelta(seconds=1)
#: ``format_wall`` of every minute of a day, looked up instead of formatted.
_HHMM = tuple(format_wall(minute) for minute in range(MINUTES_PER_DAY))

#: ``(progress, budget, tier, next_step)`` of a winding window at one moment;
#: ``next_step`` is the wall reading (``_wall_us``) of its next budget or
#: persona-tier step inside the window.
_Wind = tuple[float, int, int, int | None]
#: A wall reading's real instants (UTC, earliest first; both folds, so the same
#: instant twice away from a DST change), each with the zone's offset there.
_Readings = tuple[tuple[datetime, timedelta | None], ...]


def _wall_us(wall: datetime) -> int:
    """A wall reading (its own fields; ``tzinfo`` is not looked at) as whole
    microseconds since the midnight that starts ordinal day 0."""
    return (
        wall.toordinal() * 86_400 + wall.hour * 3_600 + wall.minute * 60 + wall.second
    ) * _US + wall.microsecond


class _Night:
    """One night (``night_window``'s) as wall microseconds, with the steps of
    its persona tiers, which do not depend on the instant either."""

    __slots__ = ("last_step", "length", "lights_out", "start", "tier_steps", "wake_up")

    def __init__(self, night: Night, tiers: int) -> None:
        self.start = _wall_us(night.start)
        self.lights_out = _wall_us(night.lights_out)
        self.wake_up = _wall_us(night.wake_up)
        #: Seconds, as ``timedelta.total_seconds`` gives them (exactly ``µs / 10**6``).
        self.length = (night.lights_out - night.start).total_seconds()
        #: Where tier ``k`` ends (``k + 1`` starts); the last tier ends at lights-out.
        self.tier_steps = tuple(
            _wall_us(night.start + timedelta(seconds=(tier + 1) / tiers * self.length))
            for tier in range(tiers - 1)
        )
        #: The last budget step worked out in this window (``_budget_step``).
        self.last_step: tuple[tuple[bool, int, int], float, int, int] | None = None


class _Day:
    """What the schedule says about one local date, apart from the instant.

    Built once per (schedule, date) and reused by every reading that falls on
    that date: the four nights and three days of peak windows are the same for
    every instant of the day, and holiday lookups are not free.
    """

    __slots__ = (
        "date_text",
        "edges",
        "nights",
        "peak_ends",
        "peaks",
        "personas",
        "readings",
        "slots",
        "templated",
        "tiers",
        "valley",
        "workday",
    )

    def __init__(self, schedule: Schedule, today: datetime) -> None:
        self.tiers = max(len(schedule.tier_texts), 1)
        # A night starts at most a day after its evening and spans at most 24h,
        # so the nights of the two evenings before today, today's and
        # tomorrow's are every night that can cover a moment of today or start next.
        self.nights = tuple(
            _Night(night_window(schedule, (today + offset * _DAY).date()), self.tiers)
            for offset in (-2, -1, 0, 1)
        )
        self.valley, self.workday = (
            day_kind(schedule, today.date()) if schedule.peak_shift else (None, None)
        )
        #: Non-empty peak windows of the day before, the date and the day after
        #: (valley days left out), or none with the peak shift off.
        self.peaks = _peaks_around(schedule, today, self.valley) if schedule.peak_shift else ()
        #: Every night and peak edge, sorted: the next edge is one bisection away.
        self.edges = tuple(
            sorted(
                [edge for n in self.nights for edge in (n.start, n.lights_out, n.wake_up)]
                + [edge for peak in self.peaks for edge in peak]
            )
        )
        #: What the schedule says between two edges, for every wall there:
        #: ``slots[i]`` holds on ``[edges[i - 1], edges[i])``, where
        #: ``i = bisect_right(edges, wall)``. Every window starts and ends on an
        #: edge, so the edge that opens a stretch reads as all of it does.
        self.slots = tuple(
            _slot(self.nights, self.peaks, wall) for wall in (self.edges[0] - 1, *self.edges)
        )
        self.date_text = f"{today:%Y-%m-%d}"
        texts = schedule.tier_texts or ("",)
        #: The persona of each tier, joined once.
        self.personas = tuple(join_sentences(schedule.tired_persona, t) or None for t in texts)
        #: ``_readings`` of a wall of this day in the schedule's zone: its edges
        #: and the steps of a winding night as it goes, worked out once each.
        #: Bounded, least recently used (issue 40): a night's steps may outnumber
        #: ``_INSTANTS_PER_DAY``, and the edges stay while the steps pass.
        self.readings: Callable[[int], _Readings] = lru_cache(maxsize=_INSTANTS_PER_DAY)(
            partial(_readings, schedule.timezone)
        )
        #: The states whose reply holds ``{until}`` (as ``reply_for`` picks it):
        #: only there does a short-circuit work out its end (the seed's "。"
        #: never does), and only there may its text change the verdict's expiry.
        self.templated = _templated(schedule)
        #: ``_peak_end`` per slot index, filled as replies ask: every wall of a
        #: slot sits in the same peak windows, so the chain ends at one place.
        self.peak_ends: dict[int, int] = {}


def _peaks_around(
    schedule: Schedule, today: datetime, valley: str | None
) -> tuple[tuple[int, int], ...]:
    """The non-empty peak windows (wall microseconds, start and end) of the
    day before ``today``, ``today`` and the day after, valley days left out;
    ``valley`` is ``today``'s own (``day_kind``), already worked out."""
    peaks: list[tuple[int, int]] = []
    for offset in (-1, 0, 1):
        day = today + offset * _DAY
        day_valley = valley if offset == 0 else day_kind(schedule, day.date())[0]
        if day_valley is not None:
            continue  # no peak hours on a valley day
        for window_start, window_end in schedule.peak_windows:
            start = day + timedelta(minutes=window_start)
            end = start + timedelta(minutes=(window_end - window_start) % (24 * 60))
            if start != end:
                peaks.append((_wall_us(start), _wall_us(end)))
    return tuple(peaks)


def _templated(schedule: Schedule) -> frozenset[State]:
    """The states whose reply holds ``{until}`` (as ``reply_for`` picks it)."""
    return frozenset(state for state in HELD_OFF if "{until}" in (reply_for(state, schedule) or ""))


#: ``(state, peak, wake_up, winding nights)``: the reading of a stretch between
#: two edges (``_Day.slots``), its winding windows still to be read at the moment.
_Slot = tuple[State, bool, int | None, tuple[_Night, ...]]


def _slot(nights: tuple[_Night, ...], peaks: tuple[tuple[int, int], ...], wall: int) -> _Slot:
    state = State.ON_DUTY
    wake_up: int | None = None
    winding: list[_Night] = []
    for night in nights:
        if night.start <= wall < night.lights_out:
            winding.append(night)
            if SEVERITY[State.WINDING] > SEVERITY[state]:
                state = State.WINDING
        elif night.lights_out <= wall < night.wake_up:
            state = State.LIGHTS_OUT
            wake_up = night.wake_up if wake_up is None else max(wake_up, night.wake_up)
    peak = any(start <= wall < end for start, end in peaks)
    if peak and SEVERITY[State.OFF_DUTY] > SEVERITY[state]:
        state = State.OFF_DUTY
    return state, peak, wake_up, tuple(winding) if state is State.WINDING else ()


#: Days per (schedule, local date), bounded, least recently used (issue 40;
#: the standard library's ``lru_cache``: the engine imports nothing else).
#: Keyed by the identity of the built ``Schedule`` (frozen; a new one per saved
#: version; unhashable, its ``weekdays`` a mapping), each a cell that ``_day``
#: fills with the schedule and its day: the cell keeps the object, so an
#: ``id`` is never reused under it while it stands.
_FRAME_MEMO_SIZE = 4096
#: Instants kept per day: its edges, and the steps of a winding night as it goes.
_INSTANTS_PER_DAY = 64


@lru_cache(maxsize=_FRAME_MEMO_SIZE)
def _frames(schedule_id: int, ordinal: int) -> list[Any]:
    """The cell of (schedule, day) for a schedule's ``id`` and a date: empty
    until ``_day`` fills it."""
    return []


def _day(schedule: Schedule, ordinal: int) -> _Day:
    cell = _frames(id(schedule), ordinal)
    if cell and cell[0] is schedule:
        day: _Day = cell[1]
        return day
    day = _Day(schedule, datetime.fromordinal(ordinal))
    cell[:] = (schedule, day)
    return day


def _readings(tz: tzinfo, wall: int) -> _Readings:
    """The real instants at which the clock reads ``wall`` (``wall_to_instant``'s
    candidates), each with the zone's offset there (``_Day.readings`` keeps them)."""
    naive = datetime.fromordinal(wall // _DAY_US) + timedelta(microseconds=wall % _DAY_US)
    instants = sorted(naive.replace(tzinfo=tz, fold=fold).astimezone(UTC) for fold in (0, 1))
    return tuple((instant, instant.astimezone(tz).utcoffset()) for instant in instants)


def _until(start: datetime, before: timedelta | None, readings: _Readings, tz: tzinfo) -> datetime:
    """``next_transition(start, boundary, tz) or boundary`` for the boundary
    ``wall_to_instant`` picks among ``readings`` after ``start``, where
    ``before`` is the zone's offset at ``start``.

    An offset that is the same at both ends is ``next_transition``'s own
    "no change" answer, read off the cache instead of converting again.
    """
    for boundary, offset in readings:
        if boundary > start:
            if offset is not None and offset == before:
                return boundary
            return next_transition(start, boundary, tz) or boundary
    # Both readings lie behind us (a wall time in a repeated hour already
    # passed twice); the boundary is gone, so look a second ahead.
    boundary = start + _SECOND
    return next_transition(start, boundary, tz) or boundary


def _budget_step(
    night: _Night,
    points: Points,
    curve: Curve,
    progress: float,
    budget: int,
    wall: int,
    segment: int,
) -> int | None:
    """The wall reading of the next budget step inside ``night`` (or ``None``).

    ``next_budget_change`` depends on the moment only through the budget, the
    curve's segment and which side of the first anchor it is, except when the
    moment already sits on the crossing; so the step found for one moment
    stands for every later moment of the same plateau before it, and the last
    one is kept. ``segment``: ``segment_of(points, progress)``.
    """
    if len(points) == 1 or progress >= points[-1][0]:
        return None  # next_budget_change's "no further change"
    key = (progress < points[0][0], segment, budget)
    memo = night.last_step
    if memo is not None and memo[0] == key and memo[1] > progress and memo[2] > wall:
        return memo[3]
    change = next_budget_change(points, curve, progress)
    if change is None:  # pragma: no cover - ruled out above
        return None
    base = night.start + timedelta(seconds=change * night.length) // _TICK
    step = max(base, wall + 1)
    # ``change`` is where the raw curve meets a half-token line, rounded to the
    # microsecond; going down, x.5 still rounds up, so the budget only changes
    # just after it. Settle on the first microsecond whose budget really
    # differs: a boundary that is early by a hair would otherwise be answered
    # by ``wall_to_instant``'s one-second fallback.
    for _ in range(3):
        if step >= night.lights_out:
            break
        ahead = (step - night.start) / _US / night.length
        if budget_at(points, curve, ahead) != budget:
            break
        step += 1
    if base > wall and change != math.nextafter(progress, math.inf):
        night.last_step = (key, change, base, step)
    return step


def _winding(schedule: Schedule, day: _Day, night: _Night, wall: int) -> _Wind:
    # ``(wall - start).total_seconds() / length``: the same float.
    progress = (wall - night.start) / _US / night.length
    tiers = day.tiers
    tier = min(int(progress * tiers), tiers - 1)
    next_step = night.tier_steps[tier] if tier + 1 < tiers else None
    points = schedule.fractions
    if not points:
        return progress, 0, tier, next_step
    # The curve's segment, found once for the budget and its next step.
    segment = segment_of(points, progress)
    budget = budget_at(points, schedule.curve, progress, segment)
    step = _budget_step(night, points, schedule.curve, progress, budget, wall, segment)
    if step is not None and (next_step is None or step < next_step):
        next_step = step
    return progress, budget, tier, next_step


def winding_clock(
    now: datetime, schedule: Schedule, progress: float
) -> tuple[int, int, float] | None:
    """How ``decide`` works out a winding ``progress`` at ``now`` (UTC, no time
    machine): ``(wall, start, length)``, the wall reading of ``now`` and the
    start and length of the one window of that reading whose progress,
    ``(wall - start) / 10**6 / length``, is ``progress``; ``None`` when not
    exactly one gives it. A later wall reading of the same window gives the
    progress there by the very same arithmetic (``engine.steady``)."""
    wall = _wall_us(now.astimezone(schedule.timezone))
    day = _day(schedule, wall // _DAY_US)
    windows = day.slots[bisect_right(day.edges, wall)][3]
    found = [night for night in windows if (wall - night.start) / _US / night.length == progress]
    if len(found) != 1:
        return None
    return wall, found[0].start, found[0].length


def _read(
    schedule: Schedule, day: _Day, wall: int, winding_too: bool
) -> tuple[State, bool, _Wind | None, int | None, int]:
    """What the schedule alone says at one wall reading: its state, the peak
    flag, the winding window (only while winding, and only if asked), the
    wake-up of a lights-out and the index of the next edge in ``day.edges``."""
    after = bisect_right(day.edges, wall)
    state, peak, wake_up, windows = day.slots[after]
    winding: _Wind | None = None
    if winding_too:
        for night in windows:
            candidate = _winding(schedule, day, night, wall)
            # Overlapping windows (odd per-weekday times): the tighter budget
            # wins, and a step of either window may change which one that is.
            if winding is not None:
                steps = [s for s in (winding[3], candidate[3]) if s is not None]
                tighter = candidate if candidate[1] < winding[1] else winding
                winding = (*tighter[:3], min(steps, default=None))
            else:
                winding = candidate
    return state, peak, winding, wake_up, after


def _describe(state: State, winding: _Wind | None, wake_up: int | None, day: _Day) -> str:
    if state is State.OFF_DUTY:
        # A Saturday at peak needs its why: it is a make-up workday.
        return "peak hours" if day.workday is None else f"peak hours ({day.workday})"
    if state is State.LIGHTS_OUT:
        if wake_up is None:
            return "lights out"
        return f"lights out until {_HHMM[wake_up % _DAY_US // _MINUTE_US]}"
    if state is State.WINDING and winding is not None:
        return f"winding {progress_percent(winding[0])}% · budget {winding[1]}"
    if day.valley is not None:
        return f"on duty · valley day ({day.valley})"
    if day.workday is not None:
        return f"on duty · {day.workday}"
    return "on duty"


def _local_hhmm(instant: datetime, schedule: Schedule) -> str:
    return to_wall(instant, schedule.timezone).strftime("%H:%M")


#: The placeholders a reply may hold, each filled with a fact of the moment.
#: ``{until}``: when what stops this call ends (see ``reply_for``).
REPLY_PLACEHOLDERS = ("until",)
#: How far a chain of back-to-back peak windows is followed: a schedule that
#: is peak all day every day would otherwise never end.
_CHAIN_LIMIT_US = 7 * _DAY_US


def _peak_end(schedule: Schedule, day: _Day, wall: int, after: int) -> int:
    """The wall reading at which the peak hours around ``wall`` end: the
    latest end of the windows holding it, then of every window that starts
    by that end (back-to-back windows read as one), across days."""
    found = day.peak_ends.get(after)
    if found is not None:
        return found
    end = wall
    frame = day
    while True:
        longer = max(
            (stop for start, stop in frame.peaks if start <= end < stop),
            default=end,
        )
        if longer == end:
            break
        end = longer
        if end - wall > _CHAIN_LIMIT_US:
            break
        # A chain may run past the day after: look at the days of its end.
        frame = _day(schedule, end // _DAY_US)
    day.peak_ends[after] = end
    return end


def reply_for(state: State, schedule: Schedule, until: str | None = None) -> str | None:
    """The canned reply a short-circuit answers in ``state``; None when the
    state sends the call on. The one place this rule lives: the verdict
    carries it, and the settings page reads it from verdicts (never from the
    schedule), so the page cannot promise a reply gateways do not get.

    A reply is a template: ``{until}`` becomes ``until``, the local time
    this state ends (``decide`` works it out only when a reply of the
    schedule holds one, so the seed's plain ``。`` costs nothing more); any
    other brace is text.
    """
    if state is State.OFF_DUTY:
        template = schedule.off_duty_reply
    elif state is State.LIGHTS_OUT:
        template = schedule.lights_out_reply
    else:
        return None
    if until is not None and "{until}" in template:
        return template.replace("{until}", until)
    return template


def decide(
    now: datetime,
    schedule: Schedule,
    request: RequestContext = _DEFAULT_REQUEST,
    overrides: Overrides = _NO_OVERRIDES,
) -> Verdict:
    """Decide what the gateway does with one model call at the real instant ``now``.

    Pure: ``now`` is the only clock. ``overrides.debug_at`` (the time machine,
    "pretend it is ...") replaces the moment the schedule is read at until the
    real ``overrides.debug_until``, and ``valid_until`` never passes that end;
    from it on, the schedule rules again. Overtime and force-off are measured
    against the real ``now``.

    The rules, in order: read the schedule at the moment; the first moment the
    reading may change; the overrides; a disabled curfew; the call's scope; what
    is done with the call; a dry run.
    """
    if now.tzinfo is None:
        raise ValueError("decide() needs an aware instant; naive datetimes are ambiguous")
    caller_tz = now.tzinfo
    debug_at = overrides.debug_at_now(now)
    at = debug_at or now
    pretending = debug_at is not None
    # Work on UTC instants: aware datetimes sharing one tzinfo (``now`` written
    # in the schedule's own zone) compare and subtract as wall readings, which
    # ignores ``fold`` and every DST jump between them.
    now = now.astimezone(UTC)
    local = at.astimezone(schedule.timezone)  # its fields are the wall reading (``to_wall``)
    wall = _wall_us(local)
    day = _day(schedule, wall // _DAY_US)
    reading_state, reading_peak, reading_winding, wake_up, after = _read(schedule, day, wall, True)
    reasons = [f"{day.date_text} {_HHMM[local.hour * 60 + local.minute]}"]

    # -- valid_until: the first moment any decision field may change ----------
    limits = _reading_limits(
        now, at, local, day, after, reading_winding, schedule, overrides.debug_until, pretending
    )

    # -- overrides: what will actually happen ---------------------------------
    state = reading_state
    override, override_until = _override(overrides, now)
    if override_until is not None:
        state = _OVERRIDE_STATE[override]
        limits.append(override_until)
        reasons.append(_override_reason(override, override_until, schedule))
    debug_until = None
    if pretending:
        debug_until = overrides.debug_until
        reasons.append(_pretend_reason(local, debug_until, schedule))

    # -- a disabled curfew: on duty, whatever the schedule and overrides say ---
    schedule_state = reading_state
    if not schedule.enabled:
        state = schedule_state = State.ON_DUTY
        override = override_until = None
        reasons = [reasons[0], "curfew disabled"]
    elif override is None or reading_state is not State.ON_DUTY:
        reasons.insert(1, _describe(reading_state, reading_winding, wake_up, day))

    valid_until = min(limits).astimezone(caller_tz)
    winding = reading_winding if state is State.WINDING else None

    # -- scope and action: is this call acted on, and how ---------------------
    exempt = False
    act = _PASS
    if state is not State.ON_DUTY:
        exempt, scope_reason = _scope(schedule, request)
        if scope_reason is not None:
            reasons.append(scope_reason)
        if not exempt:
            act, switch = _act(
                schedule,
                day,
                request,
                state,
                winding,
                wall,
                after,
                wake_up,
                override_until,
                now,
                pretending,
            )
            if switch is not None:
                valid_until = min(valid_until, switch.astimezone(caller_tz))

    # -- dry run: decide and report, never act ---------------------------------
    dry_run = schedule.dry_run and schedule.enabled
    would: dict[str, object] | None = None
    if dry_run:
        would = _would(act)
        if act[0] is not Action.PASS:
            reasons.append(f"{DRY_RUN_MARK}{act[0].value}")
        act = _PASS

    action, reply, max_tokens, persona, tools, reasoning_effort = act
    progress, budget = (winding[0], winding[1]) if winding is not None else (None, None)
    return new_verdict(
        state=state,
        schedule_state=schedule_state,
        action=action,
        reply=reply,
        max_tokens=max_tokens,
        persona=persona,
        tools=tools,
        reasoning_effort=reasoning_effort,
        progress=progress,
        peak=reading_peak and schedule.enabled,
        reason=" · ".join(reasons),
        exempt=exempt,
        dry_run=dry_run,
        valid_until=valid_until,
        at=at,
        budget=budget,
        override=override,
        override_until=override_until,
        debug_at=debug_at,
        debug_until=debug_until,
        would=would,
    )


#: What is done with one call: ``(action, reply, max_tokens, persona, tools,
#: reasoning_effort)``, the verdict's fields in that order.
_Act = tuple[Action, str | None, int | None, str | None, Literal["allow", "deny"], str | None]
#: The call goes on untouched.
_PASS: _Act = (Action.PASS, None, None, None, "allow", None)
_Override = tuple[Literal["overtime", "off"] | None, datetime | None]
_NO_OVERRIDE: _Override = (None, None)
#: The state an override in force puts the call in.
_OVERRIDE_STATE: dict[str | None, State] = {"off": State.LIGHTS_OUT, "overtime": State.ON_DUTY}


def _reading_limits(
    now: datetime,
    at: datetime,
    local: datetime,
    day: _Day,
    after: int,
    winding: _Wind | None,
    schedule: Schedule,
    pretend_end: datetime | None,
    pretending: bool,
) -> list[datetime]:
    """The instants by which the reading may change, ``valid_until``'s first
    candidates: ``HORIZON`` ahead; pretending, the pretend's end (caches and
    capsules look again then); else the real instant the schedule's reading
    next changes: its next edge (a night's or a peak window's) or the winding
    window's next step, whichever comes first; with neither ahead, the zone's
    next offset change within ``HORIZON``."""
    limits = [now + HORIZON]
    if pretending:
        if pretend_end is not None:
            limits.append(pretend_end)
        return limits
    tz = schedule.timezone
    edges = day.edges
    next_wall = edges[after] if after < len(edges) else None
    if winding is not None:
        step = winding[3]
        if step is not None and (next_wall is None or step < next_wall):
            next_wall = step
    if next_wall is None:
        transition = next_transition(now, now + HORIZON, tz)
        if transition is not None:
            limits.append(transition)
        return limits
    # The zone's offset at ``now``: converted from UTC, ``local`` is ``now``
    # in the zone; spelled in the zone it may be a wall time the clock never
    # shows, so convert again.
    before = local.utcoffset() if at.tzinfo is UTC else now.astimezone(tz).utcoffset()
    limits.append(_until(now, before, day.readings(next_wall), tz))
    return limits


def _override(overrides: Overrides, now: datetime) -> _Override:
    """The override in force at the real ``now``: a force-off that has not
    ended, else an overtime that has not; the name and its end."""
    forced = overrides.forced_off_until
    if forced is not None and forced > now:
        return "off", forced
    overtime = overrides.overtime_until
    if overtime is not None and overtime > now:
        return "overtime", overtime
    return _NO_OVERRIDE


def _override_reason(override: str | None, until: datetime, schedule: Schedule) -> str:
    """The reason line of an override in force, with its end on the local clock."""
    name = "forced off" if override == "off" else "overtime"
    return f"{name} until {_local_hhmm(until, schedule)}"


#: How a dry run's part of a reason begins (``dry run: would clamp``):
#: ``engine.team`` finds it where the other side of a member's verdict acts.
DRY_RUN_MARK = "dry run: would "


#: How the time machine's part of a reason begins (``engine.team`` and the
#: ledger's "Why" find it by this).
PRETEND_MARK = "pretending"
#: The weekdays as a reason names them, Monday first (``date.weekday()``);
#: fixed English, never the process's locale (``%a``).
REASON_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _pretend_reason(local: datetime, until: datetime | None, schedule: Schedule) -> str:
    """The reason line of the time machine: ``pretending it is Wed 01:30 until
    21:00 real time``. Two clocks, each said: the pretended moment ``local``
    (on the schedule's clock, the one the rest of the line reads) and the
    pretend's end, a real instant (on the schedule's clock too). "Pretend" is
    the override's one name for people (its wire name is ``debug``); the
    reason is read by people too."""
    moment = f"{PRETEND_MARK} it is {REASON_WEEKDAYS[local.weekday()]} {local:%H:%M}"
    if until is None:
        return moment
    return f"{moment} until {_local_hhmm(until, schedule)} real time"


def _scope(schedule: Schedule, request: RequestContext) -> tuple[bool, str | None]:
    """Whether the schedule exempts this call (a listed purpose, an exempt
    session, a spared subagent, checked in that order), and the reason line
    that says why it is or is not."""
    purpose = purpose_key(request.purpose)
    if purpose is not None and purpose in schedule.exempt_purposes:
        return True, f"purpose {purpose!r} is exempt"
    if request.session_id is not None and request.session_id in schedule.exempt_sessions:
        return True, "exempt session"
    if request.subagent and not schedule.apply_to_subagents:
        return True, "subagents spared"
    if request.purpose:
        # Said, though it changes nothing: a gateway sending an unlisted
        # purpose (a typo, a new helper) sees why its call was acted on.
        return False, f"purpose {_cut(request.purpose)!r} is not exempt"
    return False, None


def _act(
    schedule: Schedule,
    day: _Day,
    request: RequestContext,
    state: State,
    winding: _Wind | None,
    wall: int,
    after: int,
    wake_up: int | None,
    override_until: datetime | None,
    now: datetime,
    pretending: bool,
) -> tuple[_Act, datetime | None]:
    """What is done with a call the schedule acts on (not exempt, not on duty):
    winding, it is clamped (``_wind_down``); off duty or lights out, it is
    answered in the gateway's place (``_short_circuit``), its reply's
    ``{until}`` filled (``_reply_until``). With it, the real instant the
    reply's text changes, if it does."""
    if winding is not None:
        return _wind_down(schedule, day, request, winding), None
    if state is not State.OFF_DUTY and state is not State.LIGHTS_OUT:
        return _PASS, None
    until: str | None = None
    switch: datetime | None = None
    if state in day.templated:
        until, switch = _reply_until(
            schedule, day, wall, after, state, wake_up, override_until, now, pretending
        )
    return _short_circuit(schedule, request, state, until), switch


def _wind_down(schedule: Schedule, day: _Day, request: RequestContext, winding: _Wind) -> _Act:
    """A winding call is clamped: the window's budget caps its tokens, and its
    tier's persona and the schedule's reasoning effort go with it."""
    return (
        Action.CLAMP,
        None,
        _clamp(request.max_tokens, winding[1]),
        day.personas[winding[2]],
        "allow",
        schedule.winding_reasoning_effort,
    )


def _short_circuit(
    schedule: Schedule, request: RequestContext, state: State, until: str | None
) -> _Act:
    """Off duty or lights out, a call is answered with the state's canned reply
    (its ``{until}`` filled with ``until``), capped by the safety budget, tools
    denied if the schedule says so."""
    reply = reply_for(state, schedule, until)
    max_tokens = None
    if schedule.safety_max_tokens is not None:
        max_tokens = _clamp(request.max_tokens, schedule.safety_max_tokens)
    tools: Literal["allow", "deny"] = "deny" if schedule.deny_tools_when_off_duty else "allow"
    return (Action.SHORT_CIRCUIT, reply, max_tokens, None, tools, None)


def _would(act: _Act) -> dict[str, object]:
    """A dry run's report of what it would have done."""
    action, reply, max_tokens, persona, tools, reasoning_effort = act
    return {
        "action": action.value,
        "reply": reply,
        "max_tokens": max_tokens,
        "persona": persona,
        "tools": tools,
        "reasoning_effort": reasoning_effort,
    }


def _reply_until(
    schedule: Schedule,
    day: _Day,
    wall: int,
    after: int,
    state: State,
    wake_up: int | None,
    override_until: datetime | None,
    now: datetime,
    pretending: bool,
) -> tuple[str, datetime | None]:
    """``{until}`` of a short-circuit: when what stops the call ends; and
    the real instant its text drops the date (an end more than a day ahead
    is told with its date), if it shows one and the clock moves, so
    ``valid_until`` stops there and no cache keeps a stale reply."""
    tz = schedule.timezone
    if override_until is not None:
        # A forced off runs on real time, pretending or not: its end is a real
        # instant, told on the local clock, with its date once it is more than
        # a real day away. (Pretended time stands still: told on it, the end
        # would move under every cache.)
        end = _wall_us(override_until.astimezone(tz))
        if override_until - now > _DAY:
            return _with_date(end), override_until - _DAY
        return _HHMM[end % _DAY_US // _MINUTE_US], None
    if state is State.LIGHTS_OUT and wake_up is not None:
        end = wake_up
    else:
        end = _peak_end(schedule, day, wall, after)
    # On the clock the schedule is read at: the time machine's, pretending
    # (which stands still, so its text never changes under it).
    if end - wall <= _DAY_US:
        return _HHMM[end % _DAY_US // _MINUTE_US], None
    if pretending:
        return _with_date(end), None
    offset = now.astimezone(tz).utcoffset()
    return _with_date(end), _until(now, offset, day.readings(end - _DAY_US), tz)


def _with_date(wall: int) -> str:
    return f"{datetime.fromordinal(wall // _DAY_US):%Y-%m-%d} {_HHMM[wall % _DAY_US // _MINUTE_US]}"


def _cut(text: str, limit: int = 40) -> str:
    """Client text quoted in ``reason``, cut short so it cannot make a long one."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _clamp(current: int | None, budget: int) -> int:
    """``min``, never a raise; an unknown (default) budget is set explicitly."""
    return budget if current is None else min(current, budget)


def segments(start: datetime, end: datetime, schedule: Schedule) -> list[Segment]:
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
        local = cursor.astimezone(tz)
        wall = _wall_us(local)
        day = _day(schedule, wall // _DAY_US)
        state, peak, _, _, after = _read(schedule, day, wall, False)
        if not schedule.enabled:
            state, peak = State.ON_DUTY, False
        if after >= len(day.edges):
            upto = end
        else:
            readings = day.readings(day.edges[after])
            upto = min(_until(cursor, local.utcoffset(), readings, tz), end)
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
