"""The recorder: ``record()`` on the hot path, batches written in the background.

``record(entry)`` adds the decision to this process's batch, in the shape it
is stored (``ledger.batch``: its raw row and its tally, about 2 µs under an
uncontended lock, no I/O) and, the first time, starts the flusher: a daemon
thread that writes what has gathered at most every
``CURFEW_LEDGER_FLUSH_SECONDS`` (1 s; sooner once ``FLUSH_ROWS`` wait), and
once more at exit. Each batch is taken early by the time writing lately took,
so a decision is stored within that second of its recording while a write
takes less than half of it (then within about two writes). So a request
never waits for the database, the flusher has no Python work per decision to
hold the GIL with, and a crashed process loses at most the last second of
decisions (``tests/ledger/test_crash.py`` and ``test_chaos.py`` kill one,
also with slow writes and under load, to prove it). An entry that names only
its token or carries a gateway's own id waits as it is: the flusher finds its
user and drops a repeated report, once per batch.

A stop signal is not a crash: uvicorn's workers drain their requests and then
die of the re-raised SIGTERM, where no exit hook runs. So the site's ASGI
lifespan ``shutdown`` writes the batch and the server waits for it
(``edge.lifespan``, ``tests/ledger/test_served_exit.py``). For a server
without the lifespan, the first record also chains the stop signals' handlers
(from the main thread, or through the ASGI server's loop), and once one
arrives every record wakes the flusher at once.

``flush()`` writes everything buffered now, on the caller's thread and
connection: tests call it (inside their own transaction, which the flusher's
thread could not see on PostgreSQL), and so does the exit hook. With
``CURFEW_LEDGER_FLUSH_SECONDS`` at 0 no thread is started (the test settings):
only ``flush()`` writes.

If the database is away (an ``OperationalError``: unreachable, locked, timed
out), the batch is kept and retried at the next tick; the buffer holds at
most ``MAX_BUFFERED`` raw rows, the oldest dropped beyond that (counted in
``dropped``), so an outage cannot eat memory. Their
tallies are kept (a few per user and minute), so the hourly totals still
count them; beyond ``MAX_BUFFERED`` tallies the oldest minutes go too. The
bound also holds while a write hangs (a database that took the connection
and stopped answering: nothing is taken from the batch meanwhile): a record
that finds ``FLUSH_ROWS`` more than it drops the oldest (issue 41). Either
is said once per outage, not per tick (``store.outage_log``).

Any other refusal may be one row's (a number out of a column's range): the
batch is written in halves, and theirs, so the good rows land and a decision
refused on its own is dropped, logged and counted in ``refused`` (issue 23:
one such row used to stop that process's ledger for everyone). Only once the
database took another write of the flush, so a database refusing every write
loses nothing.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from types import FrameType
from typing import Any

from asgiref.sync import SyncToAsync
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from curfew_core.hot_settings import setting
from curfew_core.ledger.batch import AtValue, Batch
from curfew_core.ledger.entry import MAX_REASON, MAX_SCOPE, Entry
from curfew_core.services import ledger_prune
from curfew_core.services.ledger import (
    CommitInDoubt,
    at_value,
    decisions_write,
    decisions_write_status,
    minute_of,
)
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.ledger")
#: Said once per outage (``store.outage_log``): records dropped while a write
#: is stuck.
_overflow = Notice(log, logging.ERROR)

#: The most entries a process holds while the database refuses them.
MAX_BUFFERED = 100_000
#: While stopping, the flusher also writes at least this often.
DRAIN_SECONDS = 0.05

#: Entries that name only their token or carry a gateway's id (see above).
_buffer: deque[Entry] = deque()
#: Everything else, stored as it will be written; replaced whole by each flush.
_batch: Batch | None = None
#: Guards ``_batch``: records come from the event loop and from request threads.
_batch_lock = threading.Lock()
_flush_lock = threading.Lock()
_start_lock = threading.Lock()
_wake = threading.Event()
_thread: threading.Thread | None = None
#: This process's recorder is started (``_start``). A forked child's is not
#: (threads do not follow a fork): the fork hook (``_forked``) says so, so a
#: record reads this flag instead of asking the kernel for its pid every time.
_started = False
#: The flusher's last write failed: a full batch does not wake it (it would
#: retry a database that is away as fast as decisions arrive).
_failing = False
#: Decisions dropped because the buffer was full (an outage outlasted it).
dropped = 0
#: Decisions dropped because the database refused their row on its own.
refused = 0
#: The most writes a flush tries while it looks for refused rows: a database
#: that refuses every write costs a few bounded tries a tick, not one per row.
MAX_SPLIT_WRITES = 64
#: A batch this full wakes the flusher before its tick: under load a batch
#: does not wait for the second to be up, and no one write grows long (SQLite
#: takes it in INSERTs of at most 1,000 rows, PostgreSQL in one COPY). A
#: length check on the hot path. Each write also costs its own transaction,
#: its users' check and its hours' upsert: at 1,000 a served warm verdict on
#: PostgreSQL + Redis did 10,478 and 10,653 a second against 11,218 and
#: 11,601 at 5,000 (``bench.edge_production``, side by side, both orders);
#: 20,000 gained nothing more and tripled the p99.
FLUSH_ROWS = 5_000
#: What a database that is away or busy raises: the batch is kept whole.
_OUTAGES = (OperationalError, InterfaceError)
#: A batch and the entries waiting apart: what one write stores.
Part = tuple[Batch | None, list[Entry]]
#: Writes whose COMMIT went unanswered (``CommitInDoubt``: the link to
#: PostgreSQL was lost just then), each with its transaction's id. Each flush
#: first asks the database how each ended: made, it is dropped (writing it
#: again would store it twice); not made, it is written with the rest.
_in_doubt: list[tuple[int, Part]] = []


def record(entry: Entry) -> None:
    """Remember one decision; it is written within about a second. Never
    raises, never touches the database, and costs about 2 µs. Nothing at all
    with ``CURFEW_LEDGER`` off."""
    global _batch
    if not setting("CURFEW_LEDGER"):
        return
    lost = 0
    if entry.user_id is None or entry.client_id is not None:
        _buffer.append(entry)
        waiting = len(_buffer)
        full = waiting >= FLUSH_ROWS
        if full and waiting > MAX_BUFFERED + FLUSH_ROWS:
            lost = _bound_buffer()
    else:
        with _batch_lock:
            if _batch is None:
                _batch = _new_batch()
            _batch.add(entry, entry.user_id)
            waiting = len(_batch.rows)
            full = waiting >= FLUSH_ROWS
            if full and waiting > MAX_BUFFERED + FLUSH_ROWS:
                lost = _batch.bounded(MAX_BUFFERED)
    _recorded(full, lost)


def record_verdict(
    verdict: Any,
    *,
    origin: str,
    at: Any,
    user_id: int,
    session: str | None,
    purpose: str | None,
    budget_before: int | None,
    zone: str | None = None,
) -> None:
    """Twin of ``record(verdict_entry(verdict, origin=origin, at=at,
    user_id=user_id, ...))`` (``record`` above, ``ledger.entry``'s rules and
    ``Batch.add``'s row and tally) for a door that knows whose decision it is
    (the verdict API), made here without the ``Entry``, the call per field
    and the helper per sum in between. Kept because it pays (issue 43): the
    edge bench in production's configuration served 5,554 warm verdicts a
    second with it against 5,043 without (+10.1 %, side by side in one run,
    load 4.4); every twin of the verdict path together +6.1 % and +6.5 % in
    both row orders. ``tests/ledger/test_record_verdict.py`` holds the two
    batch for batch equal. ``zone``: the user's, the verdict decided in it
    (kept in ``Batch.zones``: the writer files their hours by it)."""
    global _batch
    if not setting("CURFEW_LEDGER"):
        return
    # The engine's names are ``StrEnum`` members: their text, without the
    # ``value`` property's Python call.
    action: str = verdict.action._value_
    state: str = verdict.state._value_
    dry_run = bool(verdict.dry_run)
    exempt = bool(verdict.exempt)
    after = budget_before
    saved = 0
    if dry_run:
        pass
    elif action == "clamp":
        # ``allowed``'s budget, and ``saving``'s tokens not generated.
        ceiling = verdict.max_tokens
        if ceiling is not None:
            after = ceiling if budget_before is None else min(budget_before, ceiling)
        if budget_before is not None and after is not None:
            saved = max(0, budget_before - after)
    elif action == "short-circuit":
        after = 0
    minute = int(at.timestamp()) // 60
    if _at_value is None:
        _new_batch()  # the database's form of an instant, looked up once
    assert _at_value is not None
    row = (
        user_id,
        _at_value(at, minute),
        (session or "")[:MAX_SCOPE],
        (purpose or "")[:MAX_SCOPE],
        state,
        action,
        verdict.reason[:MAX_REASON],
        budget_before,
        after,
        origin,
        exempt,
        dry_run,
        None,
        None,
        None,
    )
    key = (user_id, minute, state, action)
    with _batch_lock:
        batch = _batch
        if batch is None:
            batch = _batch = _new_batch()
        rows = batch.rows
        rows.append(row)
        if zone is not None:
            batch.zones[user_id] = zone
        sums = batch.tallies.get(key)
        if sums is None:
            sums = batch.tallies[key] = [0, 0, 0, 0, 0, 0, 0, 0]
        sums[0] += 1
        if exempt:
            sums[1] += 1
        if dry_run:
            sums[2] += 1
        elif action == "short-circuit":
            sums[3] += 1  # ``unsent``: a short-circuit that acted
        sums[4] += saved
        waiting = len(rows)
        full = waiting >= FLUSH_ROWS
        lost = batch.bounded(MAX_BUFFERED) if full and waiting > MAX_BUFFERED + FLUSH_ROWS else 0
    _recorded(full, lost)


def _recorded(full: bool, lost: int) -> None:
    """After a record: say what a full buffer dropped, wake the flusher for
    a full batch (or while stopping), start it in a new process."""
    if lost:
        _overflowed(lost)
    # Already set: the flusher is on its way (setting it again takes the
    # event's lock and notifies, for each record until the batch is taken).
    if ((full and not _failing) or _draining) and not _wake.is_set():
        _wake.set()
    if not _started:
        _start()


_at_value: AtValue | None = None


def _bound_buffer() -> int:
    """Drop the oldest entries waiting apart beyond ``MAX_BUFFERED``."""
    lost = 0
    while len(_buffer) > MAX_BUFFERED:
        try:
            _buffer.popleft()
        except IndexError:  # the flusher took them meanwhile
            break
        lost += 1
    return lost


def _overflowed(lost: int) -> None:
    """A record found the batch past its bound: the flusher's write is stuck
    (a database that took the connection and stopped answering), so nothing
    is taken. ``MAX_BUFFERED`` holds there too: the oldest raw rows go, in
    steps of ``FLUSH_ROWS``, counted in ``dropped`` (their tallies stay)."""
    global dropped
    dropped += lost
    _overflow.failed(
        "ledger: the last write has not returned and the buffer is full; "
        "dropping the oldest decisions (hourly counts kept; %d so far)",
        dropped,
    )


def _new_batch() -> Batch:
    """An empty batch for this database (how it stores an instant is looked
    up once: no query)."""
    global _at_value
    if _at_value is None:
        _at_value = at_value()
    return Batch(_at_value)


def _interval() -> float:
    return float(getattr(settings, "CURFEW_LEDGER_FLUSH_SECONDS", 1.0))


def _start() -> None:
    """Start this process's flusher (again after a fork: threads do not follow)."""
    global _thread, _started
    with _start_lock:
        if _started:
            return
        _started = True
        if _interval() <= 0:
            return
        _thread = threading.Thread(target=_run, name="curfew-ledger", daemon=True)
        _thread.start()
        _watch_stop_signals()
        ledger_prune.start()  # past the retention, hourly (issue 40)


#: Set when the process was asked to stop: from then on every record wakes the
#: flusher at once, so a worker that drains its requests and then dies of the
#: signal (uvicorn re-raises it after a graceful shutdown: no exit hook runs)
#: has written its decisions by then.
_draining = False
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _begin_drain() -> None:
    global _draining
    _draining = True
    _wake.set()


def _chained(previous: Any) -> Callable[[int, FrameType | None], None]:
    def on_stop(signum: int, frame: FrameType | None) -> None:
        _begin_drain()
        if callable(previous):
            previous(signum, frame)  # the server's own handler: its graceful stop
        elif previous == signal.SIG_DFL:
            # Nobody else handles it: write now, then end as the signal would.
            _flush_in_thread()
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    on_stop.curfew_ledger = True  # type: ignore[attr-defined]
    return on_stop


def _install_signal_handlers() -> None:
    """Chain each stop signal's handler (only from the main thread)."""
    for signum in _STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous == signal.SIG_IGN or getattr(previous, "curfew_ledger", False):
            continue
        signal.signal(signum, _chained(previous))


def _watch_stop_signals() -> None:
    """Install the handlers from the main thread: now if this is it, else
    through the main event loop (an ASGI server's, where sync views run in
    worker threads); without either, only the exit hook and the ticks write."""
    if threading.current_thread() is threading.main_thread():
        _install_signal_handlers()
        return
    loop: asyncio.AbstractEventLoop | None = None
    if getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) == os.getpid():
        loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is not None and not loop.is_closed():
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_install_signal_handlers)


