"""The winding budget: the anchor curve over the curfew window, and when its
whole-token value next changes (so ``valid_until`` is exact, not polled)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from curfew_core.engine.clock import MINUTES_PER_DAY
from curfew_core.engine.schedule import Anchor, Curve, NightTimes, anchor_fractions

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


def stretch(anchors: Sequence[Anchor], old: NightTimes, new: NightTimes) -> tuple[Anchor, ...]:
    """The same curve over ``new``'s winding window: each anchor keeps its
    place as a fraction of ``old``'s window (``anchor_fractions``, the rule
    every weekday's night is read by) and lands on the nearest whole minute
    of the new one, so moving curfew start or lights-out never leaves an
    anchor outside the night or a flat stretch where the curve used to be.

    Anchors that land on one minute (a window shorter than the anchors are
    many) fold into one: the first anchor keeps the start, otherwise the
    later one wins, so the curve still ends on its last budget. An empty new
    window (curfew start at lights-out: no winding) keeps the anchors as they
    are, so setting a window again later stretches the same curve back out.
    The page's script places anchors by this same arithmetic (curve-drag.js).
    """
    anchors = tuple(anchors)
    span = new.winding_minutes
    if not anchors or span == 0:
        return anchors
    placed: list[tuple[int, int, int]] = []  # (offset, tokens, index in anchors)
    for index, (fraction, tokens) in enumerate(anchor_fractions(anchors, old)):
        offset = round_half_away(fraction * span)
        if placed and placed[-1][0] == offset:
            if placed[-1][2] == 0:
                continue
            placed.pop()
        placed.append((offset, tokens, index))
    return tuple(
        Anchor((new.curfew_start + offset) % MINUTES_PER_DAY, tokens)
        for offset, tokens, _ in placed
    )


def rises(anchors: Sequence[Anchor]) -> tuple[tuple[Anchor, Anchor], ...]:
    """The neighbouring anchors (in window order) between which the budget
    goes up: a wind-down that gets longer toward lights-out, which the page
    warns about (allowed: someone may want a second wind)."""
    return tuple((a, b) for a, b in itertools.pairwise(anchors) if b.tokens > a.tokens)
