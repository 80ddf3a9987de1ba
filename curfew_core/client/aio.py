"""``AsyncCurfewClient``: the asyncio flavour, for async gateways."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

import httpx

from curfew_core.client.policy import Key, Policy, VerdictCache, cache_key, request_body
from curfew_core.client.transport import (
    DEFAULT_LAST_KNOWN_LIMIT,
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_TIMEOUT,
    ask_headers,
    parse_response,
    verdict_url,
)
from curfew_core.client.verdict import CurfewVerdict


class AsyncCurfewClient:
    """The same as ``CurfewClient`` (same arguments, same policies), awaited.

    ``timeout`` is a hard deadline for the whole request here. Concurrent calls
    for the same key while it is being fetched share one request, so a burst at
    the moment a verdict expires still asks the server once.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        policy: Policy = "fail_open",
        last_known_limit: float = DEFAULT_LAST_KNOWN_LIMIT,
        last_known_fallback: Literal["fail_open", "fail_closed"] = "fail_open",
        off_duty_reply: str = "。",
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        max_entries: int = 4096,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = verdict_url(base_url)
        self.cache = VerdictCache(
            server=self.url,
            policy=policy,
            last_known_limit=last_known_limit,
            last_known_fallback=last_known_fallback,
            off_duty_reply=off_duty_reply,
            retry_interval=retry_interval,
            max_entries=max_entries,
            clock=clock,
        )
        self._clock = clock
        self._token = token
        self._timeout = timeout
        self._transport = transport
        # An httpx.AsyncClient's connections belong to the loop that opened
        # them: made lazily, again if a different loop calls.
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[Key, asyncio.Future[CurfewVerdict]] = {}

    def _client(self, loop: asyncio.AbstractEventLoop) -> httpx.AsyncClient:
        if self._http is None or self._loop is not loop:
            self._http = httpx.AsyncClient(
                headers=ask_headers(self._token),
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
        key = cache_key(session_id, purpose, subagent, max_tokens)
        now = self._clock()
        cache = self.cache
        entry = cache.entries.get(key)
        if entry is not None and now < entry.expires:
            return entry.verdict
        if cache.backing_off(now):
            return cache.fallback(key, now)
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
            verdict = parse_response(response.status_code, response.content)
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc)
        self.cache.store(key, verdict, now)
        return verdict

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
