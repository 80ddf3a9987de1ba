"""bin/serve's HTTP protocol writes a response's head with its body in one
system call (``curfew_site/serve.py``: ``OneWriteHttpProtocol``, ``HeldHead``);
the served suites (``tests/production``) run it whole behind ``bin/serve``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from curfew_site.serve import HeldHead, OneWriteHttpProtocol


class Transport:
    """What a protocol writes, a write a call."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def write_eof(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555)}.get(name, default)


async def test_a_head_and_its_body_written_in_one_turn_are_one_write_when_it_ends():
    transport = Transport()
    held = HeldHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    held.write(b"{}")
    assert transport.writes == [], "held until the turn ends"
    assert held.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
    await asyncio.sleep(0)
    assert transport.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    await asyncio.sleep(0)
    assert len(transport.writes) == 1, "nothing more after it"


async def test_a_head_alone_goes_out_when_the_turn_ends_and_a_stream_as_it_comes():
    transport = Transport()
    held = HeldHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    await asyncio.sleep(0)
    assert transport.writes == [b"head"]
    held.write(b"chunk 1")
    await asyncio.sleep(0)
    held.write(b"chunk 2")
    await asyncio.sleep(0)
    assert transport.writes == [b"head", b"chunk 1", b"chunk 2"]


async def test_every_connections_answers_of_a_turn_go_out_together_when_it_ends():
    loop = asyncio.get_running_loop()
    first, second = Transport(), Transport()
    one = HeldHead(first, loop)  # type: ignore[arg-type]
    other = HeldHead(second, loop)  # type: ignore[arg-type]
    one.write(b"head 1")
    one.write(b"body 1")
    # More of the turn's work, then another connection's whole answer: the
    # first is not written as soon as it is whole, but with the second.
    other.write(b"head 2")
    other.write(b"body 2")
    assert first.writes == second.writes == []
    await asyncio.sleep(0)
    assert first.writes == [b"head 1body 1"]
    assert second.writes == [b"head 2body 2"]
    one.write(b"answer 3")
    await asyncio.sleep(0)
    assert first.writes == [b"head 1body 1", b"answer 3"], "the next turn's, in the next"


async def test_a_long_answer_goes_out_beside_its_head_and_order_is_kept():
    transport = Transport()
    held = HeldHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    body = b"x" * (64 * 1024)
    held.write(b"head")
    held.write(body)
    held.write(b"next head")
    assert held.get_write_buffer_size() == len(b"head") + len(body) + len(b"next head")
    held.writelines([b"a", b"b"])
    # What was held first (one write: writelines), then the lines.
    assert transport.writes == [b"head" + body + b"next head", b"ab"]
    assert held.get_write_buffer_size() == 0
    await asyncio.sleep(0)
    assert len(transport.writes) == 2


