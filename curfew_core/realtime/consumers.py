"""The live status capsule: one socket, one user's state, pushed when it changes.

Every message is the ``GET /api/v1/state`` object (plus the capsule's words, and
with ``?band=24h`` the day's band). It is sent on connect, when
the user's group hears ``user.changed`` (a save or an override, published after
the commit), and when the socket's timer fires at the verdict's
``valid_until``: no socket wakes up to ask whether anything changed. (Without
Redis, one watcher per process notices other processes' writes: ``watch``.)

A socket is not a channel of its own: the process's one listener (``hub``)
follows the user's and the session's groups for all its sockets and hands each
message to them, and sockets waking at the same instant share one timer
(``alarms``). The sockets woken in one event-loop turn are then served in one
*burst*: each user's state is read once (at a boundary, a second ahead:
``states.prepare``) and sent to their sockets in waves of ``WAVE`` sockets,
``WAVES_PER_TURN`` waves per loop turn (``burst``), instead of a task, a lock
wait and a shared-read wait per socket. Ten thousand sockets are one receive
loop, a few timers and a burst's waves.

Before each push the socket's credential is checked again (``access``): a
signed-out session, a changed password or a deactivated user closes it with
4401. An outage (the channel layer, the session, the state cannot be read)
closes it with 1011, never an HTTP 500 on the handshake.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import Counter
from collections.abc import Coroutine
from contextlib import suppress
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from curfew_core import throttle
from curfew_core.realtime import access, alarms, clock, hub, release, states, timers, watch
from curfew_core.realtime.codes import CLOSE_RATE_LIMITED, CLOSE_UNAUTHORIZED, CLOSE_UNAVAILABLE
from curfew_core.realtime.guard import CREDENTIAL, TOKEN, UNAVAILABLE
from curfew_core.realtime.signals import session_group
from curfew_core.realtime.states import CapsuleState, capsule_state
from curfew_core.selectors.teams import team_id_of
from curfew_core.selectors.verdicts import CAPSULE_BANDS
from curfew_core.services.events import team_group, user_group

log = logging.getLogger("curfew.realtime")

T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection: a send found it gone (ASGI's IOError)."""


#: Open capsule sockets of this process per client address (as the throttles
#: see it), held to ``CURFEW_CAPSULE_SOCKETS_PER_ADDRESS``: embed tokens are
#: public by design, and one address held 1,500 sockets (issue 41).
_per_address: Counter[str] = Counter()

#: Channel layers drop group members after ``group_expiry`` (a day by default),
#: which would silently deafen a capsule left open for days. The timer wakes at
#: least hourly (``timers.MAX_SLEEP``) and renews the hub's memberships this often.
REJOIN_SECONDS = 3600.0


def wants_band(scope: Any) -> bool:
    """Whether the socket asked for the day's band (``?band=24h``); any other
    value is no band (the capsule sends only what it knows)."""
    query = scope.get("query_string", b"").decode("latin1")
    return parse_qs(query).get("band", [""])[0] in CAPSULE_BANDS


def _embed_user_sync(raw: str, address: str) -> int | None:
    identity = throttle.identify_throttled(raw, kind="embed", address=address)
    return None if identity is None else identity.user_id


async def _apart(work: Coroutine[Any, Any, T]) -> T:
    """``work`` in a copy of this socket's context, dropped when it is done.

    ``sync_to_async`` copies what the thread set back into its caller's context,
    and Django's cache handler keeps one cache object per context (an asgiref
    ``Local``): awaited straight from the socket, every open socket held its own
    cache object and its storage for as long as it was open, ten thousand of
    them at 10,000 sockets (issue 41). Read apart, one copy lives for one read."""
    task = asyncio.get_running_loop().create_task(work, context=contextvars.copy_context())
    return await task


async def _team_of(user_id: int) -> int | None:
    """The user's team (their cached rows), read off the event loop."""
    read = database_sync_to_async(team_id_of, thread_sensitive=False)
    team_id: int | None = await _apart(read(user_id))
    return team_id


async def _embed_user(raw: str, address: str) -> int | None:
    user_id: int | None = await _apart(database_sync_to_async(_embed_user_sync)(raw, address))
    return user_id


async def _session_user(session_key: str) -> int | None:
    user_id: int | None = await _apart(database_sync_to_async(access.session_user)(session_key))
    return user_id


class CapsuleConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    """One capsule socket. It has no channel of its own (``serve``): the hub
    hears its groups and calls ``hear``; the shared timer calls ``on_timer``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: This socket's name for the watcher's roll (it has no channel name).
        self.key = f"capsule.{id(self):x}"
        self.hub: hub.Hub | None = None
        self.user_id: int | None = None
        self.token: str | None = None
        #: The session a signed-in socket was opened with (``None`` for a token socket).
        self.session_key: str | None = None
        self.groups_joined: list[str] = []
        #: The socket asked for the 24-hour band (``?band=24h``).
        self.band = False
        self.closed = False
        self.accepted = False
        self.close_sent = False
        #: Counted among the process's open capsules (``release``).
        self.counted = False
        #: Handlers started by the hub or a timer; cancelled when the socket goes.
        #: (Made on the first: most sockets sit idle, and ten thousand empty sets add up.)
        self.tasks: set[asyncio.Task[None]] | None = None
        # A timer tick and a group message may both want to push; one at a time.
        # Held from the handshake to the first state, so nothing closes a socket
        # half-way through its accept.
        self.lock = asyncio.Lock()
        #: The client address this socket counts against (``_per_address``).
        self.address: str | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Whatever fails underneath (the channel layer's receive on a dead Redis)
        ends the socket with 1011, never an HTTP 500 handshake or a bare drop.
        A client that went away is no failure: one debug line, no traceback
        (a handshake dropped before the first push wrote two ERROR tracebacks,
        a log flood for anyone with a public embed token: issue 41, finding 2)."""
        try:
            await self.serve(scope, receive, send)
        except ClientGone:
            log.debug("capsule socket: the client went away")
            await self.forget()
        except Exception:
            log.exception("capsule socket failed")
            await self.forget()
            if self.close_sent:
                return
            try:
                if not self.accepted:
                    await send({"type": "websocket.accept"})
                await send(
                    {"type": "websocket.close", "code": CLOSE_UNAVAILABLE, "reason": "unavailable"}
                )
            except Exception:
                log.debug("capsule socket: could not send the 1011 close", exc_info=True)

    async def serve(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' ``AsyncConsumer.__call__`` for a consumer with no channel: the
        client's messages are the only input, read in this task (Channels would
        add a task and an ``asyncio.wait`` per socket to listen to two inputs)."""
        self.scope = scope
        self.channel_layer = None

        async def to_client(message: dict[str, Any]) -> None:
            # ASGI: a send on a closed connection raises an IOError of the server's.
            try:
                await send(message)
            except OSError as exc:
                raise ClientGone from exc

        self.base_send = to_client
        with suppress(StopConsumer):
            while True:
                await self.dispatch(await receive())

    async def dispatch(self, message: dict[str, Any]) -> None:
        """The handler for ``message``, without Channels' ``aclose_old_connections``
        before it. That is a hop to the process's one sync thread per message:
        three per socket (connect, disconnect, and again in its disconnect
        handler), queued one behind another, so ten thousand sockets leaving
        were thirty thousand waits and their allocations, and a crowd took
        seconds to let go of its memory (issue 40). The capsule's database reads
        run in ``database_sync_to_async``, which closes stale connections itself."""
        kind = message["type"]
        if kind == "websocket.connect":
            await self.websocket_connect(message)
        elif kind == "websocket.receive":
            await self.websocket_receive(message)
        elif kind == "websocket.disconnect":
            await self.disconnect(message.get("code", 1005))
            raise StopConsumer
        else:
            raise ValueError(f"No handler for message type {kind}")

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        await super().accept(subprotocol, headers)
        self.accepted = True

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        self.close_sent = True
        await super().close(code=code, reason=reason)

    # -- lifecycle ----------------------------------------------------------------
    async def connect(self) -> None:
        async with self.lock:
            await self.open()

    async def open(self) -> None:
        address = throttle.scope_address(self.scope)
        limit: int = settings.CURFEW_CAPSULE_SOCKETS_PER_ADDRESS
        if limit and _per_address[address] >= limit:
            await self.refuse(CLOSE_RATE_LIMITED, "too many capsule sockets from your address")
            return
        _per_address[address] += 1
        self.address = address
        try:
            user_id = await self.authenticate()
        except Exception:
            log.exception("capsule socket: credential could not be checked")
            await self.refuse(CLOSE_UNAVAILABLE, "state unavailable; retry")
            return
        if user_id is None:
            return  # refused with the reason
        self.user_id = user_id
        self.band = wants_band(self.scope)
        groups = [user_group(user_id)]
        if self.session_key is not None:
            groups.append(session_group(self.session_key))
        try:
            team_id = await _team_of(user_id)
        except Exception:
            log.exception("capsule socket: team could not be read")
            await self.refuse(CLOSE_UNAVAILABLE, "state unavailable; retry")
            return
        if team_id is not None:
            # A team schedule change is one message to the team's group (issue 26).
            groups.append(team_group(team_id))
        # Join before the first read, so a change committed in between is not missed.
        try:
            layer = get_channel_layer()
            self.hub = await hub.hub_for(layer)
            self.groups_joined = groups
            await self.hub.join(self, groups)
            await watch.enroll(self.key, layer)
        except Exception:
            log.exception("capsule socket: channel layer unavailable")
            watch.leave(self.key)
            await self.leave_hub()
            await self.refuse(CLOSE_UNAVAILABLE, "state unavailable; retry")
            return
        await self.accept()
        self.counted = True
        release.opened()
        await self.send_state()

    async def authenticate(self) -> int | None:
        """The user this socket may follow, or ``None`` once refused (4401)."""
        credential = self.scope.get(CREDENTIAL)
        if credential == "token":
            raw = self.scope.get(TOKEN) or ""
            address = throttle.scope_address(self.scope)
            try:
                user_id = await _embed_user(raw, address) if raw else None
            except throttle.Throttled as exc:
                await self.refuse(CLOSE_RATE_LIMITED, exc.refusal.message[:120])
                return None
            if user_id is None:
                reason = "unknown or revoked embed token" if raw else "missing embed token"
                await self.refuse(CLOSE_UNAUTHORIZED, reason)
                return None
            self.token = raw
            return user_id
        if credential == "session":
            if self.scope.get(UNAVAILABLE):
                raise RuntimeError("the session could not be read")
            user = self.scope.get("user")
            if user is None or not user.is_authenticated:
                await self.refuse(CLOSE_UNAUTHORIZED, "sign in, or connect with ?token=")
                return None
            self.session_key = self.scope["session"].session_key
            pk: int = user.pk
            return pk
        # Reached without CapsuleGuard in front: refuse rather than guess.
        await self.refuse(CLOSE_UNAUTHORIZED, "no credential")
        return None

    async def disconnect(self, code: int) -> None:
        for task in self.tasks or ():
            if task is not asyncio.current_task():
                task.cancel()
        await self.forget()

    async def forget(self) -> None:
        """The socket is done: its timers, its watch, its groups and its place
        in its address's count go (once, whichever way it ended)."""
        self.closed = True
        self.disarm()
        watch.leave(self.key)
        await self.leave_hub()
        address, self.address = self.address, None
        if address is not None:
            _per_address[address] -= 1
            if _per_address[address] <= 0:
                del _per_address[address]
                if not _per_address:
                    # An emptied dict keeps its table: ten thousand addresses' worth.
                    _per_address.clear()
        if self.counted:
            self.counted = False
            release.closed()

    async def leave_hub(self) -> None:
        joined, self.hub = self.hub, None
        if joined is None:
            return
        if self.user_id is not None:
            followers = joined.groups.get(user_group(self.user_id)) or set()
            if followers <= {self}:
                # The process stops hearing this user's changes: a read prepared
                # for their next boundary could miss one (``states.prepare``).
                states.changed(self.user_id)
        await joined.leave(self, self.groups_joined)

    async def refuse(self, code: int, reason: str) -> None:
        # Accepted first: a browser sees a refused handshake only as 1006.
        self.closed = True
        await self.accept()
        await self.close(code=code, reason=reason)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The capsule only listens; anything it is sent is ignored."""

    # -- events -------------------------------------------------------------------
    def hear(self, kind: str) -> None:
        """The hub heard ``kind`` for one of this socket's groups."""
        if self.closed:
            return
        if kind in ("user.changed", "team.changed"):  # this user's (or team's) change
            if self.user_id is not None:
                states.changed(self.user_id)
            queue_push(self)
        elif kind == "user.recheck":  # the user was saved (password, active flag)
            if self.user_id is not None:
                access.forget(self.user_id)
                states.changed(self.user_id)
            queue_push(self)
        elif kind == "session.ended":  # this socket's session signed out
            self.spawn(self.shut(CLOSE_UNAUTHORIZED, "signed out"))

    def hub_lost(self) -> None:
        """The channel layer failed under the hub: this socket can hear nothing more."""
        self.hub = None
        if self.user_id is not None:
            states.changed(self.user_id)  # nor may a read prepared while it heard
        self.spawn(self.unavailable())

    async def unavailable(self) -> None:
        async with self.lock:  # after the handshake, if it is still under way
            if not self.close_sent:
                await self.shut(CLOSE_UNAVAILABLE, "state unavailable; retry")

    def spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        if self.tasks is None:
            self.tasks = set()
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- the timer (shared with every socket waking at the same instant) ------------
    def disarm(self) -> None:
        alarms.disarm(self)

    def on_timer(self) -> None:
        """Ten thousand sockets may wake at one instant: the alarm checked the wall
        clock for all of them, and the burst renews the hub's groups once."""
        if not self.closed:
            queue_push(self)

    # -- sending ------------------------------------------------------------------
    async def push(self) -> None:
        """Read the state as of now, send it, and set the timer for its next change."""
        async with self.lock:
            await self.send_state()

    async def send_state(self) -> None:
        """``push`` under the lock its caller holds."""
        if self.closed or self.user_id is None:
            return
        try:
            signed_in = self.session_key is None or (
                await _session_user(self.session_key) == self.user_id
            )
            state = await capsule_state(user_id=self.user_id, token=self.token, band=self.band)
        except Exception:
            log.exception("capsule state for user %s could not be read", self.user_id)
            await self.shut(CLOSE_UNAVAILABLE, "state unavailable; retry")
            return
        if self.closed:  # closed while reading (signed out, the layer failed)
            return
        if not signed_in:
            await self.shut(CLOSE_UNAUTHORIZED, "signed out")
            return
        now = clock.now()
        wake_at = None if state is None else timers.next_wake(state.payload, now)
        if wake_at is not None:
            tokens = () if self.token is None else (self.token,)
            states.prepare(user_id=self.user_id, tokens=tokens, band=self.band, wake=wake_at)
        await self.deliver(state, wake_at, now)

    async def deliver(
        self, state: CapsuleState | None, wake_at: datetime | None, now: datetime
    ) -> None:
        """Send ``state`` (``None``: this socket's token is revoked) and sleep until
        ``wake_at`` (``now``: about the time of the send); or close, if the state
        says this socket may see it no more."""
        if self.closed:
            return
        if state is None or (self.token is not None and self.token in state.refused):
            await self.shut(CLOSE_UNAUTHORIZED, "embed token revoked")
            return
        if not state.active:
            await self.shut(CLOSE_UNAUTHORIZED, "account deactivated")
            return
        # Straight to the server (``send(text_data=)`` is two more calls that
        # build the same message): once per socket per push, ten thousand at a boundary.
        await self.base_send({"type": "websocket.send", "text": state.text_for(band=self.band)})
        if wake_at is not None:
            alarms.arm(self, wake_at, now)

    async def shut(self, code: int, reason: str) -> None:
        self.closed = True
        self.disarm()
        if not self.close_sent:  # a socket is closed once (signed out and failed at once)
            await self.close(code=code, reason=reason)


