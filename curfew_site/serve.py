"""The application and WebSocket protocol as ``bin/serve`` starts them.

``bin/serve`` runs uvicorn with ``--factory curfew_site.serve:application``, so
each worker imports the app, then moves everything loaded at startup (Django,
the app's modules, their caches) out of the garbage collector's sight with
``gc.freeze()``: a server holding ten thousand open sockets would otherwise
re-walk those objects on every full collection. Collections also run less
often (``GC_THRESHOLD`` allocations, not 700): each socket allocates a few
dozen container objects, and the young generation's scans of ten thousand of
them were most of the time a fan-out took. Reference counting still frees
almost everything at once; the collector is only for cycles.

``--ws curfew_site.serve:LeanWebSocketProtocol`` is uvicorn's sans-I/O
websockets protocol with less kept per open socket (a capsule stays open for
hours, mostly idle): its inbox and its "writable" flag hold no empty deques
(an ``asyncio.Queue`` is four of them, about 3 KiB a socket), and the parsed
handshake request and response are dropped once the handshake is answered.
Its behaviour is uvicorn's (``tests/production`` runs ``bin/serve``).

``--http curfew_site.serve:OneWriteHttpProtocol`` is uvicorn's httptools
protocol writing a response's head and its body in one system call
(:class:`HeldHead`): uvicorn writes the head the moment the app sends it,
then the body, so a short answer (a verdict is a few hundred bytes) cost two
``send`` calls and two TCP segments, and woke the client twice (aiohttp's
server joins them the same way: its pull request 10991). The answers a turn
of the event loop finished are written together when it ends
(:class:`Outbox`), not each as it is ready.

``python -m curfew_site.serve`` is uvicorn's own command line, with one change
to its supervisor of several workers (:class:`DrainingMultiprocess`): told to
stop, it stops listening too. uvicorn's supervisor keeps the listening socket
it shares with its workers open until they have all drained, so for up to
the grace period (``CURFEW_GRACEFUL_SECONDS``) the kernel still accepted new
connections that no process would ever answer: a balancer's request or health
check hung instead of being refused and sent to another server (issue 41).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import weakref
from collections import deque
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.supervisors import Multiprocess

#: First-generation threshold (CPython's default is 700).
GC_THRESHOLD = 20_000


def application() -> Any:
    from curfew_site.asgi import application as app

    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, second, third)
    return Dispatch(app)


class Dispatch:
    """The site's app (``curfew_site.asgi``), an HTTP scope handed straight to
    the edge: Channels' router is one more coroutine a request, and every
    request but a capsule's socket is HTTP. A plain call that returns the
    app's coroutine, so ``bin/serve`` names the interface (``--interface
    asgi3``): uvicorn's guess looks for a coroutine function."""

    __slots__ = ("app", "http")

    def __init__(self, app: Any) -> None:
        self.app = app
        self.http = app.application_mapping["http"]

    def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] == "http":
            return self.http(scope, receive, send)
        return self.app(scope, receive, send)


class Inbox:
    """What uvicorn uses of ``asyncio.Queue`` (``put_nowait``, ``get``, ``empty``)
    for its one reader (the app's ``receive``), holding nothing while empty."""

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        self.items: deque[Any] | None = None
        self.waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        if self.items is None:
            self.items = deque()
        self.items.append(item)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def get(self) -> Any:
        while not self.items:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        item = self.items.popleft()
        if not self.items:
            self.items = None
        return item

    def empty(self) -> bool:
        return not self.items


class Flag:
    """What uvicorn uses of ``asyncio.Event`` (``set``, ``clear``, ``wait``),
    holding no waiter list while nobody waits (almost always: it is set)."""

    __slots__ = ("value", "waiters")

    def __init__(self) -> None:
        self.value = False
        self.waiters: list[asyncio.Future[None]] | None = None

    def set(self) -> None:
        self.value = True
        waiters, self.waiters = self.waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self.value = False

    def is_set(self) -> bool:
        return self.value

    async def wait(self) -> None:
        while not self.value:
            waiter = asyncio.get_running_loop().create_future()
            if self.waiters is None:
                self.waiters = []
            self.waiters.append(waiter)
            await waiter