async def test_close_writes_what_is_held_first_and_abort_drops_it():
    transport = Transport()
    held = HeldHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    assert held.get_write_buffer_size() == len(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    held.close()
    assert transport.writes == [b"HTTP/1.1 400 Bad Request\r\n\r\n"]
    assert transport.closed
    await asyncio.sleep(0)
    assert len(transport.writes) == 1

    dropped = Transport()
    held = HeldHead(dropped, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    held.abort()
    await asyncio.sleep(0)
    assert dropped.writes == []
    assert dropped.aborted


async def test_a_peer_gone_before_the_turn_ends_is_not_written_to():
    transport = Transport()
    held = HeldHead(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"head")
    transport.closed = True  # the connection was lost in the same turn
    await asyncio.sleep(0)
    assert transport.writes == []
    assert held.get_extra_info("peername") == ("127.0.0.1", 5555), "the rest is the transport's"


class Counted:
    """The server's transport, its writes counted (as system calls)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.transport.write(data)

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def counting(base: type[HttpToolsProtocol], seen: list[Counted]) -> type[HttpToolsProtocol]:
    class Counting(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            counted = Counted(transport)
            seen.append(counted)
            super().connection_made(counted)  # type: ignore[arg-type]

    return Counting


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()
    headers = [(b"content-type", b"application/json")]
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b'{"part": 1}', "more_body": True})
        await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    body = b'{"state": "on-duty"}'
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def serving(protocol: type[HttpToolsProtocol], **options: Any) -> AsyncIterator[int]:
    """A uvicorn serving ``app`` with ``protocol`` (and ``options``, uvicorn's
    settings) on a free port, for as long as the block runs: its port."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        http=protocol,
        lifespan="off",
        log_level="warning",
        **options,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.01)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def served(protocol: type[HttpToolsProtocol], paths: list[str]) -> list[bytes]:
    """Each path asked on one kept-alive connection to a uvicorn serving
    ``app`` with ``protocol``; the answers as read."""
    async with serving(protocol) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answers = []
        for path in paths:
            writer.write(f"GET {path} HTTP/1.1\r\nhost: testserver\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            if b"transfer-encoding: chunked" in head:
                rest = await reader.readuntil(b"0\r\n\r\n")
            else:
                length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
                rest = await reader.readexactly(length)
            answers.append(head + rest)
        writer.close()
        return answers


@pytest.mark.parametrize(
    ("protocol", "writes"),
    [(HttpToolsProtocol, 2), (OneWriteHttpProtocol, 1)],
    ids=["uvicorn's own (control)", "bin/serve's"],
)
async def test_a_whole_answer_is_one_write_on_the_wire(protocol, writes):
    seen: list[Counted] = []
    answers = await served(counting(protocol, seen), ["/verdict", "/verdict"])
    assert len(answers) == 2
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert answer.endswith(b'\r\n\r\n{"state": "on-duty"}')
    (connection,) = seen
    assert len(connection.writes) == 2 * writes
    assert b"".join(connection.writes).count(b"HTTP/1.1 200 OK") == 2


async def test_a_streamed_answer_goes_out_as_it_comes():
    seen: list[Counted] = []
    (answer,) = await served(counting(OneWriteHttpProtocol, seen), ["/stream"])
    assert b"transfer-encoding: chunked" in answer
    assert answer.endswith(b'\r\n\r\nb\r\n{"part": 1}\r\n0\r\n\r\n')
    # The head at its turn's end, then each chunk in its own turn.
    assert len(seen[0].writes) == 3


async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET /verdict HTTP/1.1\r\nhost: testserver\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def keep_alive_timers(loop: asyncio.AbstractEventLoop, monkeypatch: Any) -> list[str]:
    """The timers the loop is asked for, by their callback's name (asyncio's
    ``call_later`` is its ``call_at``)."""
    armed: list[str] = []
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        armed.append(callback.__name__)
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counted)
    return armed


@pytest.mark.parametrize(
    ("protocol", "timers"),
    [(HttpToolsProtocol, 10), (OneWriteHttpProtocol, 1)],
    ids=["uvicorn's own (control)", "bin/serve's"],
)
async def test_a_connections_answers_arm_its_keep_alive_timer_once(protocol, timers, monkeypatch):
    async with serving(protocol, timeout_keep_alive=5) as port:
        armed = keep_alive_timers(asyncio.get_running_loop(), monkeypatch)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(10):
            assert (await ask(reader, writer)).endswith(b'{"state": "on-duty"}')
        writer.close()
        keep_alive = [name for name in armed if "keep_alive" in name]
        assert len(keep_alive) == timers


@pytest.mark.parametrize(
    "protocol", [HttpToolsProtocol, OneWriteHttpProtocol], ids=["uvicorn's own", "bin/serve's"]
)
async def test_keep_alive_closes_a_connection_idle_for_the_timeout_and_only_then(protocol):
    async with serving(protocol, timeout_keep_alive=0.3) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        # Busy across three timeouts, a request every 0.1 s: kept open.
        for _ in range(9):
            await ask(reader, writer)
            await asyncio.sleep(0.1)
        assert not reader.at_eof()
        # Then idle: closed once the timeout has passed since the last answer.
        started = asyncio.get_running_loop().time()
        assert await asyncio.wait_for(reader.read(), 3) == b""
        assert asyncio.get_running_loop().time() - started >= 0.15
        writer.close()
