"""The process's bounded maps: least recently used, each hit read by one
lookup, in C. ``LRU`` is ``lru-dict``'s map; ``TLRU`` (an expiry per entry,
the local layer's) is the same map holding each value with the instant it
stops standing, checked when it is read.

On the warm verdict a dozen such reads are made (the local layer's three
keys, the caller, the token's digest and owner, the steady verdict, the
request's head), and at 10,000 users, out of the CPU's caches, they were a
tenth of its time (issue 40). cachetools' maps are Python: its ``get`` asks
``key in cache`` and then ``cache[key]``, two lookups, and on a
``TLRUCache`` two readings of the clock and two expiry checks, with a linked
list kept in Python besides. An LRU hit costs 74 ns here against 140-210 ns
in cachetools; a TLRU hit about 0.6 µs against 1.3-1.6 µs with 30,000
entries read at random (one read of the clock, one lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import lru

_K = TypeVar("_K")
_V = TypeVar("_V")
_D = TypeVar("_D")


if TYPE_CHECKING:

    class LRU(lru.LRU[_K, _V]):
        """A bounded least-recently-used map (``lru-dict``'s, in C)."""

        maxsize: int

        def __init__(self, maxsize: int) -> None: ...

else:

    class LRU(lru.LRU):
        """A bounded least-recently-used map: ``lru-dict``'s, in C (a hit
        74 ns where cachetools' ``LRUCache`` takes 140-210 ns in Python),
        with cachetools' constructor, ``maxsize`` and iteration. Each call is
        one C call under the GIL: safe to share between threads as a dict
        is. Unlike cachetools', ``get`` of an unhashable key answers ``None``
        (setting one raises ``TypeError``)."""

        __class_getitem__ = classmethod(lambda cls, item: cls)

        def __init__(self, maxsize: int) -> None:
            super().__init__(maxsize)

        @property
        def maxsize(self) -> int:
            return self.get_size()

        def __iter__(self) -> Iterator[Any]:
            return iter(self.keys())


class TLRU(Generic[_K, _V]):
    """A bounded least-recently-used map whose entries expire: ``ttu(key,
    value, now)`` (read on ``timer``) says until when a value stands, as
    cachetools' ``TLRUCache`` takes it. An entry read at or past that instant
    is gone (and removed); a value already past it when set is not kept, and
    takes the key's older value with it. When full, the entry used least
    lately goes, one at a time. Each call is a few C calls under the GIL;
    its callers hold their own lock for what must happen together."""

    __slots__ = ("_map", "_timer", "_ttu")

    def __init__(
        self,
        maxsize: int,
        ttu: Callable[[_K, _V, float], float],
        timer: Callable[[], float],
    ) -> None:
        self._map: LRU[_K, tuple[float, _V]] = LRU(maxsize=maxsize)
        self._ttu = ttu
        self._timer = timer

    @property
    def maxsize(self) -> int:
        return self._map.maxsize

    @overload
    def get(self, key: _K) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _D) -> _V | _D: ...
    def get(self, key: _K, default: Any = None) -> Any:
        found = self._map.get(key)
        if found is None:
            return default
        if not self._timer() < found[0]:
            self._map.pop(key, None)
            return default
        return found[1]

    def __setitem__(self, key: _K, value: _V) -> None:
        now = self._timer()
        until = self._ttu(key, value, now)
        if not now < until:
            self._map.pop(key, None)
            return
        self._map[key] = (until, value)

    def pop(self, key: _K, default: Any = None) -> Any:
        found = self._map.pop(key, None)
        return default if found is None else found[1]

    def clear(self) -> None:
        self._map.clear()

    def __len__(self) -> int:
        return len(self._map)
