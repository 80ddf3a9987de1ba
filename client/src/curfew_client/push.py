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

What the stream can do to a client is bounded, whoever writes it (a broken
server, or a man in the middle on plain ``http``): a line longer than
``MAX_LINE`` or an event larger than ``MAX_EVENT`` drops the connection
(``StreamBroken``: the stream is down, entries age by ``max_age``), a
``Retry-After`` is believed up to ``LONGEST_ADVICE``, and data that is not what
a ``change`` carries drops the whole cache (the safe reading: the next call
asks). Nothing the stream says can make a verdict fresher than the server's
own ``valid_until``, or change one: it only ever drops entries.
"""

from __future__ import annotations

import json
import logging
import random
import re
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
#: The longest ``Retry-After`` believed (a larger one, or a hostile one, would
#: keep push mode off for good; beyond this the stream is simply asked again).
LONGEST_ADVICE = 600.0
#: The longest line the stream may send. Every line the server writes is short
#: (a ``change`` names one member); a longer one is a broken or hostile stream,
#: which must not grow the client's memory without bound.
MAX_LINE = 64 * 1024
#: The most one event's data lines may carry together.
MAX_EVENT = 64 * 1024
#: The most of an ``end`` event's reason that is logged.
MAX_REASON = 200


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    data: str


class StreamBroken(Exception):
    """The stream sent what no Curfew server writes (a line or an event past
    its bound): the connection is dropped and asked again later."""


class LineSplitter:
    """Lines from a byte stream (``\\n``, ``\\r\\n`` or ``\\r``, as SSE allows),
    holding at most ``limit`` bytes of an unfinished line: past it,
    ``StreamBroken`` (httpx's own ``iter_lines`` buffers a line without bound)."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self._limit = limit
        self._partial = bytearray()
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[str]:
        if not chunk:
            return []
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the rest of a "\r\n" split between two chunks
        self._after_cr = chunk.endswith(b"\r")
        lines: list[str] = []
        start = 0
        for found in _NEWLINE.finditer(chunk):
            piece = chunk[start : found.start()]
            if self._partial:
                self._partial += piece
                piece, self._partial = bytes(self._partial), bytearray()
            if len(piece) > self._limit:
                raise StreamBroken(f"a line longer than {self._limit} bytes")
            lines.append(piece.decode("utf-8", "replace"))
            start = found.end()
        self._partial += chunk[start:]
        if len(self._partial) > self._limit:
            self._partial = bytearray()
            raise StreamBroken(f"a line longer than {self._limit} bytes")
        return lines


_NEWLINE = re.compile(rb"\r\n|\r|\n")


class SseParser:
    """Server-sent events from lines (the WHATWG rules this stream needs:
    ``event:``, ``data:``, comments, a blank line ends an event). One event's
    data is held up to ``limit`` characters: past it, ``StreamBroken``."""

    def __init__(self, limit: int = MAX_EVENT) -> None:
        self._name = ""
        self._data: list[str] = []
        self._size = 0
        self._limit = limit

    def feed(self, line: str) -> Event | None:
        line = line.rstrip("\r\n")
        if not line:
            if not self._name and not self._data:
                return None
            event = Event(self._name or "message", "\n".join(self._data))
            self._name, self._data, self._size = "", [], 0
            return event
        if line.startswith(":"):
            return None  # a heartbeat
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value[:MAX_REASON]
        elif field == "data":
            self._size += len(value) + 1
            if self._size > self._limit:
                self._name, self._data, self._size = "", [], 0
                raise StreamBroken(f"an event larger than {self._limit} characters")
            self._data.append(value)
        return None


class StreamRefused(Exception):
    """The server answered the stream request with an error (``retry_after``: its advice)."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"change stream refused: HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def retry_after(value: str | None) -> float | None:
    """The server's ``Retry-After`` in seconds (at most ``LONGEST_ADVICE``)."""
    if value is None or not value.strip().isascii() or not value.strip().isdigit():
        return None
    return min(float(value.strip()), LONGEST_ADVICE)


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
        self._lines = LineSplitter()
        self.ended_by_server: str | None = None

    @property
    def live(self) -> bool:
        return self.cache.pushed

    def connected(self) -> None:
        """A new response began: parse it from scratch."""
        self._parser = SseParser()
        self._lines = LineSplitter()

    def chunk(self, data: bytes) -> None:
        """Bytes of the stream as they came (split into lines here, bounded:
        ``StreamBroken`` past ``MAX_LINE``)."""
        for text in self._lines.feed(data):
            self.line(text)

    def line(self, text: str) -> None:
        """One line of the stream."""
        event = self._parser.feed(text)
        if event is None:
            return
        if event.name == "ready":
            # Entries were fetched with no stream vouching for them: start over.
            self.cache.clear()
            was_live = self.cache.pushed
            self.cache.set_pushed(True)
            self.connects += 1
            self._failures = 0
            self.ended_by_server = None
            if not was_live:  # a stream repeating ``ready`` is not logged each time
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
                delay = max(delay, min(error.retry_after, LONGEST_ADVICE))
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
    except (ValueError, RecursionError):  # not what a change carries: drop everything
        return None
    if isinstance(payload, dict):
        user = payload.get("user")
        if isinstance(user, str) and user:
            return user
    return None


def _reason(data: str) -> str:
    """Why the server ended the stream, in at most ``MAX_REASON`` characters (it is logged)."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return data[:MAX_REASON] or "ended by the server"
    if isinstance(payload, dict):
        return str(payload.get("reason", "ended by the server"))[:MAX_REASON]
    return "ended by the server"
