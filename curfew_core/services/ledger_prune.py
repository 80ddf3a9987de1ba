"""The ledger pruned by the servers themselves: raw decisions past
``CURFEW_LEDGER_RETENTION_DAYS`` go once an hour (issue 40: ``curfew prune``
existed, but nothing ran it, so the ledger grew without end).

Each process that records decisions starts, with its flusher
(``services.ledger_recorder``), a daemon thread of its own: it waits a
random part of the first hour (so the workers started together do not all
come at once), then prunes at most once an hour. Never on a request's thread,
and never one long transaction: ``services.ledger.decisions_prune`` deletes
by the index, a few thousand rows a statement, each its own transaction.

N processes do not all prune: a process first takes a stamp in the shared
cache (``cache.add``: Redis in production, so one process an hour in the
whole deployment), then, on PostgreSQL, a session advisory lock
(``pg_try_advisory_lock``), so two never prune at once even when the cache
is the process's own or was flushed. A process that finds either taken skips
this hour. SQLite (one machine) has one writer at a time already, and each
batch is short.

``prune_if_due`` is the one step, called by the thread and by the tests.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from curfew_core.services.ledger import decisions_prune
from curfew_core.services.stored_responses import stored_response_cutoff, stored_responses_prune

log = logging.getLogger("curfew.ledger")

#: At most one prune an hour, per process and (by the cache stamp) per deployment.
PRUNE_EVERY_SECONDS = 3600.0
#: The cache stamp's key: taken by the process that prunes this hour.
STAMP_KEY = "curfew:ledger:pruned"
#: The PostgreSQL advisory lock's key (any fixed 64-bit number: "curfew-pr").
LOCK_KEY = 0x637572666577_7072

_lock = threading.Lock()
_start_lock = threading.Lock()
#: When this process last pruned (or tried), by the monotonic clock.
_last: float | None = None
_thread: threading.Thread | None = None
_thread_pid: int | None = None
_stop = threading.Event()


def retention_cutoff(now: datetime) -> datetime:
    return now - timedelta(days=settings.CURFEW_LEDGER_RETENTION_DAYS)


def _stamp_taken() -> bool:
    """Take this hour's stamp in the shared cache; False if another process
    has it. A cache that cannot be reached takes nothing from the prune: the
    advisory lock still keeps it one at a time."""
    try:
        return bool(cache.add(STAMP_KEY, os.getpid(), timeout=int(PRUNE_EVERY_SECONDS)))
    except Exception:  # a cache outage must not stop the prune
        log.warning("ledger prune: the cache could not be reached; pruning without its stamp")
        return True


@contextlib.contextmanager
def _exclusive() -> Iterator[bool]:
    """On PostgreSQL, this process alone prunes while it holds the lock
    (yields False if another holds it); elsewhere, yields True."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
        row = cursor.fetchone()
    held = bool(row and row[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def prune_if_due(*, now: datetime | None = None, clock: float | None = None) -> int | None:
    """Prune past the retention if this process has not in the last hour and
    no other process is, or did this hour. Returns how many decisions went,
    or None when it was not this process's turn. The owners of stored
    responses past the upstream's retention go in the same turn
    (``services.stored_responses``)."""
    global _last
    moment = time.monotonic() if clock is None else clock
    with _lock:
        if _last is not None and moment - _last < PRUNE_EVERY_SECONDS:
            return None
        _last = moment
    if not _stamp_taken():
        return None
    with _exclusive() as mine:
        if not mine:
            return None
        moment_now = now or timezone.now()
        before = retention_cutoff(moment_now)
        started = time.monotonic()
        deleted = decisions_prune(before=before)
        # The owners of stored responses the upstream no longer keeps: the
        # same hourly turn, so no other thread or schedule.
        owners = stored_responses_prune(before=stored_response_cutoff(moment_now))
    if owners:
        log.info("stored responses: pruned %d owner record(s) past the upstream's", owners)
    if deleted:
        log.info(
            "ledger: pruned %d decision(s) older than %s in %.1f s",
            deleted,
            before.isoformat(),
            time.monotonic() - started,
        )
    return deleted


def _run(first_wait: float) -> None:
    wait = first_wait
    while not _stop.wait(wait):
        try:
            prune_if_due()
        except Exception:  # the thread must outlive a failed prune: next hour again
            log.exception("ledger: the hourly prune failed; tried again in an hour")
        finally:
            with contextlib.suppress(Exception):
                connection.close()  # not held for an hour between prunes
        wait = PRUNE_EVERY_SECONDS


def start(*, first_wait: float | None = None) -> None:
    """Start this process's pruner, once (again in a forked child: threads do
    not follow a fork). Returns at once; the first prune comes after
    ``first_wait`` seconds (by default a random part of the first hour)."""
    global _thread, _thread_pid
    if first_wait is None:
        first_wait = random.uniform(60.0, PRUNE_EVERY_SECONDS)  # noqa: S311 - spreading, not secrecy
    with _start_lock:
        if _thread is not None and _thread_pid == os.getpid() and _thread.is_alive():
            return
        _stop.clear()
        _thread_pid = os.getpid()
        _thread = threading.Thread(
            target=_run,
            args=(first_wait,),
            name="curfew-ledger-prune",
            daemon=True,
        )
        _thread.start()


def stop() -> None:
    """Stop the pruner (tests)."""
    global _thread
    _stop.set()
    thread, _thread = _thread, None
    if thread is not None and thread.is_alive():
        thread.join(timeout=5)


def reset() -> None:
    """Forget when this process last pruned (tests)."""
    global _last
    with _lock:
        _last = None
