"""One channel-layer listener per server process for all of its capsules.

A capsule used to be a channel of its own, added to its user's group (and its
session's): ten thousand sockets were ten thousand channel-layer receives, and
one override was ten thousand group messages through Redis. Here the process
has one *hub*: one channel, added to each group at least one of its capsules
follows, and one receive loop that hands each message to the capsules of that
group in this process (``events.group_event`` names the group in the message).
A change then costs Redis one message per process, not one per socket.

The receive loop is never cancelled while its event loop runs: cancelling a
channels_redis ``receive`` in the middle of its blocking pop can lose the
message or leave the layer's receive lock to a task that is gone. When the last
capsule leaves, the hub sends itself a stop message and its loop ends on
reading it. A receive that fails (Redis gone) ends the hub, and every capsule
it served closes with 1011 (they reconnect to a fresh hub).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from curfew_core.services.events import GROUP

log = logging.getLogger("curfew.realtime")

#: The message that ends a hub's receive loop (sent by the hub to its own channel).
STOP = "curfew.hub.stop"
#: How long a leaving capsule waits for a stopping hub's loop to read its stop message.
STOP_WAIT_SECONDS = 5.0


class Member(Protocol):
    def hear(self, kind: str) -> None:
        """A message of ``kind`` arrived for one of the member's groups (must not block)."""

    def hub_lost(self) -> None:
        """The hub's channel layer failed: the member must close 1011 (must not block)."""


@dataclass(eq=False)
class Hub:
    loop: asyncio.AbstractEventLoop
    layer: Any
    channel: str
    #: Group → the members in this process that follow it.
    groups: dict[str, set[Member]] = field(default_factory=dict)
    #: Group → event-loop time of its last ``group_add`` (memberships expire).
    joined_at: dict[str, float] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    failed: bool = False

    # -- membership ---------------------------------------------------------------
    async def join(self, member: Member, groups: list[str]) -> None:
        """Follow ``groups``; returns once the process hears them. Raises if the layer does."""
        try:
            for group in groups:
                members = self.groups.setdefault(group, set())
                members.add(member)
                if group not in self.joined_at:
                    # Stamped before the await: joiners meanwhile need not add it again.
                    self.joined_at[group] = self.loop.time()
                    try:
                        await self.layer.group_add(group, self.channel)
                    except BaseException:
                        self.joined_at.pop(group, None)
                        raise
        except BaseException:
            self.drop(member, groups)
            raise
        if self.failed:
            raise RuntimeError("the channel layer failed")

    def stale(self, max_age: float) -> bool:
        """A membership is older than ``max_age`` seconds (``rejoin`` renews it)."""
        now = self.loop.time()
        return any(now - at >= max_age for at in self.joined_at.values())

    async def rejoin(self, max_age: float) -> None:
        """Renew the memberships older than ``max_age`` seconds (channel layers expire them)."""
        now = self.loop.time()
        stale = [group for group, at in self.joined_at.items() if now - at >= max_age]
        for group in stale:
            self.joined_at[group] = now
        for group in stale:
            await self.layer.group_add(group, self.channel)

    def drop(self, member: Member, groups: list[str]) -> None:
        for group in groups:
            members = self.groups.get(group)
            if members is not None:
                members.discard(member)

    async def leave(self, member: Member, groups: list[str]) -> None:
        """Stop following ``groups``; the last member of a group unsubscribes the process,
        the last member of all stops the hub. Never raises (Redis may be gone)."""
        self.drop(member, groups)
        for group in groups:
            if self.groups.get(group):
                continue
            self.groups.pop(group, None)
            self.joined_at.pop(group, None)
            try:
                await self.layer.group_discard(group, self.channel)
            except Exception:
                # Redis is gone; its group entries expire on their own.
                log.warning("capsule hub: could not leave %s", group)
            if self.groups.get(group) and group not in self.joined_at:
                # A member joined while the discard was on its way: subscribe again.
                self.joined_at[group] = self.loop.time()
                try:
                    await self.layer.group_add(group, self.channel)
                except Exception:
                    log.warning("capsule hub: could not rejoin %s", group)
        if not any(self.groups.values()):
            await self.stop()

    # -- the receive loop -----------------------------------------------------------
    async def run(self) -> None:
        try:
            while True:
                message = await self.layer.receive(self.channel)
                kind = message.get("type")
                if kind == STOP:
                    return
                self.deliver(message)
        except Exception:
            log.exception("capsule hub: the channel layer failed")
            self.fail()

    def deliver(self, message: dict[str, Any]) -> None:
        group = message.get(GROUP)
        kind = message.get("type")
        if not isinstance(kind, str):
            return
        if isinstance(group, str):
            members = set(self.groups.get(group, ()))
        else:
            # A sender that does not name the group (an older process during a
            # deploy): every capsule here hears it; a re-read is harmless.
            members = {member for group_members in self.groups.values() for member in group_members}
        for member in members:
            member.hear(kind)

    def fail(self) -> None:
        self.failed = True
        if _hubs.get(self.loop) is self:
            del _hubs[self.loop]
        members = {member for group_members in self.groups.values() for member in group_members}
        for member in members:
            member.hub_lost()

    async def stop(self) -> None:
        if _hubs.get(self.loop) is self:
            del _hubs[self.loop]
        task = self.task
        if task is None or task.done():
            return
        try:
            await self.layer.send(self.channel, {"type": STOP})
        except Exception:
            log.warning("capsule hub: could not send itself the stop message")
            return
        # Bounded, and never a cancel (see the module's docstring).
        await asyncio.wait({task}, timeout=STOP_WAIT_SECONDS)


#: One hub per event loop (one per server process; tests get one per test).
_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


async def hub_for(layer: Any) -> Hub:
    """This process's hub on ``layer``, started if there is none."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is not None and hub.layer is layer and not hub.failed:
        return hub
    channel = await layer.new_channel()
    hub = _hubs.get(loop)  # another capsule may have started one meanwhile
    if hub is not None and hub.layer is layer and not hub.failed:
        return hub
    hub = _hubs[loop] = Hub(loop, layer, channel)
    # A context of its own: the hub outlives the capsule that started it.
    hub.task = loop.create_task(hub.run(), context=contextvars.Context())
    return hub


def hub_for_this_loop() -> Hub | None:
    """The running hub, for tests and diagnostics."""
    return _hubs.get(asyncio.get_running_loop())
