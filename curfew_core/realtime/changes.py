"""``GET /api/v1/changes``: a gateway's change stream (server-sent events).

A gateway caches verdicts until ``max_age`` runs out, so an override took up
to a minute to reach it. In push mode the client keeps this stream open and
drops its cache on every ``change`` event, as feature-flag SDKs stream flag
changes; an override then reaches the gateway within about a second.

Why SSE and not the capsule's WebSocket with API tokens: the stream only ever
flows one way; it is a plain ``GET`` with a bearer header, so it passes the
same token check, throttles and JSON error answers as the rest of the API
(the capsule's handshake can only answer with close codes), and the client
needs nothing but httpx, which both its flavours already use.

It is a thin async door over what the capsule already has: the user's
channel-layer group (``events.user_group``), which hears ``user.changed``
after every committed save or override (``services.after_commit``) and
``user.recheck`` when the user is saved; and, with the in-memory layer, the
watcher (``realtime.watch``) that reports other processes' writes
(``manage.py curfew off``). It lives in ``realtime`` for that reason, and is
served by the edge under the API's prefix (``edge.doors``), which checks the
method and the token first and answers refusals in the API's dialect.

The stream, each event ``event:`` + ``data:`` (JSON):

- ``ready`` once it listens (``{"heartbeat": seconds}``): changes from here
  on are delivered, so a client drops what it cached before;
- ``change`` after each committed change of the token's user;
- a comment line (``: heartbeat``) every ``HEARTBEAT_SECONDS`` without one;
- ``end`` (``{"reason": ...}``), then the end of the response, when the token
  no longer authorises it (revoked, user deactivated) or the state cannot be
  checked (an outage: the client reconnects with backoff).

The token is checked again at every event and every heartbeat, so a revoked
token's stream ends at once when the revocation is announced, and within a
heartbeat when it is not.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase

from curfew_core.edge.dialects import API
from curfew_core.edge.http_headers import bearer_in
from curfew_core.edge.request import EdgeRequest
from curfew_core.edge.team_caller import member_name
from curfew_core.realtime import access, watch
from curfew_core.selectors.tokens import GATEWAY, identify
from curfew_core.services.events import team_group, user_group

log = logging.getLogger("curfew.realtime")

#: A comment this often keeps proxies from closing an idle stream and lets the
#: client notice a dead connection (its read timeout is a few of these).
HEARTBEAT_SECONDS = 15.0
#: Group memberships expire (a day by default): renewed this often, as the capsule does.
REJOIN_SECONDS = 3600.0
CONTENT_TYPE = "text/event-stream"


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


HEARTBEAT = b": heartbeat\n\n"


def _still_allowed(raw: str, user_id: int) -> bool:
    """The token is still a live API token of this (active) user, or, for a
    team key's stream (``user_id`` the team key's member or its issuer), a
    live team key of the same team."""
    identity = identify(raw, kind=GATEWAY)
    if identity is None:
        return False
    if identity.team_id is not None:
        return True
    return identity.kind == "api" and identity.user_id == user_id and access.user_active(user_id)


#: Not thread-sensitive: a stream lives for hours, and its checks need not
#: queue behind (or keep alive) the thread of the request that opened it.
still_allowed = database_sync_to_async(_still_allowed, thread_sensitive=False)


async def changes(request: EdgeRequest) -> HttpResponseBase:
    """The stream of the caller's changes (the edge checked method and token)."""
    raw = bearer_in(request.headers) or ""
    caller = request.the_caller()
    user_id = caller.user_id
    layer = get_channel_layer()
    if layer is None:
        return API.unavailable()
    groups = [user_group(user_id)]
    whole_team = caller.identity.team_id is not None and member_name(request) is None
    if whole_team:
        # A team key naming no member: every member's changes (issue 26).
        assert caller.identity.team_id is not None
        groups = [team_group(caller.identity.team_id)]
    elif caller.bundle.team_id is not None:
        # A member: their team's schedule changes are theirs too.
        groups.append(team_group(caller.bundle.team_id))
    try:
        channel = await layer.new_channel("curfew-changes.")
        # Joined before ``ready`` is sent: a change committed after it is heard.
        for group in groups:
            await layer.group_add(group, channel)
        await watch.enroll(channel, layer)
    except Exception:
        log.exception("change stream: channel layer unavailable")
        return API.unavailable()
    response = StreamingHttpResponse(
        _stream(layer, channel, groups, raw, user_id, whole_team=whole_team),
        content_type=CONTENT_TYPE,
    )
    response["Cache-Control"] = "no-store"
    # Nginx and friends would otherwise hold events back in a buffer.
    response["X-Accel-Buffering"] = "no"
    return response


#: The message that ends a stream's receive (sent to its own channel).
STOP = "curfew.changes.stop"
#: How long a stream's end waits for its receive to take the stop message.
STOP_WAIT_SECONDS = 5.0


async def _stop(layer: Any, channel: str, receiving: asyncio.Future[Any]) -> None:
    """End the stream's pending receive by a message, not a cancel; bounded.
    Should the layer take no message (Redis gone), the receive fails by itself."""
    if receiving.done():
        if not receiving.cancelled():
            receiving.exception()  # retrieved: a failed receive is not logged as lost
        return
    try:
        await layer.send(channel, {"type": STOP})
    except Exception:
        log.warning("change stream: could not send itself the stop message")
        return
    await asyncio.wait({receiving}, timeout=STOP_WAIT_SECONDS)


async def _stream(
    layer: Any,
    channel: str,
    groups: list[str],
    raw: str,
    user_id: int,
    *,
    whole_team: bool = False,
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    joined_at = loop.time()
    # One receive at a time, waited for across heartbeats and never cancelled
    # (as the capsules' hub, ``realtime.hub``): a channels_redis receive
    # cancelled in its blocking pop can lose the message, or not end at all
    # (its cancel swallowed, the pop begun again: a stream that sends no more
    # heartbeats and a Redis loop that never stops). It ends by a stop message
    # to its own channel (``_stop``).
    receiving: asyncio.Future[dict[str, Any]] | None = None
    try:
        yield event("ready", {"heartbeat": HEARTBEAT_SECONDS})
        while True:
            if receiving is None:
                receiving = asyncio.ensure_future(layer.receive(channel))
            done, _ = await asyncio.wait({receiving}, timeout=HEARTBEAT_SECONDS)
            message: dict[str, Any] | None = None
            if done:
                message, receiving = receiving.result(), None
            kind = None if message is None else message.get("type")
            if kind == "user.recheck":
                access.forget(user_id)
            try:
                allowed = await still_allowed(raw, user_id)
            except Exception:
                log.warning("change stream of user %s: could not re-check", user_id, exc_info=True)
                yield event("end", {"reason": "unavailable; reconnect"})
                return
            if not allowed:
                yield event("end", {"reason": "token revoked or user deactivated"})
                return
            if message is None:
                yield HEARTBEAT
            elif kind == "user.changed":
                yield event("change", {})
            elif kind == "team.changed":
                # The team's schedule: every member's verdict may have changed.
                yield event("change", {"team": True})
            elif kind == "team.member_changed" and whole_team:
                yield event("change", {"user": message.get("user") if message else None})
            if loop.time() - joined_at >= REJOIN_SECONDS:
                for group in groups:
                    await layer.group_add(group, channel)
                joined_at = loop.time()
    finally:
        # Ended by us, or cancelled because the client went away.
        if receiving is not None:
            await _stop(layer, channel, receiving)
        watch.leave(channel)
        for group in groups:
            try:
                await layer.group_discard(group, channel)
            except Exception:
                log.warning("change stream: could not leave %s", group)
