"""The decisions a gateway makes from its cached verdict, reported to the
server's ledger (``POST /api/v1/decisions``) in batches, off the hot path.

What counts, exactly once each:

- a ``verdict()`` answered from the cache (no request) is one decision acted
  on, reported here (origin ``gateway``);
- a ``verdict()`` that asked the server is recorded by the server itself
  (origin ``verdict``), so it is not reported again;
- an async caller that joined another caller's request (one request for a
  burst) is reported here: the server recorded only the one request;
- an outage policy's answer (``fail_open``, ``fail_closed``, ``last_known``)
  is not reported: it is the gateway's decision, not the curfew's, and would
  put a schedule state on a night the schedule was never read.

The hot path only appends ``(at, key, budget, verdict)`` to a bounded deque
(the oldest dropped and counted when full); the sender (a thread, or a task
in the async flavour) turns them into reports, gives each an id once (a
retried batch carries the same ids, and the server stores each id once), and
sends at most ``interval`` seconds apart or as soon as ``batch`` are waiting.
5xx, 429 and network errors keep the batch and retry it with exponential
backoff, never sooner than the server's ``Retry-After``; any other refusal
(a revoked token, a bad field) drops the batch, counted and logged. A refusal
that names decisions one by one (``fields``: ``decisions[n].user``, a member
who left a team key's team since their verdict was cached) drops only those:
the server stores none of a refused batch, so the others are sent again at
once, with the same ids (one member's refusal never costs the others' decisions).
Nothing here raises into the caller.

The shape of one report mirrors the server's ``DecisionReport``
(``curfew_core/schema/decisions.py``), which this distribution cannot import
(no Django); ``tests/client/test_reporting_served.py`` validates this
module's payloads against the served OpenAPI document, so they cannot drift.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import re
import secrets
import weakref
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from curfew_client.policy import Key
from curfew_client.push import retry_after
from curfew_client.verdict import CurfewVerdict

#: The most decisions one report may carry (the server's ``MAX_BATCH``).
MAX_BATCH = 500
DEFAULT_BATCH = 200
#: Seconds between reports at most (a crashed gateway loses about this much).
DEFAULT_INTERVAL = 1.0
#: Decisions waiting at most; past this the oldest are dropped (and counted).
DEFAULT_QUEUE = 20_000
#: A report is not the hot path: the server writes it before answering.
REPORT_TIMEOUT = 5.0
#: How long ``close()`` may spend sending what is left.
FLUSH_TIMEOUT = 2.0
#: Seconds before the first retry of a failed report, doubled each failure up to
#: ``MAX_BACKOFF`` (and never sooner than the server's ``Retry-After``).
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
#: The server's bounds on the text it stores.
MAX_REASON = 500
MAX_SCOPE = 200
#: The largest budget a report may carry (the server's ``MAX_TOKENS``).
MAX_TOKENS = 10_000_000

#: Its own logger: the outage log of the verdicts ("curfew.client") stays apart.
log = logging.getLogger("curfew.client.reports")

#: (epoch seconds, cache key, the caller's budget, the verdict answered).
Item = tuple[float, Key, int | None, CurfewVerdict]


def report_of(item: Item, decision_id: str) -> dict[str, Any]:
    """One ``DecisionReport``: what was decided for one call, never its content.
    ``budget_after`` follows the server's rule (``ledger.entry.verdict_entry``):
    a clamp allows ``min(budget, clamp)``, a short-circuit 0, else the budget
    (at most ``MAX_TOKENS``, the server's bound)."""
    at, key, budget, verdict = item
    session_id, purpose = key[0], key[1]
    if budget is not None:
        # A number the server would refuse is capped, not sent to be refused:
        # one refused decision is its whole batch refused (and dropped).
        budget = min(budget, MAX_TOKENS)
    acts = not verdict.dry_run
    after: int | None
    if verdict.action == "clamp" and acts:
        ceiling = verdict.max_tokens
        if ceiling is None:
            after = budget
        elif budget is None:
            after = ceiling
        else:
            after = min(budget, ceiling)
    elif verdict.action == "short-circuit" and acts:
        after = 0
    else:
        after = budget
    report: dict[str, Any] = {
        "id": decision_id,
        "at": datetime.fromtimestamp(at, tz=UTC).isoformat(),
        "state": verdict.state,
        "action": verdict.action,
        "reason": verdict.reason[:MAX_REASON],
        "exempt": verdict.exempt,
        "dry_run": verdict.dry_run,
        "budget_before": budget,
        "budget_after": after,
    }
    # Text the server would refuse (too long) is cut, not sent to be refused.
    if session_id is not None:
        report["session_id"] = session_id[:MAX_SCOPE]
    if purpose is not None:
        report["purpose"] = purpose[:MAX_SCOPE]
    if key[3] is not None:
        # A team key's: the member it was decided for (issue 26).
        report["user"] = key[3]
    return report


class DecisionLog:
    """The queue and the sending schedule, without I/O: the client's flavour
    sends what ``due()`` hands it and tells ``answered()`` / ``failed()``."""

    def __init__(
        self,
        *,
        interval: float,
        batch: int,
        limit: int,
        clock: Callable[[], float],
        nudge: Callable[[], None],
    ) -> None:
        if not 1 <= batch <= MAX_BATCH:
            raise ValueError(f"report_batch must be from 1 to {MAX_BATCH}, not {batch!r}")
        if limit < batch:
            raise ValueError("report_queue must hold at least one batch")
        self.interval = float(interval)
        self.batch = batch
        self.limit = limit
        self.clock = clock
        self._nudge = nudge
        self.pending: deque[Item] = deque(maxlen=limit)
        #: The flavour's sender is running (set by the flavour; cleared in a forked child).
        self.running = False
        #: The sender was woken for a full batch and has not yet looked.
        self.kicked = False
        #: The batch being sent, its ids fixed: a retry sends exactly this again.
        self.outbox: list[dict[str, Any]] | None = None
        self.retry_at = 0.0
        self.failures = 0
        #: Decisions dropped because the queue was full (``dropped``); refused by the server.
        self._drops = itertools.count()
        self.refused = 0
        #: The server has no ledger (``POST /api/v1/decisions`` is 404): nothing is sent.
        self.unsupported = False
        #: Decisions the server acknowledged (stored, or already stored).
        self.delivered = 0
        #: The flavour's own reset for a forked child (its locks, its sender).
        self.after_fork: Callable[[], None] | None = None
        self._new_prefix()
        _forks.add(self)

    def _new_prefix(self) -> None:
        # Unique per client and process: two gateways (or a forked child)
        # never share an id, so the server never folds two decisions into one.
        self.prefix = secrets.token_hex(8)
        self._seq = itertools.count(1)

    # -- the hot path -------------------------------------------------------------

    def add(self, at: float, key: Key, budget: int | None, verdict: CurfewVerdict) -> None:
        pending = self.pending
        if len(pending) >= self.limit:
            next(self._drops)  # one C call: atomic across threads, no lock on the hot path
        pending.append((at, key, budget, verdict))
        if not self.running or (len(pending) >= self.batch and not self.kicked):
            self._wake()

    def _wake(self) -> None:
        try:
            self._nudge()
        except Exception:
            log.debug("could not wake the decision reporter", exc_info=True)

    # -- the sender ---------------------------------------------------------------

    def due(self, now: float, *, final: bool = False) -> list[dict[str, Any]] | None:
        """The batch to send now, or ``None`` (nothing waiting, or backing off;
        ``final`` ignores the backoff: the last chance at close)."""
        if self.unsupported:
            self.pending.clear()  # a server without a ledger: nothing to send them to
            return None
        if self.outbox is None:
            pending = self.pending
            taken: list[dict[str, Any]] = []
            while pending and len(taken) < self.batch:
                try:
                    item = pending.popleft()
                except IndexError:
                    break
                taken.append(report_of(item, f"{self.prefix}-{next(self._seq)}"))
            if not taken:
                return None
            self.outbox = taken
        if not final and now < self.retry_at:
            return None
        return self.outbox

    def given_up(self) -> None:
        """At close: say what could not be sent (it is lost with the process)."""
        left = self.waiting
        if left:
            log.warning("%d decision(s) not reported: the curfew server did not take them", left)

    def answered(
        self, now: float, status: int, retry_header: str | None, content: bytes = b""
    ) -> bool:
        """The server's answer to the outbox (``content``: its body, read
        bounded); whether to go on sending."""
        batch = self.outbox or []
        if 200 <= status < 300:
            self.delivered += len(batch)
            self._done(now)
            return True
        if status == 429 or status >= 500:
            self._backoff(now, f"HTTP {status}", retry_after(retry_header))
            return False
        named = refused_decisions(status, content, len(batch))
        if named is not None and len(named) < len(batch):
            # Only those decisions: the server stored none of the batch, so
            # the rest go again now, with the same ids.
            self.refused += len(named)
            self.outbox = [decision for n, decision in enumerate(batch) if n not in named]
            log.warning(
                "curfew server refused %d of a report's %d decision(s) (HTTP %d); "
                "those dropped, the rest sent again",
                len(named),
                len(batch),
                status,
            )
            return True
        self.refused += len(batch)
        if status == 404:
            # A server from before the ledger: said once, and no more reports.
            self.unsupported = True
            log.warning(
                "curfew server has no decision ledger (HTTP 404 from %s); not reporting "
                "decisions to it",
                "POST /api/v1/decisions",
            )
            self._done(now)
            return False
        log.warning(
            "curfew server refused a report of %d decision(s) (HTTP %d); dropped",
            len(batch),
            status,
        )
        self._done(now)
        return True

    def failed(self, now: float, error: BaseException) -> None:
        self._backoff(now, type(error).__name__, None)

    def wait(self, now: float) -> float:
        """Seconds the sender may sleep before it next has something to do."""
        if self.outbox is not None and self.retry_at > now:
            return min(self.retry_at - now, self.interval)
        return self.interval

    def _done(self, now: float) -> None:
        self.outbox = None
        if self.failures:
            log.info("curfew server takes decision reports again")
        self.failures = 0
        self.retry_at = now

    def _backoff(self, now: float, why: str, advised: float | None) -> None:
        self.failures += 1
        delay = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (self.failures - 1))
        delay *= 1 + random.random() / 4  # noqa: S311 (jitter, not a secret)
        if advised is not None:
            delay = max(delay, min(advised, MAX_BACKOFF * 5))
        self.retry_at = now + delay
        if self.failures == 1 and self.running:
            log.warning(
                "curfew server did not take a decision report (%s); retrying it "
                "(same ids) with backoff",
                why,
            )

    def forked(self) -> None:
        """In a forked child: the parent's decisions are the parent's to send."""
        self.pending.clear()
        self.outbox = None
        self.running = False
        self.kicked = False
        self.failures = 0
        self.retry_at = 0.0
        self._drops = itertools.count()
        self._new_prefix()
        if self.after_fork is not None:
            self.after_fork()

    @property
    def dropped(self) -> int:
        """Decisions dropped, the oldest first, because the queue was full."""
        return int(repr(self._drops)[len("count(") : -1])

    @property
    def waiting(self) -> int:
        """Decisions not yet acknowledged (queued, or in the batch being sent)."""
        return len(self.pending) + len(self.outbox or ())


#: A refusal's field that names one decision of the batch (``decisions[3].user``);
#: at most four digits (a batch holds at most ``MAX_BATCH``).
_ONE_DECISION = re.compile(r"decisions\[(\d{1,4})\]\.")


def refused_decisions(status: int, content: bytes, size: int) -> set[int] | None:
    """The decisions of a batch of ``size`` that the server's refusal
    (``status`` 400 or 422, the API's error with its ``fields``) names one by
    one, by their place in the batch; ``None`` when it names anything else,
    or nothing (then the whole batch is refused)."""
    if status not in (400, 422):
        return None
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    fields = body.get("fields") if isinstance(body, dict) else None
    if not isinstance(fields, dict) or not fields:
        return None
    named: set[int] = set()
    for field in fields:
        found = _ONE_DECISION.match(field)
        if found is None or int(found.group(1)) >= size:
            return None
        named.add(int(found.group(1)))
    return named


_forks: weakref.WeakSet[DecisionLog] = weakref.WeakSet()


def _after_fork() -> None:
    for decision_log in list(_forks):
        decision_log.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
