"""Capsule test helpers: sockets on the real ASGI app, a clock the test sets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.realtime import clock
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client

SHANGHAI = ZoneInfo("Asia/Shanghai")
#: The socket's own origin: what a page served from ``HOST`` sends.
HOST = "127.0.0.1:8000"
ALLOWED_ORIGIN = f"http://{HOST}"
FOREIGN_ORIGIN = "https://evil.example"


def local(text: str) -> datetime:
    """``"2026-09-29 10:00"`` as an aware instant in the default zone (Asia/Shanghai)."""
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)


class RunningClock:
    """A wall clock that starts where the test puts it and then runs in real time,
    so the consumer's real event-loop timer meets a boundary the test chose."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.t0 = time.monotonic()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.t0)


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """The in-memory layer's queues belong to one event loop; each test has its own."""
    from channels.layers import channel_layers

    from curfew_core.realtime import consumers

    channel_layers.backends.clear()
    # A test that never disconnects its sockets leaves their places counted.
    consumers._per_address.clear()
    yield
    channel_layers.backends.clear()


#: The sockets the running test opened (``socket``), closed after it.
_opened: list[WebsocketCommunicator] = []
#: How long a socket's app may take to end once told its client left.
CLOSE_SECONDS = 10.0


async def _end(comm: WebsocketCommunicator) -> None:
    """Tell the app its client left and wait until it ends, as a server does."""
    app = comm.future
    if not app.done():
        await comm.send_input({"type": "websocket.disconnect", "code": 1001})
        await asyncio.wait({app}, timeout=CLOSE_SECONDS)
    if not app.done():
        app.cancel()
        await asyncio.wait({app}, timeout=CLOSE_SECONDS)
        raise AssertionError(f"a socket's app did not end when its client left: {app!r}")
    if not app.cancelled():
        app.exception()  # retrieved: a failed app fails its own test, not the loop's log


@pytest.fixture(autouse=True)
async def _sockets_closed(_fresh_channel_layer: None) -> AsyncIterator[None]:
    """Every socket a test opened ends before its event loop closes.

    A test that stops at an assertion, a refusal, a test that never disconnects:
    their apps were still waiting for the client (with Redis, in the channel
    layer's receive) when pytest-asyncio closed the loop and cancelled
    whatever was left, all at once, and the close waited for every one of them
    to end (600 s, in CI, once). Here each is told its client left, as a server
    would tell it, and awaited; the hub stops with its last socket."""
    _opened.clear()
    yield
    opened = list(_opened)
    _opened.clear()
    loop = asyncio.get_running_loop()
    for comm in opened:
        if comm.future.get_loop() is loop:  # not one of another directory's tests
            await _end(comm)


@pytest.fixture
def set_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Callable[[], datetime]]:
    """``set_clock(instant)`` freezes the capsule clock; ``running=True`` lets it run."""

    def setter(start: datetime, *, running: bool = False) -> Callable[[], datetime]:
        fake: Callable[[], datetime] = RunningClock(start) if running else (lambda: start)
        monkeypatch.setattr(clock, "now", fake)
        return fake

    return setter


def embed_token(user: User) -> str:
    return token_create(user=user, name="capsule test", kind=ApiToken.Kind.EMBED)[1]


def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


def socket(
    *,
    token: str | None = None,
    cookie: str | None = None,
    origin: str | None = ALLOWED_ORIGIN,
    host: str | None = HOST,
    extra: list[tuple[bytes, bytes]] | None = None,
    query: str = "",
) -> WebsocketCommunicator:
    """A socket on the real app; ``query`` adds parameters (``"band=24h"``)."""
    from curfew_site.asgi import application

    headers: list[tuple[bytes, bytes]] = list(extra or [])
    if host is not None:
        headers.append((b"host", host.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    params = [f"token={token}"] if token is not None else []
    params += [query] if query else []
    path = "/ws/capsule/" + ("?" + "&".join(params) if params else "")
    comm = WebsocketCommunicator(application, path, headers=headers)
    _opened.append(comm)  # closed after the test (``_sockets_closed``)
    return comm


async def open_live(comm: WebsocketCommunicator) -> dict[str, Any]:
    """Connect and return the first state (fails if the socket was refused)."""
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return await next_state(comm, timeout=5)


async def next_state(comm: WebsocketCommunicator, timeout: float = 3) -> dict[str, Any]:
    """The next state the socket sends (fails on anything else: a close, nothing)."""
    message = await comm.receive_output(timeout=timeout)
    assert message["type"] == "websocket.send", message
    payload: dict[str, Any] = json.loads(message["text"])
    return payload


@pytest.fixture
def in_memory_layer(settings: Any) -> Iterator[None]:
    """For tests that read the layer's group table, which only the in-memory
    layer exposes; the behaviour itself is the same on Redis (CI runs the rest there)."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def closed(comm: WebsocketCommunicator, timeout: float = 3) -> tuple[int, str]:
    """The close code and reason of an open socket's next message (fails on anything else)."""
    message = await comm.receive_output(timeout=timeout)
    assert message["type"] == "websocket.close", f"expected a close, got {message}"
    return message["code"], message.get("reason", "")


@pytest.fixture
def frozen(set_clock: Callable[..., Callable[[], datetime]]) -> None:
    set_clock(local("2026-09-29 20:00"))  # on duty, next change at 23:00: no timer meanwhile


async def refusal(comm: WebsocketCommunicator) -> tuple[int, str]:
    """Connect and return the close code and reason; no state may come first."""
    connected, _ = await comm.connect(timeout=5)
    assert connected, "refusals are accepted first so the browser can read the code"
    message = await comm.receive_output(timeout=5)
    assert message["type"] == "websocket.close", f"expected a close, got {message}"
    return message["code"], message.get("reason", "")


def band_cells(band: dict[str, Any]) -> list[str]:
    """A capsule band's runs spelled out, one state per cell."""
    return [state for state, count in band["runs"] for _ in range(count)]
