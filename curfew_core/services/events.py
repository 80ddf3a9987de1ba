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


#: The key naming the group a message was sent to: one listener per process
#: (``realtime.hub``) hears every group its capsules follow, on one channel.
GROUP = "group"


def group_event(group: str, kind: str) -> dict[str, str]:
    """The message sent to ``group``: its ``type``, and the group it was sent to."""
    return {"type": kind, GROUP: group}


def publish_user_changed(user_id: int) -> None:
    """Tell every open capsule of this user to re-read, now. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        group = user_group(user_id)
        async_to_sync(layer.group_send)(group, group_event(group, "user.changed"))
    except Exception:
        # A dead channel layer must not fail the save that already committed;
        # capsules re-sync on their next boundary or reconnect.
        log.exception("could not publish change for user %s", user_id)
