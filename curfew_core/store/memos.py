"""The process's bounded maps: cachetools' least-recently-used caches, each
hit read by one lookup.

cachetools' ``get`` asks ``key in cache`` and then ``cache[key]``: two
lookups, and on a ``TLRUCache`` two readings of the clock and two expiry
checks. On the warm verdict a dozen such reads are made (the local layer's
three keys, the caller, the token's digest and owner, the steady verdict,
the request's head), and at 10,000 users, out of the CPU's caches, they were
a tenth of its time (issue 40). ``get`` here is ``cache[key]``, a miss
caught: a hit costs one lookup (a TLRU hit 1.1 -> 0.37 µs, an LRU hit
0.21 -> 0.14 µs); a miss, rarer on the hot path, a raised ``KeyError``.
Everything else is cachetools' own.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from cachetools import LRUCache, TLRUCache

_K = TypeVar("_K")
_V = TypeVar("_V")
_D = TypeVar("_D")


class LRU(LRUCache[_K, _V]):
    """``cachetools.LRUCache``, read by one lookup (see above)."""

    @overload
    def get(self, key: _K) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _D) -> _V | _D: ...
    def get(self, key: _K, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


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
