"""When a connected capsule must look at the state again, with no polling loop."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

#: Wall-clock time may jump (NTP, a suspended VM) while event-loop timers run
#: on the monotonic clock, so a far wake-up is re-checked at least this often.
MAX_SLEEP = timedelta(hours=1)
#: Fire just after the instant, so the re-read is on the far side of the edge.
LATE = timedelta(milliseconds=15)


def next_local_midnight(now: datetime, timezone_name: str) -> datetime:
    """The next 00:00 in ``timezone_name`` after ``now`` (the day plan rolls over)."""
    tz = ZoneInfo(timezone_name)
    local = now.astimezone(tz)
    day = local.date() + timedelta(days=1)
    # Where 00:00 does not exist (a DST gap) ``fold`` lands it on the real instant after.
    midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
    return midnight if midnight > now else now + timedelta(hours=1)


def recheck_at(now: datetime) -> datetime:
    """``MAX_SLEEP`` from ``now``, down to the whole minute: sockets opened within
    one minute then share one timer (``alarms``) instead of one each."""
    return (now + MAX_SLEEP).replace(second=0, microsecond=0)


def next_wake(payload: dict[str, Any], now: datetime) -> datetime:
    """The verdict's ``valid_until`` (schedule edges, budget steps, override
    expiry), the local midnight (``day`` changes), or the hourly re-check: the earliest."""
    candidates = [recheck_at(now), datetime.fromisoformat(payload["valid_until"])]
    # A zone the engine accepted is known here too; an odd one only loses the midnight wake.
    with suppress(KeyError, ValueError):
        candidates.append(next_local_midnight(now, payload["timezone"]))
    return min(candidates)
