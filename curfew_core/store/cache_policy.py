"""Cache keys, lifetimes and freshness shared by selectors (readers) and services (writers).

The verdict hot path reads a user's schedule and overrides, and token checks,
from the cache. Two bounds keep a cache from hiding a committed write:

- **Freshness.** Every entry carries the wall-clock time it was read from the
  database; an entry older than ``CURFEW_CACHE_FRESH_SECONDS`` is re-read:
  5 s without Redis (nothing is pushed across processes), five gateway
  lifetimes (300 s) with it, where every committed write is pushed
  (``services.after_commit``, the model signals of ``services.cache_receivers``)
  and a refused push is retried once Redis answers (``retry_forgets``).
  Whatever went wrong after a commit (the writer's refresh was refused or
  stalled, the process was killed before it), and whatever path wrote
  around the services (a bulk ``update()``, another process without a
  shared cache), the next reads after that bound see the committed rows. So a
  warm user costs one small query per few seconds, never one per verdict.
- **Lifetime.** The entry itself is kept longer (``lifetime``): if the
  database cannot be read when an entry goes stale, readers keep answering
  from the last known rows rather than fail every warm verdict (nothing can
  have been committed to an unreachable database meanwhile).

Writers *replace* the entry with the committed rows after commit, and a cold
reader only ever *adds*: a reader that loaded the old rows just before a
commit cannot put them back over the writer's fresh entry. (A reader that
re-reads a stale entry replaces it; if it lost such a race, its entry is
stale one bound after its read, which began before the commit.)

Without Redis the cache is each process's own memory, so entries there live
only briefly (``LOCAL_CACHE_SECONDS``): nothing is kept for an outage.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache

from curfew_core.hot_settings import setting

log = logging.getLogger("curfew.cache")

#: Longest a process-local entry may stand in for the database.
LOCAL_CACHE_SECONDS = 5


def clock() -> float:
    """Wall-clock seconds, comparable across processes (keep clocks on NTP)."""
    return time.time()


def fresh(loaded_at: float) -> bool:
    """Whether rows read from the database at ``loaded_at`` may still be trusted.

    Either side of now: a clock a little behind another machine's must not
    turn every entry stale (a query per verdict) or keep one forever.
    """
    bound: float = setting("CURFEW_CACHE_FRESH_SECONDS")
    return abs(clock() - loaded_at) < bound


def both_fresh(loaded_at: float, rows: dict[str, Any] | None) -> bool:
    """``fresh(loaded_at)`` and that of cached rows (``bundle_key``'s value,
    ``None``: not fresh), on one reading of the clock and the bound (a warm
    caller's token check and rows, ``edge.caller``)."""
    if rows is None:
        return False
    bound: float = setting("CURFEW_CACHE_FRESH_SECONDS")
    now = clock()
    return abs(now - loaded_at) < bound and abs(now - rows.get("loaded_at", 0.0)) < bound


def shared_cache() -> bool:
    """Whether every process (server workers, management commands) sees one cache."""
    return not isinstance(caches["default"], LocMemCache)


def lifetime(seconds: int) -> int:
    """How long to keep an entry (freshness is checked separately, see above)."""
    return seconds if shared_cache() else min(seconds, LOCAL_CACHE_SECONDS)


def bundle_key(user_id: int) -> str:
    return f"bundle:{user_id}"


def team_key(team_id: int) -> str:
    """A team's rows: its schedule, policy and whole-team overtime (issue 26)."""
    return f"team:{team_id}"


def token_key(digest: str) -> str:
    return f"token:{digest}"


def forget(key: str) -> bool:
    """Delete one entry after a commit; never raises (see ``services.after_commit``).

    ``False`` if the cache refused: the key is then kept here and dropped again
    as soon as Redis answers (``retry_forgets``, which the process's listener
    calls once it is subscribed again, ``local_layer``), and until then, or if
    this process ends first, the entry goes stale within the freshness bound
    on its own.
    """
    try:
        cache.delete(key)
    except Exception:
        log.warning("could not drop cache entry %s; retried when Redis answers", key, exc_info=True)
        forget_later([key])
        return False
    return True


def forget_later(keys: list[str]) -> None:
    """Drop ``keys`` (and tell every process) once the cache takes a write."""
    with _unforgotten_lock:
        _unforgotten.update(keys)
        while len(_unforgotten) > MAX_UNFORGOTTEN:
            _unforgotten.pop()


#: Keys a commit's refresh could not drop (the cache refused): dropped again,
#: and told to every process, as soon as the cache takes a write (bounded: a
#: long outage keeps the newest; the rest wait out the freshness bound).
_unforgotten: set[str] = set()
_unforgotten_lock = threading.Lock()
MAX_UNFORGOTTEN = 100_000


def unforgotten() -> int:
    return len(_unforgotten)


def retry_forgets() -> int:
    """Drop the keys a refused ``forget`` left (never raises); how many went."""
    with _unforgotten_lock:
        keys = list(_unforgotten)
        _unforgotten.clear()
    if not keys:
        return 0
    try:
        cache.delete_many(keys)
    except Exception:
        forget_later(keys)
        return 0
    log.warning("dropped %d cache entries a refused refresh had left", len(keys))
    return len(keys)
