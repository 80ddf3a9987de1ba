"""A stand-in curfew server on a real local port: the real engine behind a tiny
``POST /api/v1/verdict``, with knobs for what the client must survive (slow
answers, outages, unpredictable freshness)."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

from curfew_core.engine import RequestContext, Schedule, decide
from curfew_core.selectors.verdicts import verdict_answer
from curfew_testkit.local_http import LocalHttpServer, QuietHandler

TOKEN = "cfw_fake-token"


class FakeCurfew(LocalHttpServer):
    def __init__(self, moment: datetime, schedule: Schedule, *, port: int = 0) -> None:
        self.moment = moment
        self.schedule = schedule
        self.bodies: list[dict[str, Any]] = []
        #: The decision reports (``POST /api/v1/decisions``), apart from the verdicts.
        self.reports: list[list[dict[str, Any]]] = []
        #: Override the engine's freshness: ``valid_until = moment + valid_for``.
        self.valid_for: float | None = None
        self.max_age: int | None = 60
        self.delay = 0.0
        self._lock = threading.Lock()
        super().__init__(self._handler(), port=port)

    @property
    def count(self) -> int:
        return len(self.bodies)

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        verdict = decide(self.moment, self.schedule, RequestContext(**body))
        out = verdict_answer(verdict, max_age=self.max_age).model_dump(mode="json")
        if self.valid_for is not None:
            out["valid_until"] = (self.moment + timedelta(seconds=self.valid_for)).isoformat()
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/decisions"):
                    with fake._lock:
                        fake.reports.append(body["decisions"])
                    self._answer(200, {"received": len(body["decisions"]), "stored": 0})
                    return
                with fake._lock:
                    fake.bodies.append(body)
                if fake.delay:
                    time.sleep(fake.delay)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    status, answer = 401, {"error": "unauthorized", "message": "unknown token"}
                else:
                    status, answer = 200, fake.payload(body)
                self._answer(status, answer)

            def _answer(self, status: int, answer: dict[str, Any]) -> None:
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
