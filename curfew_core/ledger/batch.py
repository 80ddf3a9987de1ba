"""A batch of decisions in the shape they are stored: raw rows and tallies.

An entry is turned into its raw row (the ``Decision`` columns, in
``ROW_COLUMNS`` order, its instant already in the database's own form) and
added into a tally per user, UTC minute, state and action (the sums of
``SUMS``) when it is recorded, on the caller's thread. So the flusher has no
Python work per decision left: its INSERT binds the rows in C, and its per-hour
upsert works per tally, not per decision. A flusher thread that loops over
thousands of decisions in Python every second holds the GIL against the event
loop beside it, and the loop pays several times that work in waits (the
verdict benchmark lost a quarter of its rate that way; building the row on the
request costs it about 2 µs).

Tallies are per UTC minute because every zone's offset is whole minutes (since
the 1970s): the instants of one minute share their local hour, which the
writer works out once per zone and minute (``services.ledger``).

No Django, no I/O: the instant's database form comes from the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from curfew_core.ledger.entry import MAX_REASON, MAX_SCOPE, Entry, saving, unsent
from curfew_core.ledger.savings import REFUSED


def tally_action(origin: str, action: str) -> str:
    """The action a decision is tallied under: its own, but an embedding the
    curfew refused (a short-circuit of the ``embeddings`` door) as ``REFUSED``,
    so the hourly totals count it apart from the turns it answered."""
    if action == "short-circuit" and origin == "embeddings":
        return REFUSED
    return action


#: The raw row's columns, in the order ``Batch.add`` gives them (a test checks
#: them against the model: a new column cannot be silently left out).
ROW_COLUMNS = (
    "user_id",
    "at",
    "session",
    "purpose",
    "state",
    "action",
    "reason",
    "budget_before",
    "budget_after",
    "origin",
    "exempt",
    "dry_run",
    "input_tokens",
    "output_tokens",
    "client_id",
)

#: What a tally sums, in order (the ``DecisionHour`` counters).
SUMS = (
    "count",
    "exempt",
    "dry_run",
    "requests_not_sent",
    "output_tokens_not_generated",
    "usage_known",
    "input_tokens",
    "output_tokens",
)

#: (user id, minutes since the epoch, state, action)
TallyKey = tuple[int, int, str, str]
Row = tuple[Any, ...]
#: An instant, given with its minute since the epoch, as the database stores it.
AtValue = Callable[[datetime, int], Any]
_ZEROS = (0,) * len(SUMS)


class Batch:
    """Decisions not yet stored: their rows, in order, and their tallies.

    Not thread-safe by itself: the recorder adds under its lock."""

    __slots__ = ("_at", "rows", "tallies", "zones")

    def __init__(self, at_value: AtValue) -> None:
        self.rows: list[Row] = []
        self.tallies: dict[TallyKey, list[int]] = {}
        #: Each user's zone as their decisions were made in it, where the
        #: recording door knew it (the verdict door: the user's bundle): the
        #: writer files their tallies under its local hours without reading
        #: their schedule (``services.ledger._hours``). The latest wins.
        self.zones: dict[int, str] = {}
        #: An instant (and its minute) as the database stores it
        #: (``services.ledger.at_value``).
        self._at = at_value

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, entry: Entry, user_id: int) -> None:
        """Keep ``entry`` as its raw row (``ROW_COLUMNS`` order, its instant in
        the database's form) and add it to its tally (``_count``)."""
        at = entry.at
        minute = int(at.timestamp()) // 60
        self._count(
            (
                user_id,
                self._at(at, minute),
                (entry.session or "")[:MAX_SCOPE],
                (entry.purpose or "")[:MAX_SCOPE],
                entry.state,
                entry.action,
                entry.reason[:MAX_REASON],
                entry.budget_before,
                entry.budget_after,
                entry.origin,
                entry.exempt,
                entry.dry_run,
                entry.input_tokens,
                entry.output_tokens,
                entry.client_id,
            ),
            minute,
        )

    def absorb(self, newer: Batch) -> None:
        """Add ``newer``'s decisions after this batch's own (a refused batch
        put back in front of what arrived meanwhile). ``newer`` is unchanged."""
        self.rows.extend(newer.rows)
        for key, sums in newer.tallies.items():
            self._add_sums(key, sums)
        self.zones.update(newer.zones)

    def bounded(self, limit: int) -> int:
        """Keep at most ``limit`` raw rows (an outage outlasting the buffer):
        the oldest go, and how many is returned. Their tallies stay, so the
        hourly totals still count them, unless there are more than ``limit``
        tallies too: then the oldest minutes' go as well."""
        over = max(0, len(self.rows) - limit)
        del self.rows[:over]
        if len(self.tallies) > limit:
            newest = sorted(self.tallies, key=lambda key: key[1])[-limit:]
            self.tallies = {key: self.tallies[key] for key in newest}
        return over

    def split(self, minute_of: Callable[[Any], int]) -> tuple[Batch, Batch] | None:
        """This batch's decisions in two batches, or None for one decision
        (a flush the database refused is retried in parts, so that one bad
        row cannot hold back the rest: ``services.ledger_recorder``).

        The first half of the rows goes first, each with its own tally; the
        rest go second, with the counts no longer held as rows (``bounded``).
        Not the hot path: each row's tally is worked out again from the row
        (``minute_of`` reads its minute back from the stored instant)."""
        first = Batch(self._at)
        rest = Batch(self._at)
        first.zones = dict(self.zones)
        rest.zones = dict(self.zones)
        half = len(self.rows) // 2
        for row in self.rows[:half]:
            first._count(row, minute_of(row[1]))
        for row in self.rows[half:]:
            rest._count(row, minute_of(row[1]))
        orphans = {}
        for key in {*self.tallies, *first.tallies, *rest.tallies}:
            sums = self.tallies.get(key, _ZEROS)
            held = [
                a + b
                for a, b in zip(
                    first.tallies.get(key, _ZEROS), rest.tallies.get(key, _ZEROS), strict=True
                )
            ]
            left = [a - b for a, b in zip(sums, held, strict=True)]
            if any(value < 0 for value in left):
                # Rows whose tally ``bounded`` dropped: the batch's own sums
                # stand, apart from the rows, so nothing is counted twice.
                first.tallies.pop(key, None)
                rest.tallies.pop(key, None)
                left = list(sums)
            if any(left):
                orphans[key] = left
        if half == 0:
            # One row or none: the row goes alone, its orphaned counts apart.
            if rest.rows and orphans:
                first, rest = rest, Batch(self._at)
            elif len(orphans) > 1:
                keys = sorted(orphans)
                first.tallies = {key: orphans[key] for key in keys[: len(keys) // 2]}
                orphans = {key: orphans[key] for key in keys[len(keys) // 2 :]}
            else:
                return None
        for key, sums in orphans.items():
            rest._add_sums(key, sums)
        return first, rest

    def _count(self, row: Row, minute: int) -> None:
        """Keep ``row`` and add it to its tally: the one tally rule, for a
        decision recorded (``add``) and for a stored row counted again
        (``split``)."""
        self.rows.append(row)
        action, dry_run = row[5], row[11]
        key = (row[0], minute, row[4], tally_action(row[9], action))
        sums = self.tallies.get(key)
        if sums is None:
            sums = self.tallies[key] = [0, 0, 0, 0, 0, 0, 0, 0]
        sums[0] += 1
        if row[10]:
            sums[1] += 1
        if dry_run:
            sums[2] += 1
        if unsent(action, dry_run):
            sums[3] += 1
        sums[4] += saving(action, dry_run, row[7], row[8])
        usage_in, usage_out = row[12], row[13]
        if usage_in is not None or usage_out is not None:
            sums[5] += 1
            sums[6] += usage_in or 0
            sums[7] += usage_out or 0

    def _add_sums(self, key: TallyKey, sums: list[int]) -> None:
        mine = self.tallies.get(key)
        if mine is None:
            self.tallies[key] = list(sums)
        else:
            for i, value in enumerate(sums):
                mine[i] += value

    def users(self) -> set[int]:
        return {key[0] for key in self.tallies}

    def without_users(self, gone: set[int]) -> None:
        """Forget the decisions of the users in ``gone`` (deleted meanwhile)."""
        if not gone:
            return
        self.rows = [row for row in self.rows if row[0] not in gone]
        self.tallies = {key: sums for key, sums in self.tallies.items() if key[0] not in gone}
