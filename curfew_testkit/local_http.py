"""Scaffolding for the tests' small local HTTP servers (fake upstreams, a fake
curfew server): a threaded server on a loopback port, started and stopped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietHandler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1 without logging to the test output."""

    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: without this, Nagle and the peer's
    # delayed ACK add ~40ms to every answer.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LocalHttpServer:
    """Serve ``handler`` on 127.0.0.1 (``port`` 0: any free port) in a thread."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, port: int = 0) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
