"""Shared helpers for the engine suite (imported as a plain module: no packages)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import date, datetime, timedelta, tzinfo
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
    """The app-side adapter in miniature: ``holidays`` CN plus extra dates."""

    def __init__(self, extra: Iterable[date] = ()) -> None:
        self._calendar = holidays.country_holidays("CN")
        self._extra = frozenset(extra)

    def holiday_name(self, day: date) -> str | None:
        if day in self._extra:
            return "personal holiday"
        name = self._calendar.get(day)
        return None if name is None else str(name)


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
