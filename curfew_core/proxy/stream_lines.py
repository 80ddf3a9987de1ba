"""An event stream's complete lines, as its chunks pass through the proxy.

The scans that read an answer on its way (its usage for the ledger,
``proxy.usage``; a stored response's id, ``proxy.stored_owner``) each take
the lines a chunk completes and keep the unfinished one for the next chunk.
A line longer than :data:`MAX_LINE` is dropped and skipped up to its end: a
``response.completed`` event carries the whole answer, so lines of megabytes
are honest, but an endless one must not be held whole (nor copied again for
every chunk).
"""

from __future__ import annotations

#: The longest line a scan keeps while it waits for the line's end.
MAX_LINE = 4 * 2**20


class StreamLines:
    """Feed it chunks; each :meth:`feed` returns the lines they completed."""

    __slots__ = ("_skipping", "rest")

    def __init__(self) -> None:
        #: The line begun and not yet ended (``b""`` while skipping one).
        self.rest = b""
        #: Inside a line past ``MAX_LINE``: dropped up to its end.
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._skipping:
            at = chunk.find(b"\n")
            if at < 0:
                return []
            self._skipping = False
            chunk = chunk[at + 1 :]
        lines = (self.rest + chunk).split(b"\n")
        self.rest = lines.pop()
        if len(self.rest) > MAX_LINE:
            self.rest = b""
            self._skipping = True
        return lines

    def take_rest(self) -> bytes:
        """The last line, which no newline ended (the stream is over)."""
        rest, self.rest = self.rest, b""
        return rest