# -- bursts: the sockets woken in one loop turn, served in waves ---------------------
#: Sockets to push to, per event loop, gathered until the loop's next turn.
_queued: dict[asyncio.AbstractEventLoop, dict[CapsuleConsumer, None]] = {}
#: Running bursts (and their hub renewals), held so the loop does not drop them half-way.
_bursts: set[asyncio.Task[None]] = set()
#: Sockets one task of a burst sends to in turn.
WAVE = 64
#: Waves started per event-loop turn: between two turns the loop reads its sockets
#: and runs other work (another user's burst, a request), so a fan-out to ten
#: thousand sockets does not hold the loop for its whole length.
WAVES_PER_TURN = 16


def queue_push(socket: CapsuleConsumer) -> None:
    """Push to ``socket`` in this turn's burst (every socket woken by one message
    or one timer joins it before it starts)."""
    loop = asyncio.get_running_loop()
    queued = _queued.get(loop)
    if queued is None:
        queued = _queued[loop] = {}
        loop.call_soon(_start_burst, loop)
    queued[socket] = None


def _start_burst(loop: asyncio.AbstractEventLoop) -> None:
    sockets = list(_queued.pop(loop, {}))
    # A context of its own: a burst serves sockets of many connections.
    _keep(loop.create_task(burst(sockets), context=contextvars.Context()))


