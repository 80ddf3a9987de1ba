"""``CurfewClient``: the blocking flavour, for threaded gateways."""

from __future__ import annotations

import atexit
import contextlib
import socket
import threading
import time
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
from curfew_client.reporting import FLUSH_TIMEOUT, REPORT_TIMEOUT
from curfew_client.transport import read_answer
from curfew_client.verdict import CurfewVerdict


class CurfewClient(BaseCurfewClient[httpx.BaseTransport]):
    __doc__ = BaseCurfewClient.__doc__

    def _open(self) -> None:
        self._http = httpx.Client(
            headers=self._headers, timeout=httpx.Timeout(self._timeout), transport=self._transport
        )
        self._stop = threading.Event()
        self._push_thread: threading.Thread | None = None
        #: The change stream's answer while it is read (``close`` shuts it down).
        self._push_response: httpx.Response | None = None
        if self.feed is not None:
            # A daemon: a gateway that never calls close() still exits.
            self._push_thread = threading.Thread(
                target=self._follow, name="curfew-change-stream", daemon=True
            )
            self._push_thread.start()
        self._report_thread: threading.Thread | None = None
        self._reporter_forked()
        if self.reports is not None:
            self.reports.after_fork = self._reporter_forked
            self._flush_on_exit(CurfewClient.close)

    def _reporter_forked(self) -> None:
        """Fresh locks and no sender (also in a forked child: threads do not follow)."""
        self._report_wake = threading.Event()
        self._report_lock = threading.Lock()
        self._report_start = threading.Lock()
        self._report_thread = None

    def verdict(
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
            return ready
        status: int | None = None  # known once the answer began
        try:
            with self._http.stream("POST", self.url, json=request_body(key)) as response:
                status = response.status_code
                # Bounded: MAX_ANSWER bytes, and a body that keeps trickling in
                # is cut off one timeout after the answer began.
                content = read_answer(
                    response.iter_bytes(),
                    length=response.headers.get("Content-Length"),
                    deadline=time.monotonic() + self._timeout,
                )
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return for_budget(self.cache.failed(key, now, exc, status=status), max_tokens)
        answer = self._answered(key, now, generation, status, content)
        return for_budget(answer, max_tokens)

    # -- decision reports --------------------------------------------------------
    def _nudge_reporter(self) -> None:
        reports = self.reports
        if reports is None or self._stop.is_set():
            return
        if not reports.running:
            with self._report_start:
                if not reports.running:
                    # A daemon, like the stream's: close() or atexit flushes it.
                    thread = threading.Thread(
                        target=self._report_loop, name="curfew-decision-reports", daemon=True
                    )
                    thread.start()  # may fail (at interpreter exit): then not running
                    self._report_thread = thread
                    reports.running = True
            return
        reports.kicked = True
        self._report_wake.set()

    def _report_loop(self) -> None:
        reports = self.reports
        assert reports is not None
        while not self._stop.is_set():
            self._report_wake.wait(reports.wait(self._clock()))
            self._report_wake.clear()
            reports.kicked = False
            if self._stop.is_set():
                break
            self._send_reports(final=False, deadline=None)

    def flush_reports(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Send the decisions waiting now, in this thread (unless backing off
        after a failure). Never raises."""
        self._send_reports(final=False, deadline=time.monotonic() + timeout)

    def _send_reports(self, *, final: bool, deadline: float | None) -> None:
        reports = self.reports
        if reports is None:
            return
        if not self._report_lock.acquire(timeout=FLUSH_TIMEOUT if deadline else -1):
            return
        try:
            while True:
                batch = reports.due(self._clock(), final=final)
                if batch is None:
                    return
                timeout = REPORT_TIMEOUT
                if deadline is not None:
                    timeout = min(timeout, deadline - time.monotonic())
                    if timeout <= 0:
                        return
                try:
                    with self._http.stream(
                        "POST", self.decisions_url, json={"decisions": batch}, timeout=timeout
                    ) as response:
                        status, advised = response.status_code, response.headers.get("Retry-After")
                        # Read bounded: an endless answer must not fill memory.
                        content = read_answer(
                            response.iter_bytes(),
                            length=response.headers.get("Content-Length"),
                            deadline=time.monotonic() + timeout,
                        )
                except Exception as exc:  # whatever it was, the batch waits for a retry
                    reports.failed(self._clock(), exc)
                    return
                if not reports.answered(self._clock(), status, advised, content):
                    return
        except Exception:  # reporting never raises into the gateway
            return
        finally:
            self._report_lock.release()

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
            self._push_response = response
            try:
                feed.connected()
                for chunk in response.iter_bytes():  # lines bounded by the feed (MAX_LINE)
                    if self._stop.is_set():
                        return
                    feed.chunk(chunk)
            finally:
                self._push_response = None

    def close(self) -> None:
        """Stop the change stream, send the decisions still waiting (for at
        most ``FLUSH_TIMEOUT`` seconds, one try each), and close the connections."""
        self._stop.set()
        if self.feed is not None:
            self.feed.cache.set_pushed(False)
        if self.reports is not None:
            atexit.unregister(self._at_exit)
            self._report_wake.set()
            thread = self._report_thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=FLUSH_TIMEOUT)
            self.reports.running = False  # the last try's failure is not "retrying"
            self._send_reports(final=True, deadline=time.monotonic() + FLUSH_TIMEOUT)
            self.reports.given_up()
        # The stream's read waits for the next heartbeat (15 s): closing the
        # connections does not wake a read blocked in another thread, shutting
        # its socket down does (close() waited out its 2 s join before).
        _shut_down(self._push_response)
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


def _shut_down(response: httpx.Response | None) -> None:
    """Wake a read blocked on ``response``'s connection (from another
    thread): shut its socket down, as closing it would not."""
    if response is None:
        return
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
