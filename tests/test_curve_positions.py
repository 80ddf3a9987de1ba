"""The curve belongs to the night (issue 39): a schedule keeps its curve's
places through the wind-down, so moving the night and back gives the same
anchors to the minute, and a night without wind-down keeps the shape for when one
returns. (Migration 0010, which gave every stored config its places, is part of
release 2026-12-04's squashed schema now: ``tests/test_migrations.py``.)"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from curfew_core.engine import format_wall, parse_wall
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.config import POSITIONS, ConfigError, apply_changes, build

DEFAULT = schedule_config.default_config()
DEFAULT_ANCHORS = [["23:00", 2048], ["00:00", 1600], ["01:00", 800], ["02:00", 320], ["03:00", 64]]

TIME = st.integers(0, 24 * 60 - 1).map(format_wall)


def _move(config: dict[str, Any], start: str, lights: str) -> dict[str, Any]:
    """The night moved (waking an hour after lights-out, so most nights drawn
    are nights one may save)."""
    wake = format_wall((parse_wall(lights) + 60) % (24 * 60))
    return apply_changes(config, {"curfew_start": start, "lights_out": lights, "wake_up": wake})


def test_the_issues_night_moved_and_back_keeps_the_curve() -> None:
    """23:00 -> 22:30 -> 23:00 gave anchors at 00:01 and 02:01 (issue 39)."""
    there = apply_changes(DEFAULT, {"curfew_start": "22:30"})
    assert there["anchors"][1][0] == "23:38"  # the shape, placed on the new night
    back = apply_changes(there, {"curfew_start": "23:00"})
    assert back["anchors"] == DEFAULT_ANCHORS
    # Control: clock times alone (the old storage) cannot say the shape: read
    # back from a short night's minutes, the curve comes back worn.
    short = apply_changes(DEFAULT, {"curfew_start": "02:57"})
    assert [at for at, _ in short["anchors"]] == ["02:57", "02:58", "02:59", "02:59", "03:00"]
    assert apply_changes(short, {"curfew_start": "23:00"})["anchors"] == DEFAULT_ANCHORS
    old_style = {key: value for key, value in short.items() if key != POSITIONS}
    worn = apply_changes(old_style, {"curfew_start": "23:00"})
    assert worn["anchors"] != DEFAULT_ANCHORS


def test_a_night_without_wind_down_and_back_keeps_the_shape() -> None:
    """Curfew start at lights-out and back: 2048 at 23:00 again, 1824 at
    23:30, not the curve upside down (2048 at lights-out, 90 at 23:30)."""
    flat = apply_changes(DEFAULT, {"curfew_start": "03:00"})
    assert build(flat).night.winding_minutes == 0
    back = apply_changes(flat, {"curfew_start": "23:00"})
    assert back["anchors"] == DEFAULT_ANCHORS
    assert back[POSITIONS] == ["0", "1/4", "1/2", "3/4", "1"]
    fractions = build(back).fractions
    assert fractions == build(DEFAULT).fractions
    # 23:30 is 1/8 through: 2048 - (2048 - 1600) / 2.
    from curfew_core.engine.curve import budget_at

    assert budget_at(fractions, build(back).curve, 1 / 8) == 1824


def test_a_weekday_night_reads_the_shape_while_the_default_has_no_wind_down() -> None:
    flat = apply_changes(
        DEFAULT,
        {"curfew_start": "03:00", "weekdays": {"sat": {"curfew_start": "01:00"}}},
    )
    assert build(flat).fractions == build(DEFAULT).fractions


def test_one_row_changed_by_hand_keeps_the_rest_of_the_shape_exact() -> None:
    there = apply_changes(DEFAULT, {"curfew_start": "22:30"})
    rows = [list(row) for row in there["anchors"]]
    rows[2][1] = 700  # tokens only
    changed = apply_changes(there, {"anchors": rows})
    assert changed[POSITIONS] == there[POSITIONS]
    back = apply_changes(changed, {"curfew_start": "23:00"})
    assert back["anchors"] == [
        ["23:00", 2048],
        ["00:00", 1600],
        ["01:00", 700],
        *DEFAULT_ANCHORS[3:],
    ]


def test_anchors_written_by_hand_become_places() -> None:
    config = apply_changes(DEFAULT, {"anchors": [["03:00", 64], ["23:00", 2048], ["00:30", 900]]})
    assert config["anchors"] == [["23:00", 2048], ["00:30", 900], ["03:00", 64]]
    assert config[POSITIONS] == ["0", "3/8", "1"]


def test_places_that_no_longer_show_as_the_anchors_are_read_from_them() -> None:
    """A row whose anchors changed outside ``apply_changes`` (or a row from
    before places) is read from its clock times, never from stale places."""
    stale = {**DEFAULT, "anchors": [["23:00", 2048], ["01:00", 64]], POSITIONS: ["0", "1/4", "1"]}
    assert schedule_config.positions_of(stale) == (Fraction(0), Fraction(1, 2))
    # Control: places that do show as the anchors are kept as they are.
    kept = {**stale, POSITIONS: ["0", "1/2"]}
    assert schedule_config.positions_of(kept) == (Fraction(0), Fraction(1, 2))


def test_doors_show_settings_not_places() -> None:
    config = apply_changes(DEFAULT, {"curfew_start": "22:30"})
    assert POSITIONS in config
    assert set(schedule_config.shown(config)) == set(schedule_config.FIELDS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=TIME,
    lights=TIME,
    moves=st.lists(st.tuples(TIME, TIME), min_size=1, max_size=4),
    data=st.data(),
)
def test_moving_the_night_any_way_and_back_gives_the_same_anchors(
    start: str, lights: str, moves: list[tuple[str, str]], data: st.DataObject
) -> None:
    """Any night with any curve in it, moved through any nights (with or
    without wind-down) and back: the same anchors to the minute."""
    try:
        first = _move(DEFAULT, start, lights)
    except ConfigError:
        assume(False)
    window = build(first).night.winding_minutes
    if window:
        count = data.draw(st.integers(1, min(6, window + 1)))
        offsets = sorted(data.draw(st.sets(st.integers(0, window), min_size=count, max_size=count)))
        rows = [
            [format_wall((build(first).night.curfew_start + offset) % 1440), 64 + offset]
            for offset in offsets
        ]
        first = apply_changes(first, {"anchors": rows})
    config = first
    for there in moves:
        try:
            config = _move(config, *there)
        except ConfigError:
            continue
    back = _move(config, start, lights)
    # The shape, always; its clock times too where the night has a wind-down
    # (without one they are only a memory of the last night that had one).
    assert back[POSITIONS] == first[POSITIONS]
    assert build(back).fractions == build(first).fractions
    if window:
        assert back["anchors"] == first["anchors"]


def test_new_tokens_on_a_night_without_wind_down_keep_the_shape() -> None:
    there = apply_changes(DEFAULT, {"curfew_start": "22:30"})
    flat = apply_changes(there, {"curfew_start": "03:00"})
    rows = [[at, tokens // 2] for at, tokens in flat["anchors"]]
    halved = apply_changes(flat, {"anchors": rows})
    assert halved[POSITIONS] == there[POSITIONS] == ["0", "1/4", "1/2", "3/4", "1"]
    back = apply_changes(halved, {"curfew_start": "22:30"})
    assert back["anchors"] == [[at, tokens // 2] for at, tokens in there["anchors"]]


def test_two_anchors_a_short_night_shows_on_one_minute_stay_two() -> None:
    short = apply_changes(DEFAULT, {"curfew_start": "02:57"})
    assert [at for at, _ in short["anchors"]] == ["02:57", "02:58", "02:59", "02:59", "03:00"]
    rows = [list(row) for row in short["anchors"]]
    rows[0][1] = 4000  # one row's tokens changed; the rest sent as shown
    changed = apply_changes(short, {"anchors": rows})
    assert changed[POSITIONS] == short[POSITIONS]
    assert [t for _, t in apply_changes(changed, {"curfew_start": "23:00"})["anchors"]] == [
        4000,
        1600,
        800,
        320,
        64,
    ]
    # Control: a third row typed at that minute is a row written twice.
    with pytest.raises(ConfigError, match="02:59 appears twice"):
        apply_changes(short, {"anchors": [*rows, ["02:59", 10]]})
