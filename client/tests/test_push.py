"""Push mode: one change stream per client; a change drops the cache at once,
and without the stream freshness falls back to ``max_age``.

The server is an ``httpx.MockTransport``: ``/verdict`` answers and counts,
``/changes`` is a stream the test writes events into, one queue per connection.
"""

from __future__ import annotations

import asyncio
import http.server
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from curfew_client.policy import VerdictCache, cache_key
from curfew_client.push import ChangeFeed, SseParser
from curfew_client.verdict import CurfewVerdict
from fake_clock import Clock
from wire_samples import WINDING

NOW = 1_790_000_000.0  # long before WINDING's valid_until; max_age is 60
READY = b'event: ready\ndata: {"heartbeat": 15}\n\n'
CHANGE = b"event: change\ndata: {}\n\n"


class Server:
    """Verdicts, counted; and change streams the test feeds (``None`` ends one)."""

    def __init__(self, *, asynchronous: bool = False) -> None:
        self.asynchronous = asynchronous
        self.verdicts = 0
        self.streams: list[queue.Queue[bytes | None]] = []
        self.refuse: int | None = None

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/verdict"):
            self.verdicts += 1
            return httpx.Response(200, json=WINDING)
        assert request.url.path == "/api/v1/changes"
        assert request.headers["Authorization"] == "Bearer t"
        if self.refuse is not None:
            return httpx.Response(self.refuse, json={"error": "unavailable", "message": "no"})
        events: queue.Queue[bytes | None] = queue.Queue()
        self.streams.append(events)
        headers = {"Content-Type": "text/event-stream"}
        if self.asynchronous:
            return httpx.Response(200, headers=headers, content=_aiter(events))
        return httpx.Response(200, headers=headers, content=_iter(events))


def _iter(events: queue.Queue[bytes | None]) -> Iterator[bytes]:
    while (chunk := events.get(timeout=30)) is not None:
        yield chunk


async def _aiter(events: queue.Queue[bytes | None]) -> AsyncIterator[bytes]:
    while (chunk := await asyncio.to_thread(events.get, timeout=30)) is not None:
        yield chunk


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll with a deadline (the stream is another thread): not a timing test."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.005)


async def await_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.005)


def client(server: Server, clock: Clock, *, push: bool) -> CurfewClient:
    return CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server.handler), clock=clock, push=push
    )


def test_while_the_stream_is_live_a_verdict_stays_fresh_past_max_age() -> None:
    server, clock = Server(), Clock(NOW)
    pushed, control = client(server, clock, push=True), client(Server(), clock, push=False)
    try:
        wait_for(lambda: len(server.streams) == 1, "the stream was opened")
        server.streams[0].put(READY)
        wait_for(lambda: pushed.cache.pushed, "the stream is live")
        first = pushed.verdict(session_id="s")
        control.verdict(session_id="s")
        clock.now += 600  # ten times max_age, still before valid_until
        assert pushed.verdict(session_id="s") is first  # changes would have been pushed
        assert server.verdicts == 1
        control.verdict(session_id="s")
        assert control.cache.entries[cache_key("s", None, False)].fetched_at == clock.now
    finally:
        server.streams[0].put(None)
        pushed.close()
        control.close()


def test_a_change_drops_the_cache_and_a_dead_stream_falls_back_to_max_age() -> None:
    server, clock = Server(), Clock(NOW)
    gateway = client(server, clock, push=True)
    try:
        wait_for(lambda: len(server.streams) == 1, "the stream was opened")
        server.streams[0].put(READY)
        wait_for(lambda: gateway.cache.pushed, "the stream is live")
        gateway.verdict()
        gateway.verdict()
        assert server.verdicts == 1
        server.streams[0].put(CHANGE)
        assert gateway.feed is not None
        wait_for(lambda: gateway.feed is not None and gateway.feed.changes == 1, "the change")
        gateway.verdict()
        assert server.verdicts == 2  # asked again after the change

        server.refuse = 503  # reconnections fail from now on
        server.streams[0].put(None)  # the stream ends
        wait_for(lambda: not gateway.cache.pushed, "the stream is down")
        clock.now += 30
        gateway.verdict()
        assert server.verdicts == 2  # within max_age: still cached
        clock.now += 31
        gateway.verdict()
        assert server.verdicts == 3  # past max_age, as without push
    finally:
        gateway.close()


def test_a_reconnect_drops_the_cache_once() -> None:
    server, clock = Server(), Clock(NOW)
    gateway = client(server, clock, push=True)
    try:
        wait_for(lambda: len(server.streams) == 1, "the stream was opened")
        server.streams[0].put(READY)
        wait_for(lambda: gateway.cache.pushed, "the stream is live")
        gateway.verdict()
        server.streams[0].put(None)  # dropped; the client reconnects by itself
        wait_for(lambda: len(server.streams) == 2, "the stream was reopened")
        gateway.verdict()
        assert server.verdicts == 1  # within max_age while it reconnects
        server.streams[1].put(READY)  # a change may have been missed meanwhile
        wait_for(lambda: gateway.feed is not None and gateway.feed.connects == 2, "live again")
        gateway.verdict()
        gateway.verdict()
        assert server.verdicts == 2
    finally:
        server.streams[-1].put(None)
        gateway.close()


