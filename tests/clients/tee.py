"""A recording pass-through between a tool and Curfew.

It records what the tool itself sent (method, target with its query, headers,
body) and relays it unchanged to Curfew, so ``make clients`` can compare that
with what reached the upstream: the bytes as sent on duty, a clamp while
winding, nothing off duty. Answers are read whole and written back with their
length (streams too: every tool here reads a buffered stream as it reads a slow
one), which is all a one-shot run needs.
"""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from curfew_testkit.fake_upstream import RecordingFake, read_body, recorded

#: Hop-by-hop and framing headers the tee remakes for its own connections.
_REMADE = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Tee(RecordingFake):
    def __init__(self, target: str) -> None:
        self.target = urlsplit(target)
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        tee = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _relay(self, method: str) -> None:
                body = read_body(self) if method not in ("GET", "HEAD") else b""
                tee._record(recorded(method, self, body))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _REMADE}
                headers["Host"] = self.headers.get("Host") or tee.target.netloc
                connection = http.client.HTTPConnection(
                    tee.target.hostname or "127.0.0.1", tee.target.port, timeout=120
                )
                try:
                    connection.request(method, self.path, body=body or None, headers=headers)
                    answer = connection.getresponse()
                    payload = answer.read()
                    self.send_response(answer.status, answer.reason)
                    for name, value in answer.getheaders():
                        if name.lower() not in _REMADE:
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                finally:
                    connection.close()

            def do_GET(self) -> None:
                self._relay("GET")

            def do_POST(self) -> None:
                self._relay("POST")

            def do_DELETE(self) -> None:
                self._relay("DELETE")

            def do_HEAD(self) -> None:
                self._relay("HEAD")

        return Handler
