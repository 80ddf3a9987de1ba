"""A local day as the schedule draws it: the plan of segments and the band.

Both are read off ``segments`` (the very walk ``decide`` makes), so what the
status capsule and the settings page show is what gateways get. Times are
wall-clock minutes since local midnight (``WallTime``); a segment that runs to
the end of the day ends at ``END_OF_DAY`` (``format_wall`` writes "24:00").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from curfew_core.engine.clock import MINUTES_PER_DAY, WallTime, to_wall, wall_midnight
from curfew_core.engine.days import day_kind
from curfew_core.engine.decide import segments
from curfew_core.engine.schedule import Schedule
from curfew_core.engine.verdict import SEVERITY, Segment, State

#: The end of a local day in wall minutes ("24:00").
END_OF_DAY: WallTime = MINUTES_PER_DAY


@dataclass(frozen=True, slots=True)
class PlanSegment:
    """One stretch of a local day in one state (wall minutes, end exclusive)."""

    start: WallTime
    end: WallTime
    state: State
    peak: bool


@dataclass(frozen=True, slots=True)
class BandCell:
    """One equal slice of a local day, in the state at its midpoint."""

    index: int
    start: WallTime
    end: WallTime
    state: State
    peak: bool


@dataclass(frozen=True, slots=True)
class DayBand:
    day: date
    cells: tuple[BandCell, ...]
    plan: tuple[PlanSegment, ...]
    #: ``"weekend"`` or ``"holiday: <name>"`` when peak hours are off all day
    #: (only while the peak shift and the curfew are on).
    valley: str | None
    #: The calendar's holiday name, whatever the schedule does with it.
    holiday: str | None
    #: ``"make-up workday"`` (调休) or ``"personal workday"``: a weekend or
    #: holiday that keeps its peak hours (only while the peak shift is on).
    workday: str | None
    weekend: bool


def _local_midnight(day: date, schedule: Schedule) -> datetime:
    return wall_midnight(day).replace(tzinfo=schedule.timezone)


def _day_segments(schedule: Schedule, day: date) -> tuple[list[Segment], datetime]:
    start = _local_midnight(day, schedule)
    end = _local_midnight(day + timedelta(days=1), schedule)
    return segments(start, end, schedule), end


def _plan(found: list[Segment], end: datetime, schedule: Schedule) -> tuple[PlanSegment, ...]:
    tz = schedule.timezone

    def minutes(instant: datetime) -> WallTime:
        wall = to_wall(instant, tz)
        return wall.hour * 60 + wall.minute

    return tuple(
        PlanSegment(
            start=minutes(seg.start),
            end=END_OF_DAY if seg.end >= end else minutes(seg.end),
            state=seg.state,
            peak=seg.peak,
        )
        for seg in found
    )


def day_plan(schedule: Schedule, day: date) -> tuple[PlanSegment, ...]:
    """The schedule's segments for the local date ``day``, midnight to midnight.

    Overrides are not applied: this is what the schedule says. On a DST day
    the wall minutes skip or repeat with the clock (a segment may start at
    03:00 after a 02:00 gap).
    """
    found, end = _day_segments(schedule, day)
    return _plan(found, end, schedule)


def _state_at(found: list[Segment], instant: datetime) -> Segment:
    for segment in found:
        if segment.start <= instant < segment.end:
            return segment
    return found[-1]


def _peak_day(schedule: Schedule, day: date) -> tuple[str | None, str | None]:
    """``day_kind``'s valley and workday, only while the schedule has a peak
    shift to drop or keep (otherwise neither)."""
    if not (schedule.peak_shift and schedule.enabled):
        return None, None
    return day_kind(schedule, day)


def day_band(
    schedule: Schedule, day: date, step: int = 15, *, team: Schedule | None = None
) -> DayBand:
    """The local date ``day`` as equal cells of ``step`` wall minutes, plus its plan.

    A cell takes the state at its midpoint, so an edge off the cell grid lands
    in the cell it covers most; the plan lists the exact edges. ``valley`` and
    ``workday`` are ``day_kind``'s, and only while the peak shift is on and the
    curfew enabled (otherwise the day has no peak hours to drop or keep).

    With ``team`` (a member's team schedule) the day is the two together, as
    ``member_day_plan`` draws it; the day is a valley only if the team's peak
    hours are off that day too.
    """
    if step <= 0 or MINUTES_PER_DAY % step:
        raise ValueError(f"a band step must divide a day into whole cells, not {step!r}")
    tz = schedule.timezone
    found, end = (
        _day_segments(schedule, day) if team is None else _member_segments(schedule, team, day)
    )
    count = MINUTES_PER_DAY // step
    naive_midnight = wall_midnight(day)
    cells = []
    for index in range(count):
        middle = naive_midnight + timedelta(minutes=index * step + step / 2)
        # Same-zone aware datetimes compare as wall readings: the midpoint is
        # placed by its wall time, as the band is drawn.
        segment = _state_at(found, middle.replace(tzinfo=tz))
        cells.append(
            BandCell(
                index=index,
                start=index * step,
                end=(index + 1) * step,
                state=segment.state,
                peak=segment.peak,
            )
        )
    valley, workday = _peak_day(schedule, day)
    if team is not None and team.peak_shift and team.enabled:
        # Harsher wins: the team's peak hours that day take the valley away.
        team_valley, team_workday = day_kind(team, day)
        if team_valley is None:
            valley = None
        workday = workday or team_workday
    return DayBand(
        day=day,
        cells=tuple(cells),
        plan=_plan(found, end, schedule),
        valley=valley,
        holiday=schedule.holidays.holiday_name(day),
        workday=workday,
        weekend=day.weekday() >= 5,
    )


def _member_segments(own: Schedule, team: Schedule, day: date) -> tuple[list[Segment], datetime]:
    start = _local_midnight(day, own)
    end = _local_midnight(day + timedelta(days=1), own)
    mine, theirs = segments(start, end, own), segments(start, end, team)
    cuts = sorted({seg.start for seg in mine} | {seg.start for seg in theirs} | {end})
    found: list[Segment] = []
    for begin, until in itertools.pairwise(cuts):
        a, b = _state_at(mine, begin), _state_at(theirs, begin)
        state = a.state if SEVERITY[a.state] >= SEVERITY[b.state] else b.state
        peak = a.peak or b.peak
        if found and found[-1].state is state and found[-1].peak == peak:
            found[-1] = Segment(found[-1].start, until, state, peak)
        else:
            found.append(Segment(begin, until, state, peak))
    return found, end


def member_day_plan(own: Schedule, team: Schedule, day: date) -> tuple[PlanSegment, ...]:
    """A team member's local date ``day`` (on their own clock) as the two
    schedules together draw it: at each instant the harsher of the two states,
    peak where either has peak hours (issue 26: harsher wins, also in the plan
    a status display shows). The team's schedule may keep another clock: both
    are walked over the same instants, the member's midnight to midnight."""
    found, end = _member_segments(own, team, day)
    return _plan(found, end, own)