def _flush_in_thread() -> None:
    """``flush`` on a thread of its own and wait for it: the caller may be an
    event loop's thread, where Django refuses database calls."""
    worker = threading.Thread(target=flush_quietly, name="curfew-ledger-stop")
    worker.start()
    worker.join(timeout=30)


def flush_quietly() -> None:
    """``flush``, a failure logged (its rows kept), the connection closed:
    the stop's write (``edge.lifespan``) and the stop signal's."""
    try:
        flush()
    except Exception:
        log.exception("ledger: the last decisions could not be written")
    finally:
        connection.close()


def _run() -> None:
    global _failing
    interval = _interval()
    failing = False
    #: How long writing a batch takes lately (a decaying maximum), and at
    #: first half the interval: the first batch's write is not yet known.
    writing = interval / 2
    taken = time.monotonic()
    while True:
        # The next batch is taken early by the time its write takes: so a
        # decision is stored within ``interval`` of its recording, also when
        # the database is slow or the event loop starves this thread of the
        # GIL (waiting a full interval after each write lost 1 + 2 x the
        # write's time: about 2 s under load, issue 23). A full batch or a
        # stop wakes it at once; after a failure it waits the whole interval.
        due = taken + (interval if failing else max(0.0, interval - writing))
        while True:
            if _draining:
                due = min(due, taken + DRAIN_SECONDS)
            remaining = due - time.monotonic()
            if remaining <= 0:
                break
            if _wake.wait(remaining):
                _wake.clear()
                if _draining or not failing:
                    break
        _wake.clear()
        taken = time.monotonic()
        # The thread keeps its connection from tick to tick, and with it the
        # database's parsed INSERT (SQLite parsing a 1,000-row statement anew
        # each second was a sixth of a flush); after a failed batch it starts
        # afresh, so a database that went away is reconnected to.
        written = 1  # a failed write took its time too
        try:
            written = flush()
        except Exception:  # the flusher must outlive any one bad batch
            if not failing:  # once per outage, not every second
                log.exception("ledger: a batch could not be written; kept and retried")
            failing = _failing = True
            with contextlib.suppress(Exception):
                connection.close()
        else:
            if failing:
                log.warning("ledger: writing again (%d decisions dropped meanwhile)", dropped)
            _overflow.over("ledger: writing")
            failing = _failing = False
        if written:  # an empty tick says nothing about how long a write takes
            writing = max(time.monotonic() - taken, writing / 2)


