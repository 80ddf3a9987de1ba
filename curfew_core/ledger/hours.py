"""The user's local hour of an instant, correct across DST changes (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo


@dataclass(frozen=True, slots=True)
class LocalHour:
    #: The UTC instant the local hour began (unique per hour, DST or not).
    start: datetime
    local_date: date
    local_hour: int


def local_hour(instant: datetime, zone: ZoneInfo) -> LocalHour:
    """The local hour ``instant`` falls in. On a fall-back night the repeated
    hour is two hours (the ``fold`` is kept, so each has its own UTC start); on
    a spring-forward night the skipped hour never occurs. Zones whose offset is
    not whole hours start their hours where their clocks do (``:30`` UTC)."""
    local = instant.astimezone(zone)
    top = local.replace(minute=0, second=0, microsecond=0)
    return LocalHour(start=top.astimezone(UTC), local_date=top.date(), local_hour=top.hour)
