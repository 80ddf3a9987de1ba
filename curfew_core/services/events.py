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


def team_group(team_id: int) -> str:
    """Every open capsule and change stream of a team's members (issue 26)."""
    return f"curfew-team-{team_id}"


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


def publish_team_changed(team_id: int) -> None:
    """Tell every member's open capsules (and the team key's change streams)
    that the team's schedule changed: one group message, however many
    members. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        group = team_group(team_id)
        async_to_sync(layer.group_send)(group, group_event(group, "team.changed"))
    except Exception:
        log.exception("could not publish change for team %s", team_id)


def publish_member_changed(team_id: int, user_id: int, username: str) -> None:
    """Tell the team key's change streams that one member's verdict may have
    changed (their own save or override). Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        group = team_group(team_id)
        message = {**group_event(group, "team.member_changed"), "user": username}
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        log.exception("could not publish change of member %s of team %s", user_id, team_id)