def _keep(task: asyncio.Task[None]) -> None:
    _bursts.add(task)
    task.add_done_callback(_bursts.discard)


async def burst(sockets: list[CapsuleConsumer]) -> None:
    """Read each user's state once and send it to their sockets in waves.

    A session socket checks its session first (one lookup each), and a socket
    with a push under way re-reads after it: both take ``push``, their own task.
    The users' states are read together (a team's change wakes every member's
    capsules at once, issue 26) and sent as each part of them arrives.
    """
    _renew_hub()
    by_user: dict[int, list[CapsuleConsumer]] = {}
    for socket in sockets:
        if socket.closed or socket.user_id is None:
            continue
        if socket.session_key is not None or socket.lock.locked():
            socket.spawn(socket.push())
        else:
            by_user.setdefault(socket.user_id, []).append(socket)
    if not by_user:
        return
    asks = {
        user_id: states.Ask(
            user_id,
            frozenset(socket.token for socket in group if socket.token is not None),
            any(socket.band for socket in group),
        )
        for user_id, group in by_user.items()
    }
    loop = asyncio.get_running_loop()
    waves: list[asyncio.Task[None]] = []
    # These sockets were open, hearing their user's changes, all along: at a
    # boundary the state read ahead for it is theirs (``states.prepare``).
    async for part in states.burst_states(list(asks.values())):
        now = clock.now()
        sends: list[tuple[CapsuleConsumer, CapsuleState, datetime]] = []
        wakes: dict[int, datetime] = {}
        for user_id, state in part.items():
            ask, group = asks[user_id], by_user[user_id]
            if isinstance(state, Exception):
                log.error(
                    "capsule state for user %s could not be read", ask.user_id, exc_info=state
                )
                for socket in group:
                    socket.spawn(socket.shut(CLOSE_UNAVAILABLE, "state unavailable; retry"))
                continue
            # Members with the same rows share one payload, and so its next change.
            wake_at = wakes.get(id(state.payload))
            if wake_at is None:
                wake_at = wakes[id(state.payload)] = timers.next_wake(state.payload, now)
            states.prepare(user_id=user_id, tokens=ask.tokens, band=ask.band, wake=wake_at)
            sends.extend((socket, state, wake_at) for socket in group)
        # Sent in turn within a wave, waves side by side: a client that stopped
        # reading holds up a send until its server notices (keepalive), and then
        # only its wave.
        for start in range(0, len(sends), WAVE):
            if waves and not len(waves) % WAVES_PER_TURN:
                await asyncio.sleep(0)  # let the waves started so far run, and the loop breathe
            waves.append(loop.create_task(_send_wave(sends[start : start + WAVE])))
    await asyncio.gather(*waves)


def _renew_hub() -> None:
    """Renew this process's group memberships if they are due (channel layers
    expire them). Every socket wakes at least hourly, so a burst comes often enough;
    checked once per burst, not once per socket woken."""
    running = hub.hub_for_this_loop()
    if running is not None and running.stale(REJOIN_SECONDS):
        _keep(asyncio.get_running_loop().create_task(_rejoin(running)))


async def _rejoin(running: hub.Hub) -> None:
    try:
        await running.rejoin(REJOIN_SECONDS)
    except Exception:
        # Nobody awaits this task: say what went wrong instead of losing it.
        log.exception("capsule socket: could not renew the hub's groups")


async def _send_wave(sends: list[tuple[CapsuleConsumer, CapsuleState, datetime]]) -> None:
    # One reading of the clock for the wave's alarms (a wave takes milliseconds).
    now = clock.now()
    for socket, state, wake_at in sends:
        if socket.lock.locked():  # a push began meanwhile: it sends after its own read
            socket.spawn(socket.push())
            continue
        try:
            async with socket.lock:
                await socket.deliver(state, wake_at, now)
        except Exception:
            # This socket's client is gone (its disconnect follows); the rest still hear.
            log.debug("capsule burst: could not send to a socket", exc_info=True)
