"""Real-time events, sent only after the database commit.

A capsule that hears "changed" re-reads the state; if the event went out
before the commit it could read the old row and show it until the next
boundary. The services publish through ``curfew_core.services.after_commit``,
which orders it after the cache refresh.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger("curfew.events")


def user_group(user_id: int) -> str:
    return f"curfew-user-{user_id}"


def publish_user_changed(user_id: int) -> None:
    """Tell every open capsule of this user to re-read, now. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(user_group(user_id), {"type": "user.changed"})
    except Exception:
        # A dead channel layer must not fail the save that already committed;
        # capsules re-sync on their next boundary or reconnect.
        log.exception("could not publish change for user %s", user_id)
