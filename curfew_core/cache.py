"""Cache keys and invalidation shared by selectors (readers) and services (writers).

The verdict hot path reads a user's schedule and overrides from the cache;
every write drops the entry after its transaction commits, so no reader can
repopulate the cache with the pre-commit row.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction


def bundle_key(user_id: int) -> str:
    return f"bundle:{user_id}"


def token_key(digest: str) -> str:
    return f"token:{digest}"


def token_used_key(token_id: int) -> str:
    return f"token-used:{token_id}"


def drop_bundle_on_commit(user_id: int) -> None:
    transaction.on_commit(lambda: cache.delete(bundle_key(user_id)))


def drop_token_on_commit(digest: str) -> None:
    transaction.on_commit(lambda: cache.delete(token_key(digest)))
