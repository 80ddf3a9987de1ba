"""``GET /api/v1/changes`` in-process, over raw ASGI (a test client would read
the endless stream to its end first): the events, the re-checks, the exits,
and the refusals in the API's shape."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.db import DatabaseError
from django.test import override_settings

from curfew_core import throttle
from curfew_core.models import ApiToken
from curfew_core.realtime import changes, watch
from curfew_core.services.events import user_group
from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client
from curfew_testkit.asgi_scope import http_scope

PATH = "/api/v1/changes"
db = sync_to_async


@dataclass
class Stream:
    """One request to the ASGI app; what it sent, as it sends it."""

    sent: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def start(self) -> dict[str, Any]:
        message = await asyncio.wait_for(self.sent.get(), 10)
        assert message["type"] == "http.response.start"
        return message

    async def chunk(self) -> bytes:
        message = await asyncio.wait_for(self.sent.get(), 10)
        assert message["type"] == "http.response.body"
        body: bytes = message.get("body", b"")
        if not message.get("more_body", False):
            body += b"<EOF>"
        return body

    async def body(self) -> bytes:
        out = b""
        while not out.endswith(b"<EOF>"):
            out += await self.chunk()
        return out.removesuffix(b"<EOF>")

    async def close(self) -> None:
        self.gone.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, 10)


#: The streams the running test opened, closed after it (``_streams_closed``).
_opened: list[Stream] = []


@pytest.fixture(autouse=True)
async def _streams_closed() -> AsyncIterator[None]:
    """A stream a failing test left open ends before the test's event loop
    closes: its client goes away, as a gateway's would (the loop's close would
    otherwise cancel it in the middle of a channel-layer receive)."""
    _opened.clear()
    yield
    opened = list(_opened)
    _opened.clear()
    for stream in opened:
        if stream.task is not None and not stream.task.done():
            await stream.close()


def open_stream(token: str | None, method: str = "GET") -> Stream:
    from curfew_site.asgi import application as app

    stream = Stream()
    _opened.append(stream)
    headers = [(b"host", b"testserver")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = http_scope(method, PATH, headers, client=("127.0.0.1", 50000))
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await stream.gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        await stream.sent.put(message)

    stream.task = asyncio.get_running_loop().create_task(app(scope, receive, send))
    return stream


def header(start: dict[str, Any], name: str) -> str:
    for key, value in start["headers"]:
        if key.decode().lower() == name.lower():
            return str(value.decode())
    raise KeyError(name)


IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def _use(settings: Any, layers: dict[str, Any]) -> Iterator[None]:
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = layers
    channel_layers.backends.clear()
    yield None
    channel_layers.backends.clear()


@pytest.fixture
def fresh_layer(settings: Any) -> Iterator[None]:
    yield from _use(settings, IN_MEMORY)


@pytest.fixture(params=["in-memory", pytest.param("redis", marks=pytest.mark.redis)])
def each_layer(request: pytest.FixtureRequest, settings: Any) -> Iterator[None]:
    """The in-memory layer, and Redis (whose receive outlives each heartbeat)."""
    if request.param == "in-memory":
        yield from _use(settings, IN_MEMORY)
        return
    redis_url = request.getfixturevalue("redis_url")  # skips without Redis, fails in CI
    redis_layer = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": redis_url, "socket_timeout": 15}],
                "prefix": f"changes-test-{uuid.uuid4().hex[:8]}",
            },
        }
    }
    yield from _use(settings, redis_layer)


@pytest.fixture
def owner(transactional_db: None) -> tuple[User, str]:
    user = User.objects.create_user("stream-owner", password="correct horse battery")
    _, raw = token_create(user=user, name="gateway")
    return user, raw


@pytest.mark.usefixtures("each_layer")
async def test_ready_then_changes_then_heartbeats(
    owner: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    user, raw = owner
    stream = open_stream(raw)
    start = await stream.start()
    assert start["status"] == 200
    assert header(start, "Content-Type") == "text/event-stream"
    assert header(start, "Cache-Control") == "no-store"
    assert await stream.chunk() == b'event: ready\ndata: {"heartbeat": 0.2}\n\n'
    layer = get_channel_layer()
    assert layer is not None
    await layer.group_send(user_group(user.pk), {"type": "user.changed"})
    assert await stream.chunk() == b"event: change\ndata: {}\n\n"
    assert await stream.chunk() == b": heartbeat\n\n"  # nothing happened for a while
    # Another user's change is not this stream's.
    await layer.group_send(user_group(user.pk + 1), {"type": "user.changed"})
    assert await stream.chunk() == b": heartbeat\n\n"
    # Going away leaves the group and stops the watcher it enrolled.
    await stream.close()
    assert not getattr(layer, "groups", {}).get(user_group(user.pk))
    assert watch.watcher_for_this_loop() is None
    if hasattr(layer, "close_pools"):
        await layer.close_pools()


@pytest.mark.usefixtures("fresh_layer")
async def test_a_revoked_token_ends_the_stream(owner: tuple[User, str]) -> None:
    user, raw = owner
    stream = open_stream(raw)
    await stream.start()
    assert (await stream.chunk()).startswith(b"event: ready")
    row = await db(ApiToken.objects.get)(user=user)
    await db(token_revoke)(user=user, token_id=row.pk)  # announced after its commit
    rest = await stream.body()
    assert rest.startswith(b"event: end\n")
    assert json.loads(rest.split(b"data: ")[1]) == {"reason": "token revoked or user deactivated"}
    await stream.close()


@pytest.mark.usefixtures("fresh_layer")
async def test_a_deactivated_user_ends_the_stream(owner: tuple[User, str]) -> None:
    user, raw = owner
    stream = open_stream(raw)
    await stream.start()
    await stream.chunk()
    user.is_active = False
    await db(user.save)()  # the user.recheck signal
    assert (await stream.body()).startswith(b"event: end\n")
    await stream.close()


async def refused(token: str | None, method: str = "GET") -> tuple[dict[str, Any], Any]:
    stream = open_stream(token, method)
    start = await stream.start()
    body = json.loads(await stream.body())
    await stream.close()
    return start, body


@pytest.mark.usefixtures("fresh_layer")
async def test_refusals_are_in_the_apis_shape(
    owner: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, raw = owner
    start, body = await refused(None)
    assert (start["status"], body["error"]) == (401, "unauthorized")
    assert header(start, "WWW-Authenticate") == 'Bearer realm="curfew"'
    start, body = await refused("cfw_not-a-token")
    assert (start["status"], body["message"]) == (401, "unknown or revoked token")
    start, body = await refused(raw, "DELETE")
    assert (start["status"], body["error"], header(start, "Allow")) == (
        405,
        "method_not_allowed",
        "GET",
    )

    monkeypatch.setattr(changes, "get_channel_layer", lambda: None)
    start, body = await refused(raw)
    assert (start["status"], body["error"]) == (503, "unavailable")
    assert header(start, "Retry-After").isdigit()


class BrokenLayer:
    async def new_channel(self, prefix: str = "") -> str:
        return prefix + "x"

    async def group_add(self, group: str, channel: str) -> None:
        raise ConnectionError("Redis is gone")


@pytest.mark.usefixtures("fresh_layer")
async def test_a_dead_channel_layer_or_database_is_a_503(
    owner: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, raw = owner
    monkeypatch.setattr(changes, "get_channel_layer", BrokenLayer)
    start, body = await refused(raw)
    assert (start["status"], body["error"]) == (503, "unavailable")

    def down(*args: Any, **kwargs: Any) -> None:
        raise DatabaseError("the database is down")

    monkeypatch.setattr(throttle, "identify_throttled", down)
    start, body = await refused(raw)
    assert (start["status"], body["error"]) == (503, "unavailable")


@pytest.mark.usefixtures("fresh_layer")
@override_settings(CURFEW_TOKEN_RATE="1/minute")
async def test_the_token_rate_applies(owner: tuple[User, str]) -> None:
    _, raw = owner
    await db(throttle.reset)()
    first = await db(Client().post)(
        "/api/v1/verdict", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )
    assert first.status_code == 200  # the token's one request this minute
    start, body = await refused(raw)
    assert (start["status"], body["error"]) == (429, "rate_limited")
    assert int(header(start, "Retry-After")) >= 1


class CountingLayer:
    """A channel layer whose receives are counted, with how each ended."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.receives = 0
        self.cancelled = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self, channel: str) -> dict[str, Any]:
        self.receives += 1
        try:
            return await self.queue.get()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await self.queue.put(message)

    async def group_add(self, group: str, channel: str) -> None:
        pass

    async def group_discard(self, group: str, channel: str) -> None:
        pass


async def test_a_heartbeat_never_cancels_the_receive_and_the_end_stops_it_by_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A channels_redis receive cancelled in its blocking pop can lose its
    message or never end: the stream keeps one receive across heartbeats and
    ends it with a message to its own channel."""
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.05)

    async def allowed(raw: str, user_id: int) -> bool:
        return True

    monkeypatch.setattr(changes, "still_allowed", allowed)
    layer = CountingLayer()
    stream = changes._stream(layer, "curfew-changes.test", [], "cfw_raw", 1)
    assert (await anext(stream)).startswith(b"event: ready")
    assert [await anext(stream) for _ in range(3)] == [changes.HEARTBEAT] * 3
    assert (layer.receives, layer.cancelled) == (1, 0)  # one receive, waited for across them
    await layer.queue.put({"type": "user.changed"})
    assert await anext(stream) == b"event: change\ndata: {}\n\n"
    assert await anext(stream) == changes.HEARTBEAT
    assert (layer.receives, layer.cancelled) == (2, 0)
    await stream.aclose()  # the client went away
    assert layer.sent == [{"type": changes.STOP}]
    assert (layer.receives, layer.cancelled) == (2, 0)  # ended by the message, not a cancel
    assert layer.queue.empty()
