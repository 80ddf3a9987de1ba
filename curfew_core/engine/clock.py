"""Wall-clock helpers.

The schedule speaks wall-clock time in one IANA zone; the engine is handed a
real instant. Everything is compared as *naive local wall time* and only the
answer (``valid_until``) is turned back into a real instant, which is where DST
gaps and repeats are dealt with, once.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

#: Minutes since local midnight, 0..1439.
WallTime = int

MINUTES_PER_DAY = 24 * 60
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def parse_wall(text: str) -> WallTime:
    """Parse a strict ``HH:MM`` (24-hour, two digits each) into minutes."""
    match = _HHMM.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a time of day in HH:MM (00:00-23:59)")
    return int(match.group(1)) * 60 + int(match.group(2))


def format_wall(minutes: WallTime) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def cyclic_span(start: WallTime, end: WallTime) -> int:
    """Minutes from ``start`` forward to ``end`` on a 24-hour dial (0 if equal)."""
    return (end - start) % MINUTES_PER_DAY


def wall_midnight(day: date) -> datetime:
    """The naive wall-clock midnight that starts the local date ``day``."""
    return datetime.fromordinal(day.toordinal())


def to_wall(instant: datetime, tz: tzinfo) -> datetime:
    """The naive wall-clock reading of a real instant in ``tz``."""
    return instant.astimezone(tz).replace(tzinfo=None)


def wall_to_instant(wall: datetime, tz: tzinfo, after: datetime) -> datetime:
    """The earliest real instant strictly after ``after`` that reads ``wall`` or later.

    A wall time inside a DST gap never appears on the clock; either fold is an
    acceptable (early) answer there because the caller also looks for the
    offset transition itself (``next_transition``). A repeated wall time has two
    instants; the first one still ahead of ``after`` is the one that matters.
    """
    candidates = sorted(
        wall.replace(tzinfo=tz, fold=fold).astimezone(after.tzinfo) for fold in (0, 1)
    )
    for candidate in candidates:
        if candidate > after:
            return candidate
    # Both readings lie behind us (only possible for a wall time in a repeated
    # hour already passed twice); the boundary is gone, so look a second ahead.
    return after + timedelta(seconds=1)


def next_transition(start: datetime, end: datetime, tz: tzinfo) -> datetime | None:
    """First instant in ``(start, end]`` where ``tz``'s UTC offset changes, if any.

    Wall-clock reasoning cannot see a DST jump (the clock reading itself jumps),
    so the caller bounds ``valid_until`` by it. Bisection to the second: offsets
    change on whole seconds in every zone in the tz database.
    """
    before = start.astimezone(tz).utcoffset()
    if end.astimezone(tz).utcoffset() == before:
        return None
    lo, hi = start, end
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        if mid.astimezone(tz).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    # ``hi`` is within a second after the change; snap to the whole second.
    snapped = hi.replace(microsecond=0)
    if snapped <= start or snapped.astimezone(tz).utcoffset() == before:
        return hi
    return snapped
