"""Overrides a person sets by hand, and the parsing of their arguments.

Every override is bounded in time (none is silently permanent): overtime has
its duration, "off" lasts until the next wake-up, the time machine ("pretend it
is ...") until its end, and every verdict names the one in force.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from curfew_core.engine.clock import parse_wall, to_wall

MAX_OVERTIME = timedelta(hours=24)
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$", re.ASCII)


class OverrideError(ValueError):
    """An override argument that cannot be understood; the message says why.

    Raised with a ``%(name)s`` template and its parameters, the error keeps
    both (``template``, ``params``) beside the English text, so a door that
    speaks the reader's language can say it again (``override_commands``
    turns them into a ``schema.messages.Message``; the engine imports no app).
    """

    template: str
    params: dict[str, object]
    #: The request field at fault, when a door knows better than its first key.
    field: str | None = None

    def __init__(self, message: str, /, **params: object) -> None:
        super().__init__(message % params if params else message)
        self.template = message
        self.params = params


@dataclass(frozen=True, slots=True)
class Overrides:
    #: Real instant until which the curfew is suspended (overtime).
    overtime_until: datetime | None = None
    #: Real instant until which the AI is forced to lights-out ("off").
    forced_off_until: datetime | None = None
    #: The time machine: read the schedule at this instant instead of now.
    debug_at: datetime | None = None
    #: Real instant the time machine ends ("pretend it is ..." expires): from
    #: then on it is as if cleared. ``None``: until cleared.
    debug_until: datetime | None = None

    def for_what_if(self) -> Overrides:
        """These overrides for a what-if at an explicit instant ("what if it
        were then?"): the instant replaces the time machine, so it goes;
        overtime and force-off are judged as of that instant."""
        return Overrides(self.overtime_until, self.forced_off_until, None)

    def debug_at_now(self, now: datetime) -> datetime | None:
        """The time machine's moment if it is still on at the real ``now``."""
        if self.debug_at is None or (self.debug_until is not None and self.debug_until <= now):
            return None
        return self.debug_at


_TOO_LONG = "%(text)s is longer than the 24h an overtime may last"


def parse_duration(text: str) -> timedelta:
    """``30m``, ``2h``, ``90s``, ``1h30m``; a bare number is minutes. 1s..24h."""
    cleaned = text.strip().lower().replace(" ", "")
    # ``isdigit`` alone also admits "²" and friends, which ``int`` refuses.
    if cleaned.isascii() and cleaned.isdigit():
        hours, minutes, seconds = 0, int(cleaned), 0
    else:
        match = _DURATION.match(cleaned)
        if not cleaned or match is None or not any(match.groups()):
            raise OverrideError(
                "%(text)s is not a duration; use e.g. 30m, 2h, 90s, 1h30m or a number of minutes",
                text=repr(text),
            )
        hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    try:
        duration = timedelta(hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise OverrideError(_TOO_LONG, text=repr(text)) from None
    if duration <= timedelta(0):
        raise OverrideError("%(text)s is not a positive duration", text=repr(text))
    if duration > MAX_OVERTIME:
        raise OverrideError(_TOO_LONG, text=repr(text))
    return duration


def parse_debug_moment(text: str, *, now: datetime, tz: tzinfo) -> datetime:
    """The time machine's target instant.

    ``HH:MM`` is the next time the clock in ``tz`` reads that (from ``now``),
    so ``debug 01:30`` in the evening means tonight. ``YYYY-MM-DD HH:MM`` (or
    ``T`` between) is that wall time in ``tz``; a full ISO instant with an
    offset is taken as it is.
    """
    cleaned = text.strip()
    try:
        minutes = parse_wall(cleaned)
    except ValueError:
        pass
    else:
        wall_now = to_wall(now, tz)
        midnight = wall_now.replace(hour=0, minute=0, second=0, microsecond=0)
        # The clock reading HH:MM right now still counts: from the current minute.
        since = now.astimezone(UTC) - timedelta(
            seconds=wall_now.second, microseconds=wall_now.microsecond
        )
        # Compared as UTC instants: a repeated hour shows HH:MM twice (``fold``),
        # a DST gap not at all, and same-zone comparisons would ignore both.
        readings: list[datetime] = []
        for days in (0, 1, 2):
            wall = midnight + timedelta(days=days, minutes=minutes)
            for fold in (0, 1):
                instant = wall.replace(tzinfo=tz, fold=fold)
                real = instant.astimezone(UTC)
                # Only a reading the clock really shows (not a wall time in a gap).
                if to_wall(real, tz) == wall and real >= since:
                    readings.append(instant)
        fallback = (midnight + timedelta(days=1, minutes=minutes)).replace(tzinfo=tz)
        return min(readings, key=lambda instant: instant.astimezone(UTC), default=fallback)
    if re.match(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", cleaned) is None:
        raise OverrideError(
            "%(text)s is not a moment; use HH:MM or YYYY-MM-DD HH:MM (or 'clear')", text=repr(text)
        )
    try:
        parsed = datetime.fromisoformat(cleaned)
    except ValueError as exc:
        raise OverrideError(
            "%(text)s is not a valid date and time: %(problem)s", text=repr(text), problem=str(exc)
        ) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=tz)
    return parsed
