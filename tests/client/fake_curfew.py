"""A stand-in curfew server on a real local port: the real engine behind a tiny
``POST /api/v1/verdict``, with knobs for what the client must survive (slow
answers, outages, unpredictable freshness)."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from curfew_core.engine import RequestContext, Schedule, decide

TOKEN = "cfw_fake-token"


class FakeCurfew:
    def __init__(self, moment: datetime, schedule: Schedule, *, port: int = 0) -> None:
        self.moment = moment
        self.schedule = schedule
        self.bodies: list[dict[str, Any]] = []
        #: Override the engine's freshness: ``valid_until = moment + valid_for``.
        self.valid_for: float | None = None
        self.max_age: int | None = 60
        self.delay = 0.0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def count(self) -> int:
        return len(self.bodies)

    def start(self) -> FakeCurfew:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        verdict = decide(self.moment, self.schedule, RequestContext(**body))
        out = verdict.as_dict()
        if self.valid_for is not None:
            out["valid_until"] = (self.moment + timedelta(seconds=self.valid_for)).isoformat()
        out["max_age"] = self.max_age
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are separate writes: without this, Nagle and the
            # peer's delayed ACK add ~40ms to every answer.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.bodies.append(body)
                if fake.delay:
                    time.sleep(fake.delay)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    status, answer = 401, {"error": "unauthorized", "message": "unknown token"}
                else:
                    status, answer = 200, fake.payload(body)
                data = json.dumps(answer, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                # No keep-alive: once stopped, the server is down for every client.
                self.send_header("Connection", "close")
                self.close_connection = True
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the slow-server tests)

        return Handler