def pending() -> int:
    doubtful = sum(_part_size(part) for _, part in _in_doubt)
    return len(_buffer) + (len(_batch) if _batch is not None else 0) + doubtful


def _part_size(part: Part) -> int:
    batch, entries = part
    return len(entries) + (len(batch) if batch is not None else 0)


def _settle() -> None:
    """Ask how each write in doubt ended (``_in_doubt``): committed, it is
    dropped; aborted, it waits to be written with the rest; still in
    progress (the server has not yet seen the lost link), it is asked about
    again next flush. An outage while asking is raised, with all kept."""
    still: list[tuple[int, Part]] = []
    try:
        while _in_doubt:
            xact, part = _in_doubt[0]
            status = decisions_write_status(xact)
            _in_doubt.pop(0)
            if status == "committed":
                log.info("ledger: a write whose answer was lost had been made; not written again")
            elif status == "in progress":
                still.append((xact, part))
            else:
                _put_back(*part)
    finally:
        _in_doubt[:0] = still


def _take() -> tuple[Batch | None, list[Entry]]:
    global _batch
    with _batch_lock:
        batch, _batch = _batch, None
    entries = []
    while _buffer:
        entries.append(_buffer.popleft())
    return batch, entries


def _put_back(batch: Batch | None, entries: list[Entry]) -> None:
    """A refused batch goes back in front of what arrived meanwhile, bounded."""
    global _batch, dropped
    _buffer.extendleft(reversed(entries))
    lost = max(0, len(_buffer) - MAX_BUFFERED)
    for _ in range(lost):
        _buffer.popleft()
    if batch is not None:
        with _batch_lock:
            if _batch is not None:
                batch.absorb(_batch)
            _batch = batch
            lost += batch.bounded(MAX_BUFFERED)
    if lost:
        dropped += lost
        _overflow.failed("ledger: buffer full; dropped the %d oldest decisions", lost)


