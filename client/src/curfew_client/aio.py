"""``AsyncCurfewClient``: the asyncio flavour, for async gateways."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
from types import TracebackType

import httpx

from curfew_client.base import Answer, BaseCurfewClient, for_budget
from curfew_client.policy import Key, budget, request_body
from curfew_client.push import (
    STREAM_CONNECT_TIMEOUT,
    STREAM_READ_TIMEOUT,
    StreamRefused,
    retry_after,
)
from curfew_client.reporting import FLUSH_TIMEOUT, REPORT_TIMEOUT, log
from curfew_client.transport import aread_answer
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
        self._report_task: asyncio.Task[None] | None = None
        self._report_event: asyncio.Event | None = None
        self._report_loop_of: asyncio.AbstractEventLoop | None = None
        self._closed = False
        if self.reports is not None:
            self._flush_on_exit(AsyncCurfewClient._flush_at_exit)

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
        user: str | None = None,
    ) -> CurfewVerdict:
        """The verdict for the model call about to be made (cached while fresh),
        its clamp lowered to ``max_tokens`` when that is smaller. ``user``: with
        a team key, the member asked for (cached per member)."""
        key, now, generation, ready = self._ready(session_id, purpose, subagent, max_tokens, user)
        if ready is not None:
            if self.feed is not None and (
                self._push_task is None or self._loop is not asyncio.get_running_loop()
            ):
                self._client(asyncio.get_running_loop())  # push mode starts with the first call
            return ready
        loop = asyncio.get_running_loop()
        http = self._client(loop)
        pending = self._inflight.get(key)
        joined = pending is not None
        if pending is None:
            pending = loop.create_task(self._fetch(http, key, now, generation))
            self._inflight[key] = pending
            pending.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: one caller being cancelled must not cancel the others' answer.
        # Each caller clamps the shared answer to its own budget.
        verdict = for_budget(await asyncio.shield(pending), max_tokens)
        reports = self.reports
        if joined and reports is not None and verdict.origin == "server":
            # The server recorded the one request; this caller's decision it never saw.
            reports.add(now, key, budget(max_tokens), verdict)
        return verdict

    def _forget(self, key: Key, done: asyncio.Future[Answer]) -> None:
        if self._inflight.get(key) is done:
            del self._inflight[key]

    async def _fetch(
        self, http: httpx.AsyncClient, key: Key, now: float, generation: int
    ) -> Answer:
        status: int | None = None  # known once the answer began
        try:
            async with (
                asyncio.timeout(self._timeout),
                http.stream("POST", self.url, json=request_body(key)) as response,
            ):
                status = response.status_code
                length = response.headers.get("Content-Length")
                content = await aread_answer(response.aiter_bytes(), length=length)
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc, status=status)
        return self._answered(key, now, generation, status, content)

    # -- decision reports --------------------------------------------------------
    def _nudge_reporter(self) -> None:
        reports = self.reports
        if reports is None or self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task, event = self._report_task, self._report_event
        if task is None or task.done() or event is None or self._report_loop_of is not loop:
            self._report_event = asyncio.Event()
            self._report_loop_of = loop
            reports.running, reports.kicked = True, False
            self._report_task = loop.create_task(self._report_loop(self._report_event))
            # asyncio.run() cancels it at the end: the next loop's first call starts another.
            self._report_task.add_done_callback(self._reporter_ended)
            return
        reports.kicked = True
        event.set()

    def _reporter_ended(self, task: asyncio.Task[None]) -> None:
        if task is self._report_task and self.reports is not None:
            self.reports.running = self.reports.kicked = False

    async def _report_loop(self, event: asyncio.Event) -> None:
        reports = self.reports
        assert reports is not None
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), reports.wait(self._clock()))
            event.clear()
            reports.kicked = False
            if self._closed:
                return
            await self._send_reports(final=False)

    async def flush_reports(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Send the decisions waiting now (unless backing off after a failure).
        Never raises."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._send_reports(final=False)

    async def _send_reports(self, *, final: bool) -> None:
        reports = self.reports
        if reports is None:
            return
        try:
            http = self._client(asyncio.get_running_loop())
            while True:
                batch = reports.due(self._clock(), final=final)
                if batch is None:
                    return
                try:
                    report = {"decisions": batch}
                    async with http.stream(
                        "POST", self.decisions_url, json=report, timeout=REPORT_TIMEOUT
                    ) as response:
                        # Read bounded: an endless answer must not fill memory.
                        length = response.headers.get("Content-Length")
                        content = await aread_answer(response.aiter_bytes(), length=length)
                except asyncio.CancelledError:
                    raise  # the batch stays in the outbox: sent again with the same ids
                except Exception as exc:  # whatever it was, the batch waits for a retry
                    reports.failed(self._clock(), exc)
                    return
                status, advised = response.status_code, response.headers.get("Retry-After")
                if not reports.answered(self._clock(), status, advised, content):
                    return
        except asyncio.CancelledError:
            raise
        except Exception:  # reporting never raises into the gateway
            log.debug("decision report failed", exc_info=True)

    async def _stop_reporter(self) -> None:
        """Stop the reporter task and send what is left (one try each, bounded)."""
        self._closed = True
        if self.reports is None:
            return
        atexit.unregister(self._at_exit)
        task, self._report_task = self._report_task, None
        # A task of another (gone) loop's cannot be awaited here: it is dropped.
        if (
            task is not None
            and not task.done()
            and self._report_loop_of is asyncio.get_running_loop()
        ):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.reports.running = False  # the last try's failure is not "retrying"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FLUSH_TIMEOUT):
                await self._send_reports(final=True)
        self.reports.given_up()

    def _flush_at_exit(self) -> None:
        """At exit, the loop that ran the client is usually gone: send what is
        left from a fresh one (a fresh connection pool too)."""
        reports = self.reports
        if reports is None or self._closed or not reports.waiting:
            return
        try:
            asyncio.get_running_loop()
            return  # a loop still runs in this thread: it cannot be blocked here
        except RuntimeError:
            pass
        self._http = self._loop = None
        self._report_task = self._push_task = None
        feed, self.feed = self.feed, None  # no change stream for a last flush
        try:
            asyncio.run(self.aclose())
        except Exception:  # at exit, nothing is worth a traceback
            log.debug("decision reports not flushed at exit", exc_info=True)
        self.feed = feed

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
            async for chunk in response.aiter_bytes():  # lines bounded by the feed (MAX_LINE)
                feed.chunk(chunk)

    async def aclose(self) -> None:
        """Stop the change stream, send the decisions still waiting (for at
        most ``FLUSH_TIMEOUT`` seconds, one try each), and close the connections."""
        await self._stop_reporter()
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