def test_close_stops_the_stream() -> None:
    server, clock = Server(), Clock(NOW)
    gateway = client(server, clock, push=True)
    wait_for(lambda: len(server.streams) == 1, "the stream was opened")
    server.streams[0].put(READY)
    wait_for(lambda: gateway.cache.pushed, "the stream is live")
    server.streams[0].put(None)
    gateway.close()
    assert not gateway.cache.pushed
    opened = len(server.streams)
    for stream in server.streams:
        stream.put(None)  # (one reopened in the meantime ends too)
    assert gateway._push_thread is not None
    gateway._push_thread.join(timeout=5)
    assert not gateway._push_thread.is_alive()
    assert len(server.streams) == opened  # not reopened after close


async def test_the_async_client_follows_the_stream_as_a_task() -> None:
    server, clock = Server(asynchronous=True), Clock(NOW)
    gateway = AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server.handler), clock=clock, push=True
    )
    first = await gateway.verdict()  # the first call starts the stream
    await await_for(lambda: len(server.streams) == 1, "the stream was opened")
    server.streams[0].put(READY)
    await await_for(lambda: gateway.cache.pushed, "the stream is live")
    await gateway.verdict()
    assert server.verdicts == 2  # "ready" dropped what was cached before it
    clock.now += 600
    await gateway.verdict()
    assert server.verdicts == 2
    server.streams[0].put(CHANGE)
    await await_for(lambda: gateway.feed is not None and gateway.feed.changes == 1, "the change")
    assert await gateway.verdict() == first
    assert server.verdicts == 3
    server.streams[0].put(None)
    await gateway.aclose()
    assert not gateway.cache.pushed


def test_a_verdict_asked_before_a_change_is_not_cached_after_it() -> None:
    cache = VerdictCache(
        server="s",
        policy="fail_open",
        last_known_limit=60,
        last_known_fallback="fail_open",
        off_duty_reply="。",
        retry_interval=1,
        max_entries=8,
        clock=lambda: NOW,
    )
    verdict = CurfewVerdict.from_payload(WINDING)
    key = cache_key(None, None, False)
    asked_in = cache.generation
    cache.clear()  # a change was pushed while the request was on its way
    cache.store(key, verdict, NOW, asked_in)
    assert key not in cache.entries
    cache.store(key, verdict, NOW, cache.generation)
    assert key in cache.entries


def test_the_event_parser() -> None:
    parser = SseParser()
    lines = ["event: ready", 'data: {"heartbeat": 15}', "", ": heartbeat", "", "data: x", ""]
    events = [event for line in lines if (event := parser.feed(line)) is not None]
    assert [(e.name, e.data) for e in events] == [("ready", '{"heartbeat": 15}'), ("message", "x")]


@pytest.mark.parametrize(("status", "longest"), [(401, True), (503, False)])
def test_backoff_grows_and_a_refused_token_waits_longest(status: int, longest: bool) -> None:
    from curfew_client.push import LONGEST_RETRY, StreamRefused

    cache: Any = VerdictCache(
        server="s",
        policy="fail_open",
        last_known_limit=60,
        last_known_fallback="fail_open",
        off_duty_reply="。",
        retry_interval=1,
        max_entries=8,
        clock=lambda: NOW,
    )
    feed = ChangeFeed(cache, "http://curfew/api/v1/changes")
    delays = [feed.down(StreamRefused(status, None)) for _ in range(3)]
    if longest:
        assert all(delay >= LONGEST_RETRY / 2 for delay in delays)
    else:
        assert delays[0] <= 0.5 < delays[2]


class QuietStream(http.server.BaseHTTPRequestHandler):
    """A real server's change stream between heartbeats: ``ready``, then
    nothing (the server's next heartbeat is 15 s away) until the client goes."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(READY), READY))
        self.wfile.flush()
        self.rfile.read(1)  # until the client's side is gone

    def log_message(self, *args: Any) -> None:
        pass


def test_close_wakes_a_stream_waiting_for_its_next_heartbeat() -> None:
    """Over a real socket a read waits in the kernel: closing the client's
    connections from another thread did not wake it, and ``close()`` waited
    out its two-second join with the stream's thread still blocked."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietStream)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        gateway = CurfewClient(f"http://127.0.0.1:{server.server_address[1]}", "t", push=True)
        wait_for(lambda: gateway.cache.pushed, "the stream is live")
        gateway.close()
        assert gateway._push_thread is not None
        assert not gateway._push_thread.is_alive()  # ended within close(), not left blocked
        assert not gateway.cache.pushed
    finally:
        server.shutdown()
        server.server_close()