def flush() -> int:
    """Write everything buffered now, on this thread; returns how many
    decisions were written. A batch the database refuses is written in parts
    (``_write_in_parts``): what it refuses is kept and retried, or, when the
    database took the rest, dropped (``refused``). When nothing could be
    written the error is raised (with everything kept)."""
    with _flush_lock:
        if _in_doubt:
            _settle()
        batch, entries = _take()
        if batch is None and not entries:
            return 0
        try:
            return decisions_write(entries=entries, batch=batch)
        except CommitInDoubt as doubt:
            _in_doubt.append((doubt.xact, (batch, entries)))
            raise
        except _OUTAGES:
            _put_back(batch, entries)
            raise
        except Exception as exc:  # any refusal: a row's fault or the database's
            return _write_in_parts((batch, entries), exc)


def _halves(part: Part) -> tuple[Part, Part] | None:
    """``part`` in two, or None when it is one decision."""
    batch, entries = part
    held = batch is not None and bool(batch.rows or batch.tallies)
    if held and entries:
        return (batch, []), (None, entries)
    if len(entries) > 1:
        half = len(entries) // 2
        return (None, entries[:half]), (None, entries[half:])
    if batch is not None and held:
        try:
            halves = batch.split(minute_of)
        except Exception:  # never lose a batch to its own retry: it is one part then
            log.exception("ledger: a refused batch could not be split")
            return None
        if halves is not None:
            return (halves[0], []), (halves[1], [])
    return None


