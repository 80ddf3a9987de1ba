"""A slow OpenAI-compatible provider: a chat stream that takes seconds.

Long enough that a server can be told to stop while it relays one. Each stream
is recorded as finished (every event written) or aborted (the proxy hung up).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from curfew_testkit.local_http import LocalHttpServer, QuietHandler

WORDS = [f"word{i} " for i in range(12)]


def events(model: str) -> list[bytes]:
    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {
            "id": "chatcmpl-slow",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    out = [event({"role": "assistant"})]
    out += [event({"content": word}) for word in WORDS]
    out.append(event({}, "stop"))
    out.append(b"data: [DONE]\n\n")
    return out


class SlowUpstream(LocalHttpServer):
    def __init__(self, delay: float = 0.25) -> None:
        #: Seconds between two events of a stream.
        self.delay = delay
        self.started = threading.Event()
        self.finished = threading.Event()
        self.aborted = threading.Event()
        super().__init__(self._handler())

    def reset(self) -> None:
        for flag in (self.started, self.finished, self.aborted):
            flag.clear()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                upstream.started.set()
                try:
                    for event in events(body.get("model", "slow-model")):
                        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                        self.wfile.flush()
                        time.sleep(upstream.delay)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    upstream.aborted.set()
                    return
                upstream.finished.set()

        return Handler
