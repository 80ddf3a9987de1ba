"""An upstream that misbehaves on request (issue 41): bodies that are too big
or never end, one endless line, error bodies of any size, stored-response
answers of any status, or no answer at all.

``mode`` picks the behaviour for the next calls; every path answers the same.
Endless bodies end when the proxy hangs up (counted in ``hangups``); the
bytes sent are counted in ``sent``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from curfew_testkit.local_http import LocalHttpServer, QuietHandler

CHUNK = 64 * 1024
#: What a "huge" answer declares: 2 GB (only a little of it is ever sent).
HUGE = 2 * 1024**3
EVENT = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'


class HostileUpstream(LocalHttpServer):
    def __init__(self) -> None:
        self.mode = "ok"
        #: Bytes the finite modes send (``sse-line``, ``big-json``).
        self.size = 3 * 1024 * 1024
        #: HTTP status of ``status``.
        self.status = 404
        self.sent = 0
        self.hangups = threading.Event()
        self.paths: list[str] = []
        self.release = threading.Event()
        super().__init__(self._handler())

    def reset(self, mode: str = "ok", **kwargs: int) -> None:
        self.mode = mode
        self.sent = 0
        self.hangups.clear()
        self.paths.clear()
        self.release.clear()
        for name, value in kwargs.items():
            setattr(self, name, value)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                fake.sent += len(data)

            def _head(self, status: int, content_type: str, length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if length is None:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _answer(self) -> None:
                fake.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                mode = fake.mode
                try:
                    if mode == "ok":
                        body = json.dumps({"id": "resp_1", "object": "response"}).encode()
                        self._head(200, "application/json", len(body))
                        self.wfile.write(body)
                    elif mode == "status":
                        body = json.dumps(
                            {"error": {"message": "nope", "type": "invalid_request_error"}}
                        ).encode()
                        self._head(fake.status, "application/json", len(body))
                        self.wfile.write(body)
                    elif mode == "html":
                        # An error page of the provider's edge, not its API.
                        body = b"<html><body><h1>404 Not Found</h1>nginx</body></html>"
                        self._head(fake.status, "text/html", len(body))
                        self.wfile.write(body)
                    elif mode in ("broken-sse", "broken-json"):
                        # Part of the answer, then the connection drops mid-event.
                        sse = mode == "broken-sse"
                        self._head(200, "text/event-stream" if sse else "application/json")
                        self._chunk(EVENT + b'data: {"choi' if sse else b'{"id": "cmpl-1", "cho')
                        self.wfile.flush()
                        time.sleep(0.1)
                        self.close_connection = True
                        self.connection.shutdown(2)
                        fake.hangups.set()
                    elif mode == "trickle-error":
                        # An error body a byte at a time, for ever.
                        self._head(500, "application/json")
                        self._chunk(b'{"error": {"message": "')
                        while not fake.release.is_set():
                            self._chunk(b".")
                            self.wfile.flush()
                            time.sleep(0.1)
                    elif mode == "hang":
                        fake.release.wait(30)
                        self.close_connection = True
                    elif mode == "sse-line":
                        # One event whose one line is ``size`` bytes long, in chunks.
                        self._head(200, "text/event-stream")
                        self._chunk(b"data: ")
                        left = fake.size
                        while left > 0:
                            self._chunk(b"x" * min(CHUNK, left))
                            left -= CHUNK
                        self._chunk(b"\n\ndata: [DONE]\n\n")
                        self.wfile.write(b"0\r\n\r\n")
                    elif mode in ("endless-sse", "endless-line", "endless-json", "endless-error"):
                        status = 500 if mode == "endless-error" else 200
                        sse = mode in ("endless-sse", "endless-line")
                        self._head(status, "text/event-stream" if sse else "application/json")
                        piece = {
                            "endless-sse": EVENT * 512,
                            "endless-line": b"x" * CHUNK,
                        }.get(mode, b'{"x": "' + b"y" * CHUNK + b'"},')
                        if mode == "endless-line":
                            self._chunk(b"data: ")
                        while True:
                            self._chunk(piece)
                    elif mode in ("huge-json", "huge-error"):
                        # Says 2 GB, then sends until the proxy hangs up.
                        status = 500 if mode == "huge-error" else 200
                        self._head(status, "application/json", HUGE)
                        piece = b" " * CHUNK
                        while True:
                            self.wfile.write(piece)
                            fake.sent += len(piece)
                    elif mode == "slow-sse":
                        # A stream of ``size`` bytes that flows steadily.
                        self._head(200, "text/event-stream")
                        event = EVENT.replace(b'"x"', b'"' + b"z" * 4000 + b'"')
                        while fake.sent < fake.size:
                            self._chunk(event)
                        self._chunk(b"data: [DONE]\n\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        raise AssertionError(f"unknown mode {mode}")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    fake.hangups.set()

            do_GET = do_POST = do_DELETE = _answer

        return Handler


def wait_for(flag: threading.Event, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if flag.is_set():
            return True
        time.sleep(0.02)
    return flag.is_set()
