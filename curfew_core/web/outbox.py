"""Mail sent off the request path.

A password-reset request used to send its mail before answering, so an
address with an account took the mail server's time (55 ms) and one without
took none (10 ms): the answer's timing told which addresses have accounts
(issue 23, finding 6). The request now only looks the address up (one query,
the same for either) and hands the mail to this pool, and answers at once.

One small pool per process; a failed send is logged (the person asked for a
mail and may ask again; the answer never said whether one would come). At
interpreter exit the pool finishes what it holds, each send bounded by
``EMAIL_TIMEOUT``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

log = logging.getLogger("curfew.outbox")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pending: set[Future[None]] = set()


def _run(job: Callable[[], None], what: str) -> None:
    try:
        job()
    except Exception:
        log.exception("%s failed", what)


def send_later(job: Callable[[], None], what: str) -> None:
    """Run ``job`` (a send) on the outbox's thread, after this returns."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="curfew-outbox")
        future = _pool.submit(_run, job, what)
        _pending.add(future)
    future.add_done_callback(_pending.discard)


def drain(timeout: float = 30.0) -> None:
    """Wait until every mail handed over so far is sent or has failed (tests)."""
    with _lock:
        pending = set(_pending)
    wait(pending, timeout=timeout)
