"""The winding budget: the anchor curve over the curfew window, and when its
whole-token value next changes (so ``valid_until`` is exact, not polled)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

from curfew_core.engine.clock import MINUTES_PER_DAY, WallTime
from curfew_core.engine.schedule import Anchor, Curve, NightTimes, anchor_positions

Points = Sequence[tuple[float, int]]


def round_half_away(value: float) -> int:
    """Whole tokens, half away from zero (Python's ``round`` is banker's)."""
    return math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1)


def segment_of(points: Points, p: float) -> int:
    """Index ``i`` such that ``points[i][0] <= p < points[i+1][0]``."""
    index = 0
    for i in range(len(points) - 1):
        if points[i][0] <= p:
            index = i
    return index


def curve_value(points: Points, curve: Curve, p: float, segment: int | None = None) -> float:
    """The unrounded budget at progress ``p`` (0..1 through the window);
    ``segment``: ``segment_of(points, p)``, when the caller has it already."""
    first_at, first = points[0]
    last_at, last = points[-1]
    if p <= first_at or len(points) == 1:
        return float(first)
    if p >= last_at:
        return float(last)
    if curve is Curve.EASE_IN:
        ratio = (p - first_at) / (last_at - first_at)
        return first + (last - first) * ratio * ratio
    i = segment_of(points, p) if segment is None else segment
    (a_at, a_val), (b_at, b_val) = points[i], points[i + 1]
    if curve is Curve.STEP:
        return float(a_val)
    if b_at == a_at:
        return float(b_val)
    return a_val + (b_val - a_val) * (p - a_at) / (b_at - a_at)


def budget_at(points: Points, curve: Curve, p: float, segment: int | None = None) -> int:
    return round_half_away(curve_value(points, curve, p, segment))


def next_budget_change(points: Points, curve: Curve, p: float) -> float | None:
    """Smallest progress ``> p`` at which the whole-token budget may change.

    Early is safe (a gateway just asks again), late is not; float error only
    ever moves the answer by a hair either way.
    """
    first_at, first = points[0]
    last_at, last = points[-1]
    if len(points) == 1 or p >= last_at:
        return None
    if p < first_at:
        return first_at
    current = budget_at(points, curve, p)
    if curve is Curve.STEP:
        i = segment_of(points, p)
        return points[i + 1][0]
    if curve is Curve.EASE_IN:
        lo_at, lo_val, hi_at, hi_val = first_at, first, last_at, last
    else:
        i = segment_of(points, p)
        (lo_at, lo_val), (hi_at, hi_val) = points[i], points[i + 1]
    if hi_val == lo_val or hi_at == lo_at:
        return hi_at
    # The rounded value steps when the raw value crosses current -/+ 0.5.
    target = current - 0.5 if hi_val < lo_val else current + 0.5
    fraction = (target - lo_val) / (hi_val - lo_val)
    if curve is Curve.EASE_IN:
        fraction = math.sqrt(fraction) if fraction > 0 else 0.0
    crossing = lo_at + fraction * (hi_at - lo_at)
    if crossing <= p:
        # ``p`` sits exactly on a half-token line: the step is immediate.
        return math.nextafter(p, math.inf)
    return min(crossing, hi_at)


def unused_anchors(points: Points, curve: Curve) -> frozenset[int]:
    """The anchors (by index) whose budget no moment of the window ever gets.

    Ease-in runs from the first anchor to the last, so the ones between them
    change nothing. Step holds each anchor until the next, so an anchor at
    lights-out (progress 1, which the window never reaches) is never held.
    Linear uses every anchor. The chart draws these apart and the settings
    page marks their rows; tests/engine proves each by changing its tokens.
    """
    count = len(points)
    if count < 2:
        return frozenset()
    if curve is Curve.EASE_IN:
        return frozenset(range(1, count - 1))
    if curve is Curve.STEP:
        return frozenset(index for index in range(1, count) if points[index][0] >= 1)
    return frozenset()


def place(positions: Sequence[Fraction], night: NightTimes) -> tuple[WallTime, ...] | None:
    """The clock time of each place through the wind-down on ``night``: the
    nearest whole minute (half away from zero, exactly: places are rationals).
    ``None`` for a night without wind-down (curfew start at lights-out):
    there the curve has no clock times, only its shape, kept for when a
    wind-down returns. The one rule for where a curve's anchors show on a
    night: the settings, the chart and curve-drag.js place them by it.

    Places are the truth, clock times only show them: a curve moved onto
    another night and back lands on the very minutes it started from,
    because nothing is ever read back from a rounded minute.
    """
    span = night.winding_minutes
    if span == 0:
        return None
    return tuple(
        (night.curfew_start + math.floor(position * span + Fraction(1, 2))) % MINUTES_PER_DAY
        for position in positions
    )


def stretch(anchors: Sequence[Anchor], old: NightTimes, new: NightTimes) -> tuple[Anchor, ...]:
    """The same curve over ``new``'s winding window, as clock times: each
    anchor keeps its place through ``old``'s window (``anchor_positions``)
    and shows on ``new``'s by ``place``. Anchors that land on one minute (a
    window shorter than the anchors are many) fold into one: the first
    anchor keeps the start, otherwise the later one wins, so the curve still
    ends on its last budget. An empty new window keeps the anchors as they are.

    A one-way move of clock-time anchors: the settings keep the places
    themselves (``schedules.config.POSITIONS``), so there moving the night and
    back loses nothing, and nothing folds.
    """
    anchors = tuple(anchors)
    times = place(anchor_positions(anchors, old), new)
    if not anchors or times is None:
        return anchors
    placed: list[tuple[int, int, int]] = []  # (time, tokens, index in anchors)
    for index, (at, anchor) in enumerate(zip(times, anchors, strict=True)):
        if placed and placed[-1][0] == at:
            if placed[-1][2] == 0:
                continue
            placed.pop()
        placed.append((at, anchor.tokens, index))
    return tuple(Anchor(at, tokens) for at, tokens, _ in placed)


def rises(anchors: Sequence[Anchor]) -> tuple[tuple[Anchor, Anchor], ...]:
    """The neighbouring anchors (in window order) between which the budget
    goes up: a wind-down that gets longer toward lights-out, which the page
    warns about (allowed: someone may want a second wind)."""
    return tuple((a, b) for a, b in itertools.pairwise(anchors) if b.tokens > a.tokens)
