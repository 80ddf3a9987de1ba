"""Push mode against a hostile or broken change stream (issue 41).

Whoever writes the stream (a broken server, a man in the middle on plain
``http``), the client stays bounded in memory and time, only ever drops
cached verdicts (never makes one fresher or changes one), and falls back to
``max_age`` when the stream is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from curfew_client.policy import VerdictCache, cache_key
from curfew_client.push import (
    LONGEST_ADVICE,
    MAX_EVENT,
    MAX_LINE,
    MAX_REASON,
    ChangeFeed,
    LineSplitter,
    StreamBroken,
    StreamRefused,
    retry_after,
)
from curfew_client.verdict import CurfewVerdict
from fake_clock import Clock
from wire_samples import WINDING

NOW = 1_790_000_000.0
CHUNK = 16 * 1024
#: What a hostile stream could send before the test gives up on it.
ENDLESS = 32 * 1024 * 1024


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.005)


async def await_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.005)


def _cache() -> VerdictCache:
    return VerdictCache(
        server="s",
        policy="fail_open",
        last_known_limit=60,
        last_known_fallback="fail_open",
        off_duty_reply="。",
        retry_interval=1,
        max_entries=8,
        clock=lambda: NOW,
    )


def _feed() -> ChangeFeed:
    feed = ChangeFeed(_cache(), "http://curfew/api/v1/changes")
    feed.connected()
    return feed


class Hostile:
    """A server whose verdicts are fine and whose change stream is ``body()``:
    counts what each stream handed out, and which hosts were asked."""

    def __init__(self, body: Callable[[], Iterator[bytes]]) -> None:
        self.body = body
        self.sent: list[int] = []  # bytes handed out, per stream
        self.hosts: list[str] = []
        self.verdicts = 0

    def _counted(self, index: int) -> Iterator[bytes]:
        for chunk in self.body():
            self.sent[index] += len(chunk)
            yield chunk

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.hosts.append(request.url.host)
        if request.url.path.endswith("/verdict"):
            self.verdicts += 1
            return httpx.Response(200, json=WINDING)
        self.sent.append(0)
        index = len(self.sent) - 1
        return httpx.Response(
            200, headers={"Content-Type": "text/event-stream"}, content=self._counted(index)
        )

    def ahandler(self, request: httpx.Request) -> httpx.Response:
        response = self.handler(request)
        if not request.url.path.endswith("/verdict"):
            chunks = response.stream

            async def aiter() -> AsyncIterator[bytes]:
                for chunk in chunks:  # type: ignore[union-attr]
                    yield chunk
                    await asyncio.sleep(0)

            response = httpx.Response(200, headers=response.headers, content=aiter())
        return response


def _endless_line() -> Iterator[bytes]:
    yield b'event: ready\ndata: {"heartbeat": 15}\n\n'
    for _ in range(ENDLESS // CHUNK):
        yield b"x" * CHUNK  # one line that never ends


def _endless_event() -> Iterator[bytes]:
    yield b'event: ready\ndata: {"heartbeat": 15}\n\n'
    yield b"event: change\n"
    line = b"data: " + b"y" * 1000 + b"\n"
    for _ in range(ENDLESS // len(line)):
        yield line  # short lines, one event that never ends


@pytest.mark.parametrize("body", [_endless_line, _endless_event], ids=["line", "event"])
def test_an_endless_frame_drops_the_stream_not_the_memory(
    body: Callable[[], Iterator[bytes]],
) -> None:
    server, clock = Hostile(body), Clock(NOW)
    gateway = CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server.handler), clock=clock, push=True
    )
    try:
        wait_for(lambda: len(server.sent) >= 2, "the stream was dropped and asked again")
        # Dropped once past its bound, not read to its (hostile) end.
        assert server.sent[0] <= MAX_LINE + MAX_EVENT + 4 * CHUNK
        assert gateway.feed is not None
        assert gateway.feed.connects >= 1
    finally:
        gateway.close()


async def test_the_async_client_drops_an_endless_line_too() -> None:
    server, clock = Hostile(_endless_line), Clock(NOW)
    gateway = AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server.ahandler), clock=clock, push=True
    )
    try:
        await gateway.verdict()  # starts the stream
        await await_for(lambda: len(server.sent) >= 1 and server.sent[0] > 0, "the stream began")
        await await_for(lambda: not gateway.cache.pushed and server.sent[0] > MAX_LINE, "dropped")
        await asyncio.sleep(0.05)
        assert server.sent[0] <= MAX_LINE + 4 * CHUNK
    finally:
        await gateway.aclose()


def test_a_dropped_stream_leaves_verdicts_aging_by_max_age() -> None:
    stop = threading.Event()

    def ready_then_garbage() -> Iterator[bytes]:
        yield b"event: ready\n\n"
        stop.wait(10)  # live for as long as the test needs
        yield b"z" * (MAX_LINE + 1)

    server, clock = Hostile(ready_then_garbage), Clock(NOW)
    gateway = CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server.handler), clock=clock, push=True
    )
    try:
        wait_for(lambda: gateway.cache.pushed, "the stream is live")
        gateway.verdict()
        stop.set()
        wait_for(lambda: not gateway.cache.pushed, "the stream was dropped")
        clock.now += 61  # past max_age: a dropped stream vouches for nothing
        gateway.verdict()
        assert server.verdicts == 2
    finally:
        stop.set()
        gateway.close()


def test_the_line_splitter_is_bounded_and_reads_every_line_ending() -> None:
    splitter = LineSplitter(limit=8)
    assert splitter.feed(b"a\r") == ["a"]
    assert splitter.feed(b"\nb\rc\n") == ["b", "c"]  # "\r\n" split between chunks: one end
    assert splitter.feed("é".encode()[:1]) == []
    assert splitter.feed("é".encode()[1:] + b"\n") == ["é"]  # a character split in two
    assert splitter.feed(b"\xff\x00\n") == ["\ufffd\x00"]  # not UTF-8: replaced, no error
    assert splitter.feed(b"12345678") == []
    with pytest.raises(StreamBroken):
        splitter.feed(b"9")
    with pytest.raises(StreamBroken):
        LineSplitter(limit=8).feed(b"123456789\n")


def test_garbage_in_a_change_drops_everything_and_raises_nothing() -> None:
    feed = _feed()
    verdict = CurfewVerdict.from_payload(WINDING)
    for data in [b"[" * 5000, b"{not json", b'{"user": ["ada"]}', b'{"user": 7}', b"\x00\xff"]:
        feed.cache.store(cache_key(None, None, False, "ada"), verdict, NOW)
        feed.cache.store(cache_key(None, None, False, "bob"), verdict, NOW)
        feed.chunk(b"event: change\ndata: " + data + b"\n\n")
        assert feed.cache.entries == {}, data  # the safe reading: everyone asks again


def test_unknown_events_and_fields_change_nothing() -> None:
    feed = _feed()
    verdict = CurfewVerdict.from_payload(WINDING)
    key = cache_key(None, None, False)
    feed.cache.store(key, verdict, NOW)
    feed.chunk(b"event: verdict\ndata: " + b'{"max_tokens": 1000000000000000000000}\n\n')
    feed.chunk(b'retry: 0\nid: \x00\nevent: \ndata: {"valid_until": "9999-12-31"}\n\n')
    feed.chunk(b":" + b"h" * 1000 + b"\n\n")
    assert feed.cache.entries[key].verdict is verdict
    assert not feed.cache.pushed  # only "ready" makes the stream live


def test_an_end_reason_is_logged_short(caplog: pytest.LogCaptureFixture) -> None:
    feed = _feed()
    feed.chunk(b'event: end\ndata: {"reason": "' + b"r" * 60_000 + b'"}\n\n')
    assert feed.ended_by_server is not None
    assert len(feed.ended_by_server) <= MAX_REASON
    feed.chunk(b"event: end\ndata: " + b"s" * 60_000 + b"\n\n")
    assert len(feed.ended_by_server) <= MAX_REASON
    with caplog.at_level(logging.WARNING, logger="curfew.client"):
        feed.down(None)
    assert all(len(record.getMessage()) < 1000 for record in caplog.records)


def test_a_stream_repeating_ready_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    feed = _feed()
    with caplog.at_level(logging.INFO, logger="curfew.client"):
        feed.chunk(b"event: ready\n\n" * 1000)
    assert len([r for r in caplog.records if "is live" in r.getMessage()]) == 1
    assert feed.cache.pushed


@pytest.mark.parametrize("advice", ["99999999999", "1" + "0" * 400, "601"])
def test_a_huge_retry_after_is_not_believed(advice: str) -> None:
    assert retry_after(advice) == LONGEST_ADVICE
    feed = _feed()
    delay = feed.down(StreamRefused(503, float(advice)))
    assert delay <= LONGEST_ADVICE
    assert retry_after("²") is None  # a digit to str.isdigit, not to float


def test_a_redirect_is_not_followed_by_the_stream_nor_the_verdict() -> None:
    asked: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append((request.url.host, request.headers.get("Authorization")))
        return httpx.Response(307, headers={"Location": "http://elsewhere.example/api/v1/x"})

    clock = Clock(NOW)
    gateway = CurfewClient(
        "http://curfew",
        "cfw_secret",
        transport=httpx.MockTransport(handler),
        clock=clock,
        push=True,
        policy="fail_closed",
        report_decisions=False,
    )
    try:
        wait_for(lambda: gateway.feed is not None and gateway.feed._failures >= 1, "refused")
        verdict = gateway.verdict()
        assert verdict.origin == "fail_closed"
        assert verdict.short_circuit
        assert not gateway.cache.pushed
    finally:
        gateway.close()
    assert {host for host, _ in asked} == {"curfew"}  # the token never went elsewhere


def test_a_slow_stream_holds_no_more_than_a_line() -> None:
    """A stream trickling a byte at a time (a slow-loris) only keeps one
    connection: the partial line it holds is bounded like any other."""
    splitter = LineSplitter(limit=MAX_LINE)
    for _ in range(MAX_LINE):
        splitter.feed(b"x")
    with pytest.raises(StreamBroken):
        splitter.feed(b"x")
