"""Which anchors a curve shape ignores: ``unused_anchors`` is checked against
the curve itself. Changing an ignored anchor's tokens moves no budget anywhere
in the window; changing any other anchor's tokens moves some budget."""

from __future__ import annotations

from engine_support import PROPERTY
from hypothesis import given
from hypothesis import strategies as st

from curfew_core.engine import Curve, Schedule, unused_anchors
from curfew_core.engine.curve import budget_at

#: Progress samples through the window [0, 1): every half-minute of a 4 h night.
GRID = [step / 480 for step in range(480)]


def _budgets(points: list[tuple[float, int]], curve: Curve) -> list[int]:
    probes = GRID + [at for at, _ in points if at < 1]
    return [budget_at(points, curve, p) for p in probes]


@st.composite
def anchor_points(draw: st.DrawFn) -> list[tuple[float, int]]:
    """Sorted anchors at distinct places in [0, 1], as ``Schedule.fractions``
    holds them; often one at the very start and one at lights-out (1.0)."""
    steps = draw(st.lists(st.integers(0, 240), min_size=1, max_size=8, unique=True))
    if draw(st.booleans()):
        steps = sorted({*steps, 0, 240})
    tokens = draw(st.lists(st.integers(1, 4096), min_size=len(steps), max_size=len(steps)))
    return [(step / 240, count) for step, count in zip(sorted(steps), tokens, strict=True)]


@PROPERTY
@given(points=anchor_points(), curve=st.sampled_from(list(Curve)))
def test_an_anchor_is_unused_exactly_when_its_tokens_change_no_budget(
    points: list[tuple[float, int]], curve: Curve
) -> None:
    unused = unused_anchors(points, curve)
    before = _budgets(points, curve)
    for index, (at, tokens) in enumerate(points):
        moved = [*points]
        moved[index] = (at, tokens + 1000)
        changed = _budgets(moved, curve) != before
        assert changed is (index not in unused), (index, points, curve)


def test_the_default_night_per_shape() -> None:
    # 23:00 2048, 00:00 1600, 01:00 800, 02:00 320, 03:00 64; lights-out 03:00.
    points = Schedule().fractions
    assert unused_anchors(points, Curve.LINEAR) == frozenset()
    assert unused_anchors(points, Curve.EASE_IN) == {1, 2, 3}
    # Step holds 02:00's 320 until lights-out: 03:00's 64 is never served.
    assert unused_anchors(points, Curve.STEP) == {4}
    assert unused_anchors(points[:4], Curve.STEP) == frozenset()


def test_one_or_two_anchors_are_all_used() -> None:
    for curve in Curve:
        assert unused_anchors([(0.5, 100)], curve) == frozenset()
        assert unused_anchors([(0.0, 100), (0.5, 10)], curve) == frozenset()
