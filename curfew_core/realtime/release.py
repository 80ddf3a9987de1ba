"""Memory back to the system after a crowd of capsules leaves (issue 40).

When ten thousand sockets close, Python frees every object they held (the
tables here and in ``hub``, ``alarms`` and ``consumers`` are emptied and their
capacity dropped: ``tests/realtime/test_capsule_crowd_leaves.py``), but the
process's resident set barely moves: the memory stays with the allocators.
Python's small-object allocator gives an arena (1 MiB) back only once every
block in it is free, and a few long-lived objects allocated meanwhile keep
most arenas; glibc's ``malloc`` keeps freed chunks in its heaps, one per
thread that allocated (the sync-to-async threads have their own), until
``malloc_trim`` hands the free pages back.

So once the process's open capsules fall to half of their peak, and at least
``CROWD`` sockets have gone, it runs ``malloc_trim(0)`` once, a few seconds
later (in a thread: it walks every heap under its lock). Measured with 5,000
sockets on ``bin/serve``'s configuration it gave back 15 MiB of the 100 MiB
the crowd left behind; the rest is the small-object allocator's, which only a
new process returns. A last resort, and cheap: one call per crowd, none while
sockets come and go in ones and twos. Without glibc (musl, macOS) nothing runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("curfew.realtime")

#: Sockets that must have gone since the peak before memory is handed back.
CROWD = 1000
#: Seconds after the crowd fell below half its peak: the rest of it leaves meanwhile.
DELAY_SECONDS = 5.0


def _load_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Any = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    function: Callable[[int], int] = trim
    return function


_trim = _load_trim()

#: Open capsule sockets in this process, and their peak since the last release.
_open = 0
_peak = 0
_pending: asyncio.TimerHandle | None = None
#: Releases run (for tests and diagnostics).
releases = 0


def opened() -> None:
    """A capsule socket was accepted."""
    global _open, _peak
    _open += 1
    _peak = max(_peak, _open)


def closed() -> None:
    """An accepted capsule socket closed; a crowd gone schedules one release."""
    global _open, _pending
    _open = max(0, _open - 1)
    if _pending is not None or _peak - _open < CROWD or _open > _peak // 2:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _pending = loop.call_later(DELAY_SECONDS, _start, loop)


def _start(loop: asyncio.AbstractEventLoop) -> None:
    global _pending, _peak
    _pending = None
    _peak = _open  # the next crowd is measured from here
    task = loop.create_task(asyncio.to_thread(release))
    _running.add(task)
    task.add_done_callback(_running.discard)


#: The release under way, held so the loop does not drop it half-way.
_running: set[asyncio.Task[None]] = set()


def release() -> None:
    """Hand the allocators' free pages back to the system (glibc only)."""
    global releases
    releases += 1
    if _trim is None:
        return
    try:
        _trim(0)
    except Exception:  # never worth more than a line
        log.debug("capsule release: malloc_trim failed", exc_info=True)


def reset() -> None:
    """Forget the counts (tests)."""
    global _open, _peak, _pending, releases
    if _pending is not None:
        _pending.cancel()
    _open = _peak = releases = 0
    _pending = None
