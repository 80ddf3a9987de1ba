"""The process's bounded maps: least recently used, each hit read by one
lookup. ``LRU`` is ``lru-dict``'s map in C; ``TLRU`` (an expiry per entry,
the local layer's) is cachetools', its ``get`` made one lookup.

cachetools' ``get`` asks ``key in cache`` and then ``cache[key]``: two
lookups, and on a ``TLRUCache`` two readings of the clock and two expiry
checks. On the warm verdict a dozen such reads are made (the local layer's
three keys, the caller, the token's digest and owner, the steady verdict,
the request's head), and at 10,000 users, out of the CPU's caches, they were
a tenth of its time (issue 40). ``TLRU.get`` here is ``cache[key]``, a miss
caught: a hit costs one lookup (a TLRU hit 1.1 -> 0.37 µs, an LRU hit
0.21 -> 0.14 µs); a miss, rarer on the hot path, a raised ``KeyError``.
Everything else is cachetools' own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar, overload

import lru
from cachetools import TLRUCache

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


class TLRU(TLRUCache[_K, _V]):
    """``cachetools.TLRUCache``, read by one lookup (see above)."""

    @overload
    def get(self, key: _K) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _D) -> _V | _D: ...
    def get(self, key: _K, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default
