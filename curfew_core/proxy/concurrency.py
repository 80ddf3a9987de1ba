"""How many upstream calls each token has open in this process.

The upstream connection pool is shared by every user of the process; without
a per-token bound one client with a few hundred slow calls holds all of it and
everyone else waits. A call takes a slot before it goes upstream and gives it
back when its answer has ended (or the client went away); a token with no free
slot is told 429 at once. Per process on purpose: the pool it protects is per
process too. A team key's call for a member holds a slot of that member's
own share, ``(key, member)`` (``proxy.forward``), as their own token would.
"""

from __future__ import annotations

import threading

#: Whose share a slot is of: a token's id, or a team key's and a member's.
Holder = int | tuple[int, int]


class Slot:
    """One held call; :meth:`release` is safe to call any number of times, from
    any thread (a streamed answer can end in a worker thread or in GC)."""

    __slots__ = ("_owner", "_released", "token_id")

    def __init__(self, owner: Slots, token_id: Holder) -> None:
        self._owner = owner
        self.token_id = token_id
        self._released = False

    def release(self) -> None:
        self._owner._give_back(self)


class Slots:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Holder, int] = {}

    def take(self, token_id: Holder, limit: int) -> Slot | None:
        """A slot for ``token_id``, or ``None`` when it already holds ``limit``."""
        with self._lock:
            held = self._held.get(token_id, 0)
            if held >= limit:
                return None
            self._held[token_id] = held + 1
        return Slot(self, token_id)

    def held(self, token_id: Holder) -> int:
        with self._lock:
            return self._held.get(token_id, 0)

    def _give_back(self, slot: Slot) -> None:
        with self._lock:
            if slot._released:
                return
            slot._released = True
            left = self._held.get(slot.token_id, 0) - 1
            if left > 0:
                self._held[slot.token_id] = left
            else:
                self._held.pop(slot.token_id, None)


#: The process's slots (one event loop per server process, but the lock makes
#: it correct for any number).
slots = Slots()