def _write_in_parts(part: Part, error: Exception) -> int:
    """Write a refused batch in halves, and their halves, until each part is
    written or is one decision the database refused on its own: one bad row
    (a number out of its range, a text it cannot store) then costs about
    twice log2(rows) writes, and every other decision lands.

    A decision refused alone is dropped only once the database has taken
    some other write of this flush: a database that refuses everything (a
    trigger, a read-only replica) is not a batch of bad rows, so then all of
    it is kept and retried. At most ``MAX_SPLIT_WRITES`` tries a flush; what
    is left is kept for the next."""
    waiting: deque[Part] = deque()
    suspects: list[tuple[Part, Exception]] = []
    halves = _halves(part)
    if halves is None:
        suspects.append((part, error))
    else:
        waiting.extend(halves)
    kept: list[Part] = []
    written = 0
    took = False
    tries = 0
    outage: Exception | None = None
    while waiting:
        current = waiting.popleft()
        if tries >= MAX_SPLIT_WRITES or outage is not None:
            kept.append(current)
            continue
        tries += 1
        batch, entries = current
        try:
            written += decisions_write(entries=entries, batch=batch)
            took = True
        except CommitInDoubt as doubt:
            outage = doubt
            _in_doubt.append((doubt.xact, current))
        except _OUTAGES as exc:
            outage = exc
            kept.append(current)
        except Exception as exc:
            error = exc
            halves = _halves(current)
            if halves is None:
                suspects.append((current, exc))
            else:
                waiting.extendleft(reversed(halves))
    if took:
        for suspect, why in suspects:
            _drop(suspect, why)
    else:
        kept = [suspect for suspect, _ in suspects] + kept
    if kept:
        merged = _new_batch()
        entries_kept: list[Entry] = []
        for batch, entries in kept:
            if batch is not None:
                merged.absorb(batch)
            entries_kept.extend(entries)
        _put_back(merged, entries_kept)
    if outage is not None:
        raise outage
    if not took:
        raise error
    return written


