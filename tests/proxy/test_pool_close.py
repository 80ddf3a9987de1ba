"""Closing the upstream pool is bounded: a loop's end (a test's teardown, a
server's shutdown) waits on the pool's keeper, and aiohttp's graceful close
waits until every connection's transport is closed, which never happens for
one with unsent bytes to a peer that stopped reading. A parallel suite hung
ten minutes on it in a loop's teardown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest

from curfew_core.proxy import upstream


@contextlib.asynccontextmanager
async def deaf_peer() -> AsyncIterator[int]:
    """A server that accepts connections and never reads from them."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.transport.abort()
        server.close()


async def stuck_upload(session: aiohttp.ClientSession, port: int) -> asyncio.Task[None]:
    async def post() -> None:
        with contextlib.suppress(aiohttp.ClientError, asyncio.CancelledError):
            await session.post(f"http://127.0.0.1:{port}/", data=b"x" * (64 << 20))

    task = asyncio.create_task(post())
    await asyncio.sleep(0.5)  # the body fills the socket's buffers, then waits
    return task


@pytest.mark.asyncio
async def test_a_plain_close_waits_on_a_deaf_peer() -> None:
    """The control: aiohttp's own close does not finish while bytes are unsent."""
    async with deaf_peer() as port:
        session = aiohttp.ClientSession()
        task = await stuck_upload(session, port)
        closing = asyncio.ensure_future(session.close())
        done, _ = await asyncio.wait({closing}, timeout=upstream.CLOSE_GRACE_SECONDS + 1)
        assert not done, "the graceful close finished: the scenario no longer hangs"
        closing.cancel()
        for proto in list(session.connector._acquired):  # type: ignore[union-attr]
            proto.transport.abort()
        task.cancel()


@pytest.mark.asyncio
async def test_the_pool_close_is_bounded_and_frees_the_socket() -> None:
    async with deaf_peer() as port:
        session = aiohttp.ClientSession()
        task = await stuck_upload(session, port)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(upstream._bounded_close(session), upstream.CLOSE_GRACE_SECONDS + 3)
        assert loop.time() - started < upstream.CLOSE_GRACE_SECONDS + 2
        assert session.closed
        task.cancel()
