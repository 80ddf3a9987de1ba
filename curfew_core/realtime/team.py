"""The Team page's socket: a team admin's page hears when a shown member changes.

The page lists a page of members (50) with their state now and next change.
Their next changes are on the page, so its script refreshes the card at the
earliest of them by itself; what it cannot know is a save or an override (the
member's, or the team's schedule, which reaches every member's group after
its commit). This socket follows the user groups of the members on the page
through the process's one listener (``hub``), as a capsule follows its own
user's, and says ``{"changed": true}`` a moment after any of them
changes (changes within ``SETTLE_SECONDS`` go out as one message); the page
then re-reads its card, over HTTP, with the same rules as a reload.

Session sockets only, from the site's own origin (``CapsuleGuard``): an embed
token opens no team socket (4401). Not a team admin: 4404, and the page stops
retrying. Signed out: 4401. An outage: 1011, and the page retries.
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import suppress
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer

from curfew_core.realtime import hub
from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED, CLOSE_UNAVAILABLE
from curfew_core.realtime.guard import CREDENTIAL, UNAVAILABLE
from curfew_core.realtime.signals import session_group
from curfew_core.selectors import teams as team_selectors
from curfew_core.services.events import team_group, user_group

log = logging.getLogger("curfew.realtime")

#: Not a team admin (or no team): nothing to follow; the page stops retrying.
CLOSE_NOT_ADMIN = 4404
#: Changes heard within this long of the first are sent as one message.
SETTLE_SECONDS = 0.2
#: The most members one socket follows (a page of the Team page).
MAX_FOLLOWED = 200


def page_of(scope: Any) -> int:
    query = scope.get("query_string", b"").decode("latin1")
    text = parse_qs(query).get("page", ["1"])[0]
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) < 10_000 else 1


def _followed(user_id: int, page: int, per_page: int) -> list[str] | None:
    """The groups to follow for ``user_id``'s Team page ``page``: the team's
    (its schedule) and each shown member's (their own changes); ``None`` if
    they are no team's admin."""
    membership = team_selectors.membership_of(user_id=user_id)
    if membership is None or not membership.is_admin:
        return None
    team = team_selectors.team_by_id(membership.team_id)
    if team is None:
        return None
    # Only the ids: the page's states and next changes are the page's to read.
    shown = team_selectors.member_ids_page(team=team, page=page, per_page=per_page)
    groups = [team_group(membership.team_id)]
    groups += [user_group(user_id) for user_id in shown[:MAX_FOLLOWED]]
    return groups


class TeamConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    """One Team page's socket; the hub calls ``hear`` for its members' groups."""

    per_page = 50

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hub: hub.Hub | None = None
        self.groups_joined: list[str] = []
        self.flush: asyncio.TimerHandle | None = None
        self.closed = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if self.scope.get(CREDENTIAL) != "session" or self.scope.get(UNAVAILABLE):
            await self.refuse(
                CLOSE_UNAVAILABLE if self.scope.get(UNAVAILABLE) else CLOSE_UNAUTHORIZED,
                "the Team page's socket needs the page's session",
            )
            return
        if user is None or not user.is_authenticated:
            await self.refuse(CLOSE_UNAUTHORIZED, "sign in")
            return
        try:
            followed = await database_sync_to_async(_followed)(
                user.pk, page_of(self.scope), self.per_page
            )
        except Exception:
            log.exception("team socket: the team could not be read")
            await self.refuse(CLOSE_UNAVAILABLE, "team unavailable; retry")
            return
        if followed is None:
            await self.refuse(CLOSE_NOT_ADMIN, "not a team admin")
            return
        groups = [*followed, session_group(self.scope["session"].session_key)]
        try:
            self.hub = await hub.hub_for(get_channel_layer())
            self.groups_joined = groups
            await self.hub.join(self, groups)
        except Exception:
            log.exception("team socket: channel layer unavailable")
            await self.leave_hub()
            await self.refuse(CLOSE_UNAVAILABLE, "team unavailable; retry")
            return
        await self.accept()

    async def refuse(self, code: int, reason: str) -> None:
        # Accepted first: a browser sees a refused handshake only as 1006.
        self.closed = True
        await self.accept()
        await self.close(code=code, reason=reason)

    async def disconnect(self, code: int) -> None:
        self.closed = True
        if self.flush is not None:
            self.flush.cancel()
        await self.leave_hub()

    async def leave_hub(self) -> None:
        joined, self.hub = self.hub, None
        if joined is not None:
            await joined.leave(self, self.groups_joined)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page only listens."""

    # -- the hub's calls (must not block) -----------------------------------------
    def hear(self, kind: str) -> None:
        if self.closed:
            return
        if kind == "session.ended":
            self.closed = True
            asyncio.get_running_loop().create_task(
                self.close(code=CLOSE_UNAUTHORIZED, reason="signed out")
            )
            return
        if kind not in ("user.changed", "user.recheck", "team.changed", "team.member_changed"):
            return
        if self.flush is None:
            self.flush = asyncio.get_running_loop().call_later(SETTLE_SECONDS, self.send_changed)

    def send_changed(self) -> None:
        self.flush = None
        if self.closed:
            return
        text = json.dumps({"changed": True})
        asyncio.get_running_loop().create_task(self.safe_send(text))

    async def safe_send(self, text: str) -> None:
        with suppress(Exception):
            await self.send(text_data=text)

    def hub_lost(self) -> None:
        self.hub = None
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().create_task(
                self.close(code=CLOSE_UNAVAILABLE, reason="team unavailable; retry")
            )
