"""Cache keys and invalidation shared by selectors (readers) and services (writers).

The verdict hot path reads a user's schedule and overrides from the cache.
Writers *replace* the entry with the committed rows after commit, and readers
only ever *add* (never overwrite): a reader that loaded the old rows just
before a commit cannot put them back over the writer's fresh entry.

A drop only reaches the processes that share the cache. Without Redis the
cache is each process's own memory, and a write made elsewhere (``manage.py
curfew off`` while the server runs, another worker) cannot drop it there, so
entries then live only briefly: that bounds how long such a write goes unseen.
"""

from __future__ import annotations

from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import transaction

#: Longest a process-local entry may stand in for the database.
LOCAL_CACHE_SECONDS = 5


def shared_cache() -> bool:
    """Whether every process (server workers, management commands) sees one cache."""
    return not isinstance(caches["default"], LocMemCache)


def lifetime(seconds: int) -> int:
    """How long to keep an entry the writers drop on change."""
    return seconds if shared_cache() else min(seconds, LOCAL_CACHE_SECONDS)


def bundle_key(user_id: int) -> str:
    return f"bundle:{user_id}"


def token_key(digest: str) -> str:
    return f"token:{digest}"


def token_used_key(token_id: int) -> str:
    return f"token-used:{token_id}"


def drop_token_on_commit(digest: str) -> None:
    transaction.on_commit(lambda: cache.delete(token_key(digest)))
