"""Is an open capsule still allowed to listen? Checked on every push, cheaply.

A socket is authorised once, at the handshake, but it may stay open for days.
Sign-out, a password change and deactivation are announced to open sockets
(``realtime.signals``), but a bulk ``UPDATE`` sends no signal and another
process's change reaches no in-memory group, so every push re-checks too:
the user is still active, and a session socket's session still exists, belongs
to that user and carries their current password hash (Django's own rule).

Both answers are kept in this process for ``CHECK_SECONDS`` at most, so a
thousand sockets of one user pushed at one boundary cost one check, and a
change made by any path is honoured within that bound. ``forget`` drops a
user's entries when their change is announced.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.sessions.backends.base import SessionBase
from django.utils.crypto import constant_time_compare
from django.utils.module_loading import import_string

from curfew_core.selectors import users
from curfew_core.store.local_layer import LOCAL_LAYER_SIZE
from curfew_core.store.memos import LRU

#: Longest a "still allowed" answer stands in for the database.
CHECK_SECONDS = 2.0
#: Bounded, least recently used (issue 40): a process with many users drops
#: the answer used least lately, one at a time, as large as its cache layer.
MAX_ENTRIES = LOCAL_LAYER_SIZE

#: Guards both memos, reads too: an ``LRU`` reorders itself on every
#: read, and pushes check from the event loop and from threads.
_lock = threading.Lock()
#: user id -> (checked at, active)
_active: LRU[int, tuple[float, bool]] = LRU(maxsize=MAX_ENTRIES)
#: session key digest -> (checked at, user id or None)
_sessions: LRU[str, tuple[float, int | None]] = LRU(maxsize=MAX_ENTRIES)


def session_tag(session_key: str) -> str:
    """A session key as it may appear in group names and logs: hashed, never raw."""
    return hashlib.sha256(session_key.encode()).hexdigest()[:32]


def _fresh(checked_at: float) -> bool:
    return time.monotonic() - checked_at < CHECK_SECONDS


def user_active(user_id: int) -> bool:
    """Whether the user exists and is active (deactivation by any path, within the bound)."""
    return users_active([user_id])[user_id]


def users_active(user_ids: list[int]) -> dict[int, bool]:
    """``user_active`` of each of ``user_ids``: those not checked within the
    bound in one query (a team's capsules pushed together)."""
    out: dict[int, bool] = {}
    due = []
    with _lock:
        for user_id in user_ids:
            hit = _active.get(user_id)
            if hit is not None and _fresh(hit[0]):
                out[user_id] = hit[1]
            else:
                due.append(user_id)
    if due:
        active = users.active_among(user_ids=due)
        now = time.monotonic()
        with _lock:
            for user_id in due:
                out[user_id] = user_id in active
                _active[user_id] = (now, out[user_id])
    return out


def _session_store(session_key: str) -> SessionBase:
    store_class: type[SessionBase] = import_string(settings.SESSION_ENGINE).SessionStore
    return store_class(session_key)


def _session_user(session_key: str) -> int | None:
    """The user a session still signs in, by Django's rules, without touching the session.

    Unlike ``django.contrib.auth.get_user`` this never flushes a session whose
    hash does not match: a check from a socket must not sign anybody out.
    """
    session = _session_store(session_key)
    try:
        raw_id = session[SESSION_KEY]
        backend_path = session[BACKEND_SESSION_KEY]
    except KeyError:
        return None  # signed out (the session is gone) or never signed in
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    user_id = get_user_model()._meta.pk.to_python(raw_id)
    user = load_backend(backend_path).get_user(user_id)  # None when inactive
    if user is None:
        return None
    stored = session.get(HASH_SESSION_KEY) or ""
    current = [user.get_session_auth_hash()]
    user_any: Any = user  # Django's private fallback rule, untyped in the stubs
    current += [
        user_any._get_session_auth_hash(secret=secret) for secret in settings.SECRET_KEY_FALLBACKS
    ]
    if not any(constant_time_compare(stored, value) for value in current):
        return None  # the password changed since this session signed in
    pk: int = user.pk
    return pk


def session_user(session_key: str) -> int | None:
    """The user ``session_key`` signs in now, or ``None`` (rechecked every ``CHECK_SECONDS``)."""
    tag = session_tag(session_key)
    with _lock:
        hit = _sessions.get(tag)
    if hit is not None and _fresh(hit[0]):
        return hit[1]
    user_id = _session_user(session_key)
    with _lock:
        _sessions[tag] = (time.monotonic(), user_id)
    return user_id


def forget(user_id: int) -> None:
    """Drop what this process remembers about ``user_id`` (their change was announced)."""
    with _lock:
        _active.pop(user_id, None)
        for tag in [tag for tag, (_, owner) in _sessions.items() if owner == user_id]:
            del _sessions[tag]


def forget_everything() -> None:
    with _lock:
        _active.clear()
        _sessions.clear()
