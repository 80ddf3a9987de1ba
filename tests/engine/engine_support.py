"""Shared helpers for the engine suite (imported as a plain module: no packages)."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import holidays
from hypothesis import HealthCheck, settings

from curfew_core.engine import Schedule, Verdict, parse_wall

SHANGHAI = ZoneInfo("Asia/Shanghai")
TICK = timedelta(microseconds=1)

#: Hypothesis budget for the property tests; raise it locally with the env var.
EXAMPLES = int(os.environ.get("ENGINE_HYPOTHESIS_EXAMPLES", "120"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class CNHolidays:
    """The app-side adapter in miniature: ``holidays`` CN (with its make-up
    workdays) plus the user's extra holidays and workdays, the user's own
    dates winning over the public ones."""

    def __init__(self, extra: Iterable[date] = (), workdays: Iterable[date] = ()) -> None:
        self._calendar = holidays.country_holidays("CN")
        self._extra = frozenset(extra)
        self._workdays = frozenset(workdays)

    def holiday_name(self, day: date) -> str | None:
        if day in self._extra:
            return "personal holiday"
        name = self._calendar.get(day)
        return None if name is None else str(name)

    def workday_name(self, day: date) -> str | None:
        if day in self._workdays:
            return "personal workday"
        if day in self._extra:
            return None
        # Load the year (and the next: a late-December make-up day may serve
        # the next New Year) so the package has filled in its make-up days.
        self._calendar.get(day)
        if day.year < 9999:
            self._calendar.get(date(day.year + 1, 1, 1))
        return "make-up workday" if day in self._calendar.weekend_workdays else None


CN = CNHolidays()


def cn_schedule(**changes: Any) -> Schedule:
    """The default schedule with the CN holiday calendar (the spec's reference)."""
    changes.setdefault("holidays", CN)
    return Schedule(**changes)


def local(
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    microsecond: int = 0,
    tz: tzinfo = SHANGHAI,
    fold: int = 0,
) -> datetime:
    """A real instant given as wall time in ``tz`` (default Asia/Shanghai)."""
    return datetime(year, month, day, hour, minute, second, microsecond, tzinfo=tz, fold=fold)


def hm(text: str) -> int:
    return parse_wall(text)


def decision(verdict: Verdict) -> tuple[Any, ...]:
    """The fields a gateway acts on; ``valid_until`` promises they hold."""
    return (
        verdict.state,
        verdict.action,
        verdict.reply,
        verdict.max_tokens,
        verdict.persona,
        verdict.tools,
        verdict.peak,
    )


# -- DST transitions ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Transition:
    zone: str
    instant: datetime  # first instant (UTC) with the new offset
    start_wall: datetime  # naive wall range of the gap or of the repeated stretch
    end_wall: datetime
    gap: bool

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    @property
    def middle(self) -> int:
        """A wall minute strictly inside the gap / repeated stretch."""
        wall = self.start_wall + (self.end_wall - self.start_wall) / 2
        return wall.hour * 60 + wall.minute


@functools.cache
def transitions(zone: str, year: int) -> tuple[Transition, ...]:
    """Every UTC offset change of ``zone`` in ``year``, found by scanning hourly."""
    tz = ZoneInfo(zone)
    found = []
    moment = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    before = moment.astimezone(tz).utcoffset()
    while moment < end:
        following = moment + timedelta(hours=1)
        after = following.astimezone(tz).utcoffset()
        if after != before:
            lo, hi = moment, following
            while hi - lo > TICK:
                mid = lo + (hi - lo) / 2
                if mid.astimezone(tz).utcoffset() == before:
                    lo = mid
                else:
                    hi = mid
            old_wall = (hi - TICK).astimezone(tz).replace(tzinfo=None) + TICK
            new_wall = hi.astimezone(tz).replace(tzinfo=None)
            gap = new_wall > old_wall
            found.append(
                Transition(zone, hi, *(old_wall, new_wall) if gap else (new_wall, old_wall), gap)
            )
        before = after
        moment = following
    return tuple(found)
