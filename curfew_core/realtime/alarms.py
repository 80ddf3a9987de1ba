"""Shared wake-up timers: one event-loop timer per distinct instant, not per socket.

Capsules of one user (and of users on one schedule) wake at the same instants:
a boundary, an override's end, the local midnight. Ten thousand sockets were
ten thousand timer handles firing one by one; here the sockets that wake at
one instant share one handle, and it wakes all of them in one callback. The
last socket to leave an instant cancels its handle.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from curfew_core.realtime import clock, timers


class Sleeper(Protocol):
    def on_timer(self) -> None:
        """The instant it asked for has come by the wall clock too (called from the
        loop; must not block)."""


@dataclass(eq=False)
class Alarm:
    loop: asyncio.AbstractEventLoop
    at: datetime
    sleepers: set[Sleeper] = field(default_factory=set)
    handle: asyncio.TimerHandle | None = None

    def on_timer(self) -> None:
        """Wake every sleeper of this instant."""
        self.handle = None
        now = clock.now()
        if now < self.at:
            # The loop's monotonic timer ran ahead of the wall clock: wait the rest.
            # Checked here, once for every sleeper of the instant, not once each.
            self.schedule(now)
            return
        alarms = _alarms.get(self.loop)
        if alarms is not None and alarms.get(self.at) is self:
            del alarms[self.at]
        sleepers, self.sleepers = self.sleepers, set()
        for sleeper in sleepers:
            _armed.pop(sleeper, None)
            sleeper.on_timer()

    def schedule(self, now: datetime) -> None:
        delay = max(0.0, (self.at - now).total_seconds()) + timers.LATE.total_seconds()
        self.handle = self.loop.call_later(delay, self.on_timer)


#: Per event loop: instant → its alarm.
_alarms: dict[asyncio.AbstractEventLoop, dict[datetime, Alarm]] = {}
#: Sleeper → the alarm it waits for (one at most).
_armed: dict[Sleeper, Alarm] = {}


def arm(sleeper: Sleeper, wake_at: datetime, now: datetime) -> None:
    """Wake ``sleeper`` just after ``wake_at`` (replacing its earlier alarm, if any)."""
    disarm(sleeper)
    loop = asyncio.get_running_loop()
    alarms = _alarms.setdefault(loop, {})
    alarm = alarms.get(wake_at)
    if alarm is None:
        alarm = alarms[wake_at] = Alarm(loop, wake_at)
        alarm.schedule(now)
    alarm.sleepers.add(sleeper)
    _armed[sleeper] = alarm


def disarm(sleeper: Sleeper) -> None:
    """Forget ``sleeper``'s alarm; the last sleeper of an instant cancels its timer."""
    alarm = _armed.pop(sleeper, None)
    if alarm is None:
        return
    if not _armed:
        # An emptied dict keeps its table (ten thousand sockets' worth): let it go.
        _armed.clear()
    alarm.sleepers.discard(sleeper)
    if alarm.sleepers:
        return
    if alarm.handle is not None:
        alarm.handle.cancel()
        alarm.handle = None
    alarms = _alarms.get(alarm.loop)
    if alarms is not None and alarms.get(alarm.at) is alarm:
        del alarms[alarm.at]
        if not alarms:
            del _alarms[alarm.loop]
