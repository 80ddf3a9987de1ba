"""Push mode without I/O: what the change stream's events do to the cache.

The server streams ``GET /api/v1/changes`` (server-sent events): a ``ready``
event once it listens, a ``change`` event after every committed save or
override of the token's user, an ``end`` event when it stops (the token was
revoked), and a comment line as a heartbeat. Like a feature-flag SDK's
streaming mode, the client keeps one such stream per token and drops its cache
on every change; both flavours (a thread, a task) only read lines and hand
them to ``ChangeFeed``.

The rules, so that push never serves a verdict longer than polling would
have when the stream is not there to vouch for it:

- ``ready``: the cache is dropped (a change may have happened while no stream
  listened) and entries stay fresh until ``valid_until``;
- ``change``: the cache is dropped;
- the stream ends or fails: entries fall back to ``min(valid_until,
  fetched_at + max_age)`` at once, and the stream is retried with backoff.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass

from curfew_client.policy import VerdictCache

log = logging.getLogger("curfew.client")

#: The client's read timeout on the stream: a few of the server's heartbeats
#: (every 15 s), so a connection that died silently is noticed within it.
STREAM_READ_TIMEOUT = 45.0
#: Connecting to the stream may take longer than a verdict may (it is off the hot path).
STREAM_CONNECT_TIMEOUT = 5.0
#: Reconnection backoff: doubled from the first to the longest, with jitter.
FIRST_RETRY = 0.5
LONGEST_RETRY = 30.0


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    data: str


class SseParser:
    """Server-sent events from lines (the WHATWG rules this stream needs:
    ``event:``, ``data:``, comments, a blank line ends an event)."""

    def __init__(self) -> None:
        self._name = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        line = line.rstrip("\r\n")
        if not line:
            if not self._name and not self._data:
                return None
            event = Event(self._name or "message", "\n".join(self._data))
            self._name, self._data = "", []
            return event
        if line.startswith(":"):
            return None  # a heartbeat
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None


class StreamRefused(Exception):
    """The server answered the stream request with an error (``retry_after``: its advice)."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"change stream refused: HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def retry_after(value: str | None) -> float | None:
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())


class ChangeFeed:
    """The stream's effect on one ``VerdictCache``, and when to reconnect."""

    def __init__(self, cache: VerdictCache, url: str) -> None:
        self.cache = cache
        self.url = url
        #: Events handled since the client was made (diagnostics and tests).
        self.changes = 0
        self.connects = 0
        self._failures = 0
        self._parser = SseParser()
        self.ended_by_server: str | None = None

    @property
    def live(self) -> bool:
        return self.cache.pushed

    def connected(self) -> None:
        """A new response began: parse it from scratch."""
        self._parser = SseParser()

    def line(self, text: str) -> None:
        """One line of the stream."""
        event = self._parser.feed(text)
        if event is None:
            return
        if event.name == "ready":
            # Entries were fetched with no stream vouching for them: start over.
            self.cache.clear()
            self.cache.set_pushed(True)
            self.connects += 1
            self._failures = 0
            self.ended_by_server = None
            log.info("curfew change stream %s is live", self.url)
        elif event.name == "change":
            # A team key's stream names the member whose verdict changed; a
            # team's schedule change (or a personal stream) drops everything.
            user = _member(event.data)
            if user is not None:
                self.cache.clear_user(user)
            else:
                self.cache.clear()
            self.changes += 1
        elif event.name == "end":
            self.ended_by_server = _reason(event.data)
            self.cache.set_pushed(False)

    def down(self, error: BaseException | None = None) -> float:
        """The stream ended or failed: fall back to ``max_age`` freshness, and
        return how long to wait before reconnecting."""
        was_live = self.cache.pushed
        self.cache.set_pushed(False)
        self._failures += 1
        delay = min(LONGEST_RETRY, FIRST_RETRY * 2 ** min(self._failures - 1, 16))
        if isinstance(error, StreamRefused):
            if error.status in (401, 403):
                delay = LONGEST_RETRY  # a revoked token stays revoked
            if error.retry_after is not None:
                delay = max(delay, error.retry_after)
        if was_live or self._failures == 1:
            why = self.ended_by_server or (repr(error) if error is not None else "ended")
            log.warning(
                "curfew change stream %s is down (%s); caching by max_age until it is back",
                self.url,
                why,
            )
        # Jitter: a fleet that lost one server does not come back in step.
        return float(delay * (0.5 + random.random() / 2))  # noqa: S311 - not a secret


def _member(data: str) -> str | None:
    """The member a team key's ``change`` names, if it names one."""
    try:
        payload = json.loads(data) if data else None
    except ValueError:
        return None
    if isinstance(payload, dict):
        user = payload.get("user")
        if isinstance(user, str) and user:
            return user
    return None


def _reason(data: str) -> str:
    try:
        payload = json.loads(data)
    except ValueError:
        return data or "ended by the server"
    if isinstance(payload, dict):
        return str(payload.get("reason", "ended by the server"))
    return "ended by the server"
