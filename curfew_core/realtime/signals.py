"""Tell open capsule sockets that the credential they were opened with changed.

- Sign-out ends one session: its sockets (group ``curfew-session-<hash>``) close
  with 4401 at once.
- "Sign out other sessions" ends several at once (``services.account``): each
  of their sockets closes with 4401 the same way.
- A saved user (password changed, deactivated, deleted) may end any of their
  sockets: each one in ``curfew-user-<id>`` re-checks its credential and closes
  with 4401 if it no longer holds (a session whose password hash is stale, any
  socket of an inactive user). Bulk updates send no signal; every push re-checks
  anyway (``realtime.access``), within a couple of seconds.

Connected in ``CurfewCoreConfig.ready``, so a change made in any process
(a page, the admin, ``manage.py``) is announced.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from curfew_core.realtime import watch
from curfew_core.realtime.access import forget, session_tag
from curfew_core.services import account
from curfew_core.services.events import group_event, send, user_group

log = logging.getLogger("curfew.realtime")

#: Saving only ``last_login`` (every sign-in does) changes nothing a socket relies on.
_HARMLESS_FIELDS = frozenset({"last_login"})


def session_group(session_key: str) -> str:
    return f"curfew-session-{session_tag(session_key)}"


def _send(group: str, kind: str) -> None:
    # The sign-out or save already happened; every push re-checks anyway.
    send(group, group_event(group, kind), "could not tell %s: %s", group, kind, logger=log)


def _session_ended(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None)
    if key:
        # Sent before Django flushes the session, while its key is still known.
        _send(session_group(key), "session.ended")


def _sessions_ended(
    sender: Any, user_id: int, session_keys: tuple[str, ...], **kwargs: Any
) -> None:
    """Sessions were ended from elsewhere (after the commit): close their sockets."""
    forget(user_id)
    for key in session_keys:
        _send(session_group(key), "session.ended")


def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    fields = kwargs.get("update_fields")
    if fields is not None and set(fields) <= _HARMLESS_FIELDS:
        return
    user_id = instance.pk
    forget(user_id)

    def announce() -> None:
        forget(user_id)
        _send(user_group(user_id), "user.recheck")

    transaction.on_commit(announce, robust=True)


def _token_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    """This process revoked a token: its own signal closes the capsules, the watcher skips it."""
    if instance.revoked_at is not None:
        watch.mark_local(("token", instance.user_id, instance.revoked_at, instance.digest))


def _stamped_saved(table: str) -> Any:
    def saved(sender: Any, instance: Any, **kwargs: Any) -> None:
        """This process's own write: its event goes out after commit, the watcher skips it."""
        watch.mark_local((table, instance.user_id, instance.updated_at, ""))

    return saved


#: Kept referenced: signals hold receivers weakly.
_schedule_saved = _stamped_saved("schedule")
_override_saved = _stamped_saved("override")


def connect() -> None:
    # Senders by label (resolved lazily by Django), so no door imports the models.
    post_save.connect(
        _schedule_saved, sender="curfew_core.Schedule", dispatch_uid="curfew-watch-schedule"
    )
    post_save.connect(
        _override_saved, sender="curfew_core.Override", dispatch_uid="curfew-watch-override"
    )
    post_save.connect(
        _token_saved, sender="curfew_core.ApiToken", dispatch_uid="curfew-watch-token"
    )
    user_logged_out.connect(_session_ended, dispatch_uid="curfew-capsule-logout")
    account.sessions_ended.connect(_sessions_ended, dispatch_uid="curfew-capsule-sessions-ended")
    post_save.connect(
        _user_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="curfew-capsule-user"
    )
    post_delete.connect(
        _user_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="curfew-capsule-user-gone"
    )
