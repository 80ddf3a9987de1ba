"""One log line per outage, not one per request.

While PostgreSQL or Redis is away, every request that needs it fails the same
way, and each used to say so: a warning per warm verdict answered from the
last known rows, a traceback per 503. A three-second PostgreSQL cut under
load wrote 4,400 lines and 66 tracebacks for two workers (issue 41,
``tests/production/test_postgres_gone_under_load.py``), which buries the one
line an operator needs.

A :class:`Notice` says the first failure of an outage (with its traceback
when asked), counts the rest quietly, says once every ``REPEAT_SECONDS`` how
many more there were while it lasts, and, when its caller sees the storage
answer again (``over``), once that it is over. A failure after
``REPEAT_SECONDS`` without one starts a new outage. Per process: each worker
says its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

#: While an outage lasts, how often it is said again (with a count).
REPEAT_SECONDS = 60.0


class Notice:
    """The failures of one kind (one place that fails the same way each time)."""

    def __init__(
        self,
        logger: logging.Logger,
        level: int = logging.WARNING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = logger
        self.level = level
        self.clock = clock
        self._lock = threading.Lock()
        #: When the outage began (``time.monotonic``), ``None``: none now.
        self._since: float | None = None
        self._last = 0.0
        self._said = 0.0
        self._unsaid = 0
        self._count = 0

    def failed(self, message: str, *args: object, exc_info: bool = False) -> None:
        """Log ``message % args`` if it is the outage's first failure or the
        last was said ``REPEAT_SECONDS`` ago; else only count it."""
        now = self.clock()
        with self._lock:
            new = self._since is None or now - self._last > REPEAT_SECONDS
            self._last = now
            if new:
                self._since, self._count, self._unsaid = now, 0, 0
            self._count += 1
            if not new and now - self._said < REPEAT_SECONDS:
                self._unsaid += 1
                return
            unsaid, self._unsaid, self._said = self._unsaid, 0, now
        if new:
            self.log.log(self.level, message, *args, exc_info=exc_info)
        else:
            self.log.log(
                self.level, message + " (still; %d more since)", *args, unsaid, exc_info=False
            )

    def over(self, what: str) -> None:
        """The storage answered again: say once that the outage is over (a
        bare attribute read when there was none)."""
        if self._since is None:
            return
        with self._lock:
            since, count = self._since, self._count
            if since is None:
                return
            self._since = None
        self.log.warning(
            "%s again after %.1f s (%d failures meanwhile)", what, self.clock() - since, count
        )
