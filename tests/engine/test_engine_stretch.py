"""The wind-down follows the night: ``curve.stretch`` moves a curve from one
winding window onto another, each anchor keeping its place as a fraction of
the window (the same rule by which every weekday's night reads the curve),
and ``curve.rises`` finds where a curve gets longer toward lights-out."""

from __future__ import annotations

import itertools
from datetime import datetime

from engine_support import PROPERTY, SHANGHAI
from hypothesis import given
from hypothesis import strategies as st

from curfew_core.engine import Anchor, NightTimes, Schedule, decide, format_wall, parse_wall
from curfew_core.engine.clock import cyclic_span
from curfew_core.engine.curve import rises, stretch
from curfew_core.engine.schedule import anchor_fractions

DEFAULT = Schedule()


def _night(start: str, lights: str, wake: str = "09:00") -> NightTimes:
    return NightTimes(parse_wall(start), parse_wall(lights), parse_wall(wake))


def test_the_default_curve_over_a_shorter_night_is_the_same_shape() -> None:
    """22:30 to 01:00: 2048 at the start, 64 at lights-out, every anchor a
    quarter further on, not a flat 2048 before 23:00 and an 800 end."""
    moved = stretch(DEFAULT.anchors, DEFAULT.night, _night("22:30", "01:00"))
    assert [(format_wall(a.at), a.tokens) for a in moved] == [
        ("22:30", 2048),
        ("23:08", 1600),  # 37.5 minutes in, to the nearest minute (half away)
        ("23:45", 800),
        ("00:23", 320),
        ("01:00", 64),
    ]
    schedule = Schedule(night=_night("22:30", "01:00"), anchors=moved)
    budgets = [
        decide(datetime(2026, 9, 29, hour % 24, minute, tzinfo=SHANGHAI), schedule).max_tokens
        for hour, minute in [(22, 30), (23, 0), (23, 30), (24, 0), (24, 30), (24, 59)]
    ]
    assert budgets[0] == 2048
    assert budgets == sorted(budgets, reverse=True)
    assert budgets[-1] is not None
    assert budgets[-1] < 100
    # Control: the same anchors left where they were fall outside the new night.
    assert cyclic_span(parse_wall("22:30"), DEFAULT.anchors[-1].at) > 150


def test_stretching_onto_the_same_window_changes_nothing() -> None:
    assert stretch(DEFAULT.anchors, DEFAULT.night, DEFAULT.night) == DEFAULT.anchors


def test_an_empty_window_keeps_the_anchors_and_a_later_window_gets_the_curve_back() -> None:
    empty = _night("23:00", "23:00")
    kept = stretch(DEFAULT.anchors, DEFAULT.night, empty)
    assert kept == DEFAULT.anchors
    assert stretch(kept, empty, DEFAULT.night) == DEFAULT.anchors


def test_a_window_shorter_than_the_anchors_folds_them_keeping_both_ends() -> None:
    moved = stretch(DEFAULT.anchors, DEFAULT.night, _night("22:30", "22:32"))
    assert [(format_wall(a.at), a.tokens) for a in moved] == [
        ("22:30", 2048),
        ("22:31", 800),
        ("22:32", 64),
    ]


def test_rises_names_the_anchors_between_which_answers_get_longer() -> None:
    anchors = (Anchor(23 * 60, 2048), Anchor(0, 300), Anchor(60, 900), Anchor(120, 64))
    assert rises(anchors) == ((Anchor(0, 300), Anchor(60, 900)),)
    assert rises(DEFAULT.anchors) == ()


@st.composite
def curves(draw: st.DrawFn) -> tuple[NightTimes, tuple[Anchor, ...], NightTimes]:
    """A night, anchors at distinct minutes inside its window (window order),
    and another night to move them to."""
    start = draw(st.integers(0, 1439))
    span = draw(st.integers(1, 720))
    offsets = sorted(draw(st.lists(st.integers(0, span), min_size=1, max_size=8, unique=True)))
    tokens = draw(st.lists(st.integers(1, 4096), min_size=len(offsets), max_size=len(offsets)))
    old = NightTimes(start, (start + span) % 1440, (start + span + 60) % 1440)
    anchors = tuple(
        Anchor((start + offset) % 1440, count)
        for offset, count in zip(offsets, tokens, strict=True)
    )
    new_start = draw(st.integers(0, 1439))
    new_span = draw(st.integers(1, 720))
    new = NightTimes(new_start, (new_start + new_span) % 1440, (new_start + new_span + 60) % 1440)
    return old, anchors, new


@PROPERTY
@given(case=curves())
def test_a_stretched_curve_lies_in_the_new_window_in_the_same_places(
    case: tuple[NightTimes, tuple[Anchor, ...], NightTimes],
) -> None:
    old, anchors, new = case
    moved = stretch(anchors, old, new)
    offsets = [cyclic_span(new.curfew_start, a.at) for a in moved]
    # Inside the window, at distinct minutes, in window order.
    assert all(0 <= offset <= new.winding_minutes for offset in offsets)
    assert offsets == sorted(set(offsets))
    # The start keeps its budget, and so does the end.
    assert moved[0].tokens == anchors[0].tokens
    assert moved[-1].tokens == anchors[-1].tokens or len(moved) == 1
    before = dict(zip(anchors, anchor_fractions(anchors, old), strict=True))
    after = anchor_fractions(moved, new)
    if len(moved) == len(anchors):
        # Nothing folded: each anchor within half a minute of its old place.
        for anchor, (fraction, tokens) in zip(anchors, after, strict=True):
            assert tokens == anchor.tokens
            assert abs(fraction - before[anchor][0]) <= 0.5 / new.winding_minutes + 1e-12
    else:
        # Folded only where two anchors come within a minute of each other.
        places = [fraction * new.winding_minutes for _, (fraction, _) in before.items()]
        assert any(b - a < 1 for a, b in itertools.pairwise(places))


# -- the curve belongs to the night: places, not clock times (issue 39) ---------------


def test_place_shows_places_on_a_night_to_the_nearest_minute_and_nothing_without_one() -> None:
    from fractions import Fraction

    from curfew_core.engine.curve import place

    places = (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))
    assert place(places, _night("22:30", "01:00")) == tuple(
        parse_wall(t) for t in ("22:30", "23:08", "23:45", "00:23", "01:00")
    )
    assert place(places, DEFAULT.night) == tuple(a.at for a in DEFAULT.anchors)
    assert place(places, _night("23:00", "23:00")) is None


def test_a_weekday_night_reads_the_places_when_the_default_night_has_no_wind_down() -> None:
    """Curfew start at lights-out by default, Tuesday 23:00-03:00: Tuesday's
    night draws the kept shape (1824 at 23:30), whatever clock times the
    anchors last showed."""
    from fractions import Fraction

    places = (Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))
    flat = _night("03:00", "03:00")
    # The clock times as a no-wind-down night keeps them: the last ones shown.
    shown = tuple(Anchor(a.at, a.tokens) for a in DEFAULT.anchors)
    tuesday = {1: DEFAULT.night}
    kept = Schedule(night=flat, weekdays=tuesday, anchors=shown, positions=places)
    at = datetime(2026, 9, 29, 23, 30, tzinfo=SHANGHAI)
    assert decide(at, kept).max_tokens == 1824
    # Control: from clock times alone, a lights-out row at 03:00 written first
    # (as curfew start orders them) turns the curve upside down.
    upside_down = (Anchor(parse_wall("03:00"), 64), *DEFAULT.anchors[:-1])
    worn = Schedule(night=flat, weekdays=tuesday, anchors=upside_down)
    assert decide(at, worn).max_tokens != 1824