class LeanWebSocketProtocol(WebSocketsSansIOProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = Inbox()  # type: ignore[assignment]
        self.writable = Flag()  # type: ignore[assignment]
        self.writable.set()

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete and getattr(self, "response", None) is not None:
            # The handshake is answered: its parsed request and response are not read again.
            self.request = None  # type: ignore[assignment]
            self.response = None  # type: ignore[assignment]


class Outbox:
    """One event loop's connections with writes held in the current turn
    (:class:`HeldHead`), written back to back when it ends: one callback a
    turn, however many answers it finished.

    Redis writes its replies the same way (``handleClientsWithPendingWrites``
    before its event loop sleeps). An answer written the moment it is ready
    wakes a waiting client for each one; a client on the same host (a local
    proxy, the load generator) then costs the server a wake-up a write, which
    was a fifth of a warm verdict's CPU on loopback (issue 40). Written
    together, the first write wakes the client and the rest find it awake."""

    __slots__ = ("loop", "pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: list[HeldHead] = []

    def hold(self, head: HeldHead) -> None:
        self.pending.append(head)
        if len(self.pending) == 1:
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for head in pending:
            head.flush()


#: Each event loop's outbox (one a worker; a test may run several loops).
_outboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Outbox] = (
    weakref.WeakKeyDictionary()
)


def outbox_of(loop: asyncio.AbstractEventLoop) -> Outbox:
    outbox = _outboxes.get(loop)
    if outbox is None:
        outbox = _outboxes[loop] = Outbox(loop)
    return outbox


class HeldHead:
    """A connection's transport that holds what is written in one turn of the
    event loop and sends it when the turn ends (:class:`Outbox`), in one
    write: a head and its body (every whole answer: uvicorn sends the body in
    the same turn as the head) become one ``send``, and every connection's
    answers of the turn go out back to back. Nothing waits past its turn, so
    a streamed answer's chunks and a head whose body comes later go out as
    before. Closing writes what is held first; aborting drops it, as it drops
    the transport's buffer."""

    __slots__ = ("held", "outbox", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.outbox = outbox_of(loop)
        self.held: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        held = self.held
        if held is None:
            self.held = [bytes(data)]
            self.outbox.hold(self)
        else:
            held.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        self.flush()
        self.transport.writelines(lines)

    def flush(self) -> None:
        held = self.held
        if held is not None:
            self.held = None
            if self.transport.is_closing():  # the peer went away meanwhile
                return
            if len(held) == 1:
                self.transport.write(held[0])
            elif sum(map(len, held)) <= _JOINED:
                self.transport.write(b"".join(held))
            else:
                self.transport.writelines(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def abort(self) -> None:
        self.held = None
        self.transport.abort()

    def get_write_buffer_size(self) -> int:
        held = sum(map(len, self.held)) if self.held else 0
        return self.transport.get_write_buffer_size() + held

    def __getattr__(self, name: str) -> Any:
        # Everything else (extra info, reading paused and resumed, ...) is the transport's.
        return getattr(self.transport, name)


#: What is held up to this size is joined into one buffer (one copy); more is
#: handed over as it is (``writelines``: still one system call).
_JOINED = 16 * 1024


class OneWriteHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, its writes through :class:`HeldHead`,
    and its keep-alive timer armed once an idle stretch, not once an answer.

    uvicorn cancels the connection's keep-alive timer at each request's
    first bytes and arms a new one at each answer's end: a timer made and
    dropped per request (about 2 % of a warm verdict's CPU). Here a request
    marks the connection busy (``idle_since`` ``None``) and an answer's end
    marks when it fell idle, arming the timer only if none is armed; when
    the timer fires it closes a connection idle for the whole timeout, and
    otherwise waits out the rest (``_keep_alive_due``)."""

    #: When the connection last fell idle (its answer complete), or ``None``
    #: while a request is under way.
    idle_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(HeldHead(transport, self.loop))  # type: ignore[arg-type]

    def _unset_keepalive_if_required(self) -> None:
        self.idle_since = None

    def on_response_complete(self) -> None:
        # uvicorn 0.54's, but for the keep-alive timer's arming.
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self.idle_since = now = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_at(
                now + self.timeout_keep_alive, self._keep_alive_due
            )

    def _keep_alive_due(self) -> None:
        self.timeout_keep_alive_task = None
        since = self.idle_since
        if since is None:
            return  # a request under way: its answer arms the timer again
        due = since + self.timeout_keep_alive
        if self.loop.time() < due:
            self.timeout_keep_alive_task = self.loop.call_at(due, self._keep_alive_due)
        else:
            self.timeout_keep_alive_handler()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None

    def handle_websocket_upgrade(self) -> None:
        # The socket's next protocol gets the transport itself.
        held: Any = self.transport
        held.flush()
        self.transport = held.transport
        super().handle_websocket_upgrade()


class DrainingMultiprocess(Multiprocess):
    """uvicorn's supervisor of several workers, which closes its copy of the
    listening socket when it is told to stop (before it passes SIGTERM on).

    The workers close theirs as their graceful shutdown begins; once the
    supervisor's is closed too the socket is gone, and a new connection is
    refused at once (one waiting in the backlog is reset) while the workers
    finish what they serve."""

    def terminate_all(self) -> None:
        for sock in self.sockets:
            sock.close()
        super().terminate_all()


def main(argv: list[str] | None = None) -> None:
    """uvicorn's command line (``bin/serve``), with :class:`DrainingMultiprocess`."""
    # The module (``uvicorn.main`` as an attribute is its click command).
    command_line: Any = importlib.import_module("uvicorn.main")
    command_line.Multiprocess = DrainingMultiprocess
    command_line.main(args=argv, prog_name="uvicorn")


if __name__ == "__main__":
    main()