def _drop(part: Part, error: Exception) -> None:
    """Forget one decision the database refused, saying which and why."""
    global refused
    batch, entries = part
    rows = list(batch.rows) if batch is not None else []
    described = [
        f"user {row[0]} at {row[1]} ({row[9]}, session {row[2]!r}, "
        f"budgets {row[7]}/{row[8]}, usage {row[12]}/{row[13]})"
        for row in rows
    ] + [
        f"user {e.user_id} token {e.token_id} at {e.at} ({e.origin}, session {e.session!r}, "
        f"budgets {e.budget_before}/{e.budget_after}, usage {e.input_tokens}/{e.output_tokens})"
        for e in entries
    ]
    if not described and batch is not None:  # counts whose rows were dropped already
        described = [f"the hourly counts {sorted(batch.tallies)}"]
    refused += len(rows) + len(entries)
    log.error(
        "ledger: the database refused a decision; dropped it: %s: %s",
        "; ".join(described),
        error,
    )


def _forked() -> None:
    """In a forked child: the parent's buffer is the parent's to write (else
    both would), its flusher did not follow, and a lock held by another of its
    threads would never be released here."""
    global _flush_lock, _start_lock, _batch_lock, _batch, _thread, _started, _draining, _failing
    _buffer.clear()
    _in_doubt.clear()
    _batch = None
    _batch_lock = threading.Lock()
    _draining = False
    _failing = False
    _flush_lock = threading.Lock()
    _start_lock = threading.Lock()
    _thread = None
    _started = False


os.register_at_fork(after_in_child=_forked)


def discard() -> None:
    """Forget what is buffered (tests)."""
    global _batch
    _buffer.clear()
    _in_doubt.clear()
    with _batch_lock:
        _batch = None


@atexit.register
def _at_exit() -> None:
    # Without a flusher (the tests) only an explicit flush writes: the test
    # database is gone by now.
    if not pending() or _interval() <= 0:
        return
    try:
        flush()
    except Exception:
        log.exception("ledger: the last decisions could not be written at exit")
    finally:
        connection.close()
