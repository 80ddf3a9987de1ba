"""The edge's one way to run sync work (a cold token check, a user's rows).

A warm request never leaves the event loop. A cold one hops once to a thread
of a pool shared by every request, between Django's request signals (their
handlers tidy that thread's database connection, as Django's handler does
around a sync view): no thread is started per request, and the pool's
threads, and the connections Django keeps per thread, live on as under WSGI.

Under ``async_to_sync`` (a test driving the app from its own thread, inside
its transaction) the work runs on that parent thread instead, as Django's
own async test client arranges.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, sync_to_async
from django.core import signals

T = TypeVar("T")

#: Threads for cold work, shared by every request of the process (a burst of
#: cold requests queues for them rather than starting threads without bound).
POOL_THREADS = 32
_pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="curfew-edge")


class EdgeThread:
    """The sender of the request signals the edge sends around sync work."""


async def run_sync(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` on a pooled thread, between the request signals."""

    def call() -> T:
        signals.request_started.send(sender=EdgeThread)
        try:
            return function(*args)
        finally:
            signals.request_finished.send(sender=EdgeThread)

    if getattr(AsyncToSync.executors, "current", None) is not None:
        # A parent sync thread (a test): run there, inside its transaction.
        return await sync_to_async(call, thread_sensitive=True)()
    return await sync_to_async(call, thread_sensitive=False, executor=_pool)()
