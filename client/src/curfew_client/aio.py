"""``AsyncCurfewClient``: the asyncio flavour, for async gateways."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

import httpx

from curfew_client.base import Answer, BaseCurfewClient, for_budget
from curfew_client.policy import Key, request_body
from curfew_client.push import (
    STREAM_CONNECT_TIMEOUT,
    STREAM_READ_TIMEOUT,
    StreamRefused,
    retry_after,
)
from curfew_client.verdict import CurfewVerdict


class AsyncCurfewClient(BaseCurfewClient[httpx.AsyncBaseTransport]):
    """The same as ``CurfewClient`` (same arguments, same policies), awaited.

    ``timeout`` is a hard deadline for the whole request here. Concurrent calls
    for the same key while it is being fetched share one request, so a burst at
    the moment a verdict expires still asks the server once.

    With ``push=True`` the change stream is a task on the loop of the first
    ``verdict()`` call (again on another loop's); ``aclose()`` stops it.
    """

    def _open(self) -> None:
        # An httpx.AsyncClient's connections belong to the loop that opened
        # them: made lazily, again if a different loop calls.
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[Key, asyncio.Future[Answer]] = {}
        self._push_task: asyncio.Task[None] | None = None

    def _client(self, loop: asyncio.AbstractEventLoop) -> httpx.AsyncClient:
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(
                headers=self._headers,
                timeout=httpx.Timeout(self._timeout),
                transport=self._transport,
            )
            self._loop = loop
            self._inflight = {}
            self._push_task = None  # a task of another loop's is no use here
        if self.feed is not None and (self._push_task is None or self._push_task.done()):
            self._push_task = loop.create_task(self._follow(self._http))
        return self._http

    async def verdict(
        self,
        *,
        session_id: str | None = None,
        purpose: str | None = None,
        subagent: bool = False,
        max_tokens: int | None = None,
    ) -> CurfewVerdict:
        """The verdict for the model call about to be made (cached while fresh),
        its clamp lowered to ``max_tokens`` when that is smaller."""
        key, now, generation, ready = self._ready(session_id, purpose, subagent, max_tokens)
        if ready is not None:
            if self.feed is not None and (
                self._push_task is None or self._loop is not asyncio.get_running_loop()
            ):
                self._client(asyncio.get_running_loop())  # push mode starts with the first call
            return ready
        loop = asyncio.get_running_loop()
        http = self._client(loop)
        pending = self._inflight.get(key)
        if pending is None:
            pending = loop.create_task(self._fetch(http, key, now, generation))
            self._inflight[key] = pending
            pending.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: one caller being cancelled must not cancel the others' answer.
        # Each caller clamps the shared answer to its own budget.
        return for_budget(await asyncio.shield(pending), max_tokens)

    def _forget(self, key: Key, done: asyncio.Future[Answer]) -> None:
        if self._inflight.get(key) is done:
            del self._inflight[key]

    async def _fetch(
        self, http: httpx.AsyncClient, key: Key, now: float, generation: int
    ) -> Answer:
        try:
            async with asyncio.timeout(self._timeout):
                response = await http.post(self.url, json=request_body(key))
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc)
        return self._answered(key, now, generation, response.status_code, response.content)

    # -- push mode ---------------------------------------------------------------
    async def _follow(self, http: httpx.AsyncClient) -> None:
        """The change stream, followed until ``aclose()``: reconnected with backoff."""
        feed = self.feed
        assert feed is not None
        try:
            while True:
                error: BaseException | None = None
                try:
                    await self._stream_once(http)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # whatever it was, the stream is down; retry later
                    error = exc
                await asyncio.sleep(feed.down(error))
        finally:
            feed.cache.set_pushed(False)

    async def _stream_once(self, http: httpx.AsyncClient) -> None:
        feed = self.feed
        assert feed is not None
        timeout = httpx.Timeout(STREAM_READ_TIMEOUT, connect=STREAM_CONNECT_TIMEOUT)
        async with http.stream("GET", self.changes_url, timeout=timeout) as response:
            if response.status_code != 200:
                raise StreamRefused(
                    response.status_code, retry_after(response.headers.get("Retry-After"))
                )
            feed.connected()
            async for line in response.aiter_lines():
                feed.line(line)

    async def aclose(self) -> None:
        task, self._push_task = self._push_task, None
        if task is not None:
            task.cancel()
            # It only ever ends by being cancelled (it catches everything else).
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.feed is not None:
            self.feed.cache.set_pushed(False)
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncCurfewClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()
