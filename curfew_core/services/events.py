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


def send(
    group: str,
    message: dict[str, str],
    failure: str,
    *args: object,
    logger: logging.Logger = log,
) -> None:
    """Send ``message`` to ``group`` if there is a channel layer. Never raises:
    a dead channel layer must not fail the save (or the sign-out) that already
    happened; capsules re-sync on their next boundary or reconnect. A failure
    is logged to ``logger`` as ``failure % args``, with its traceback."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        logger.exception(failure, *args)


def _send(group: str, message: dict[str, str], what: str) -> None:
    send(group, message, "could not publish change %s", what)


def publish_user_changed(user_id: int) -> None:
    """Tell every open capsule of this user to re-read, now. Never raises."""
    group = user_group(user_id)
    _send(group, group_event(group, "user.changed"), f"for user {user_id}")


def publish_team_changed(team_id: int) -> None:
    """Tell every member's open capsules (and the team key's change streams)
    that the team's schedule changed: one group message, however many
    members. Never raises."""
    group = team_group(team_id)
    _send(group, group_event(group, "team.changed"), f"for team {team_id}")


def publish_member_changed(team_id: int, user_id: int, username: str) -> None:
    """Tell the team key's change streams that one member's verdict may have
    changed (their own save or override). Never raises."""
    group = team_group(team_id)
    message = {**group_event(group, "team.member_changed"), "user": username}
    _send(group, message, f"of member {user_id} of team {team_id}")
