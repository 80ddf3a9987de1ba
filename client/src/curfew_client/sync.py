"""``CurfewClient``: the blocking flavour, for threaded gateways."""

from __future__ import annotations

import threading
from types import TracebackType

import httpx

from curfew_client.base import BaseCurfewClient, for_budget
from curfew_client.policy import request_body
from curfew_client.push import (
    STREAM_CONNECT_TIMEOUT,
    STREAM_READ_TIMEOUT,
    StreamRefused,
    retry_after,
)
from curfew_client.verdict import CurfewVerdict


class CurfewClient(BaseCurfewClient[httpx.BaseTransport]):
    __doc__ = BaseCurfewClient.__doc__

    def _open(self) -> None:
        self._http = httpx.Client(
            headers=self._headers, timeout=httpx.Timeout(self._timeout), transport=self._transport
        )
        self._stop = threading.Event()
        self._push_thread: threading.Thread | None = None
        if self.feed is not None:
            # A daemon: a gateway that never calls close() still exits.
            self._push_thread = threading.Thread(
                target=self._follow, name="curfew-change-stream", daemon=True
            )
            self._push_thread.start()

    def verdict(
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
            return ready
        try:
            response = self._http.post(self.url, json=request_body(key))
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return for_budget(self.cache.failed(key, now, exc), max_tokens)
        answer = self._answered(key, now, generation, response.status_code, response.content)
        return for_budget(answer, max_tokens)

    # -- push mode ---------------------------------------------------------------
    def _follow(self) -> None:
        """The change stream, followed until ``close()``: reconnected with backoff."""
        feed = self.feed
        assert feed is not None
        while not self._stop.is_set():
            error: BaseException | None = None
            try:
                self._stream_once()
            except Exception as exc:  # whatever it was, the stream is down; retry later
                error = exc
            if self._stop.is_set():
                break
            self._stop.wait(feed.down(error))
        feed.cache.set_pushed(False)

    def _stream_once(self) -> None:
        feed = self.feed
        assert feed is not None
        timeout = httpx.Timeout(STREAM_READ_TIMEOUT, connect=STREAM_CONNECT_TIMEOUT)
        with self._http.stream("GET", self.changes_url, timeout=timeout) as response:
            if response.status_code != 200:
                raise StreamRefused(
                    response.status_code, retry_after(response.headers.get("Retry-After"))
                )
            feed.connected()
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                feed.line(line)

    def close(self) -> None:
        self._stop.set()
        if self.feed is not None:
            self.feed.cache.set_pushed(False)
        # Closing the connections also wakes the stream's blocked read.
        self._http.close()
        if self._push_thread is not None and self._push_thread is not threading.current_thread():
            self._push_thread.join(timeout=2.0)

    def __enter__(self) -> CurfewClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
