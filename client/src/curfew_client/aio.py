"""``AsyncCurfewClient``: the asyncio flavour, for async gateways."""

from __future__ import annotations

import asyncio
from types import TracebackType

import httpx

from curfew_client.base import BaseCurfewClient
from curfew_client.policy import Key, request_body
from curfew_client.verdict import CurfewVerdict


class AsyncCurfewClient(BaseCurfewClient[httpx.AsyncBaseTransport]):
    """The same as ``CurfewClient`` (same arguments, same policies), awaited.

    ``timeout`` is a hard deadline for the whole request here. Concurrent calls
    for the same key while it is being fetched share one request, so a burst at
    the moment a verdict expires still asks the server once.
    """

    def _open(self) -> None:
        # An httpx.AsyncClient's connections belong to the loop that opened
        # them: made lazily, again if a different loop calls.
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[Key, asyncio.Future[CurfewVerdict]] = {}

    def _client(self, loop: asyncio.AbstractEventLoop) -> httpx.AsyncClient:
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(
                headers=self._headers,
                timeout=httpx.Timeout(self._timeout),
                transport=self._transport,
            )
            self._loop = loop
            self._inflight = {}
        return self._http

    async def verdict(
        self,
        *,
        session_id: str | None = None,
        purpose: str | None = None,
        subagent: bool = False,
        max_tokens: int | None = None,
    ) -> CurfewVerdict:
        """The verdict for the model call about to be made (cached while fresh)."""
        key, now, ready = self._ready(session_id, purpose, subagent, max_tokens)
        if ready is not None:
            return ready
        loop = asyncio.get_running_loop()
        http = self._client(loop)
        pending = self._inflight.get(key)
        if pending is None:
            pending = loop.create_task(self._fetch(http, key, now))
            self._inflight[key] = pending
            pending.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: one caller being cancelled must not cancel the others' answer.
        return await asyncio.shield(pending)

    def _forget(self, key: Key, done: asyncio.Future[CurfewVerdict]) -> None:
        if self._inflight.get(key) is done:
            del self._inflight[key]

    async def _fetch(self, http: httpx.AsyncClient, key: Key, now: float) -> CurfewVerdict:
        try:
            async with asyncio.timeout(self._timeout):
                response = await http.post(self.url, json=request_body(key))
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc)
        return self._answered(key, now, response.status_code, response.content)

    async def aclose(self) -> None:
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
