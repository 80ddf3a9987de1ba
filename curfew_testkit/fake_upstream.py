"""A recording fake of an OpenAI-compatible provider, on a real local port.

It records every request it receives (method, path, headers, body) and answers
like a provider would: a ``chat.completion`` or an SSE stream of chunks, the
model list, or a scripted error. A gate can hold a stream after its first chunk,
which is how the tests prove the proxy relays without buffering.

The Responses API, embeddings and legacy completions answers live in
:mod:`curfew_testkit.fake_openai_more`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from curfew_testkit.fake_openai_more import more_answers, stored_response
from curfew_testkit.fake_reply import REPLY_TEXT, REPLY_WORDS
from curfew_testkit.local_http import LocalHttpServer, QuietHandler

USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    #: Every header line, repeats apart (``headers`` keeps one value per name).
    lines: tuple[tuple[str, str], ...] = ()

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def route(self) -> str:
        """The path asked for, without its query (``path`` is the whole target)."""
        return self.path.partition("?")[0]

    @property
    def query(self) -> str:
        """The query as it arrived ("" when there was none)."""
        return self.path.partition("?")[2]

    @property
    def header_list(self) -> list[tuple[str, str]]:
        """Every header line as received, repeats apart, names lower case."""
        return [(name.lower(), value) for name, value in self.lines]


class RecordingFake(LocalHttpServer):
    """A provider on a local port that records every request and can be
    scripted: fail every call, hold a stream after its first chunk (``gate``),
    slow each chunk (``chunk_delay``), add headers. Subclasses answer."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        #: ``(status, body)`` to answer every model call with, instead of an answer.
        self.fail: tuple[int, bytes] | None = None
        #: When set, a stream waits on it after its first chunk (up to 10s).
        self.gate: threading.Event | None = None
        #: Set when a stream's last byte has been written.
        self.finished = threading.Event()
        #: Set when the proxy hung up on a stream before its end.
        self.aborted = threading.Event()
        self.chunk_delay = 0.0
        #: Extra ``(name, value)`` headers on every answer.
        self.extra_headers: list[tuple[str, str]] = []
        #: The chunks every stream sends instead of its own (a scripted stream).
        self.stream: list[bytes] | None = None
        super().__init__(self._handler())

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
        self.fail = None
        self.gate = None
        self.chunk_delay = 0.0
        self.extra_headers = []
        self.stream = None
        self.finished.clear()
        self.aborted.clear()

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def send_chunks(self, handler: BaseHTTPRequestHandler, events: Iterable[bytes]) -> None:
        """Write ``events`` as HTTP chunks (the head already sent): held after
        the first while ``gate`` is set, ``chunk_delay`` apart; ``finished`` at
        the end, ``aborted`` when the proxy hangs up first."""
        if self.stream is not None:
            events = self.stream
        try:
            for index, event in enumerate(events):
                handler.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                handler.wfile.flush()
                if index == 0 and self.gate is not None:
                    self.gate.wait(10)
                elif self.chunk_delay:
                    time.sleep(self.chunk_delay)
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True
            self.aborted.set()
            return
        self.finished.set()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError


def recorded(method: str, handler: BaseHTTPRequestHandler, body: bytes = b"") -> Recorded:
    """What ``handler`` was sent: its whole target (query included), headers, body."""
    lines = tuple(handler.headers.items())
    return Recorded(method, handler.path, dict(lines), body, lines)


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body a handler was sent (``Content-Length`` bytes)."""
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


class FakeUpstream(RecordingFake):
    """OpenAI's protocol: chat completions, models, and (``fake_openai_more``)
    Responses, embeddings and legacy completions."""

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.route.endswith("/chat/completions")]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            def _send_json(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("X-Request-Id", "req-fake-1")
                for name, value in fake.extra_headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def _read(self) -> bytes:
                return read_body(self)

            def do_GET(self) -> None:
                fake._record(recorded("GET", self, b""))
                found = stored_response(self.path)
                if found is not None:
                    self._send_json(200, json.dumps(found).encode())
                elif (route := self.path.partition("?")[0].rstrip("/")).endswith(
                    "/models/fake-model"
                ):
                    model = {
                        "id": "fake-model",
                        "object": "model",
                        "created": 0,
                        "owned_by": "fake",
                    }
                    self._send_json(200, json.dumps(model).encode())
                elif route.endswith("/models"):
                    payload = {
                        "object": "list",
                        "data": [
                            {
                                "id": "fake-model",
                                "object": "model",
                                "created": 0,
                                "owned_by": "fake",
                            }
                        ],
                    }
                    self._send_json(200, json.dumps(payload).encode())
                else:
                    self._send_json(404, b'{"error": {"message": "no such thing"}}')

            def do_POST(self) -> None:
                body = self._read()
                fake._record(recorded("POST", self, body))
                if fake.fail is not None:
                    self._send_json(*fake.fail)
                    return
                request = json.loads(body)
                more = more_answers(self.path, request)
                if more is not None:
                    events, payload = more
                    if request.get("stream") is True and events:
                        self._stream(request, events)
                    else:
                        self._send_json(200, json.dumps(payload).encode())
                    return
                if request.get("stream"):
                    self._stream(request)
                else:
                    self._send_json(200, json.dumps(completion(request)).encode())

            def do_DELETE(self) -> None:
                fake._record(recorded("DELETE", self, b""))
                found = stored_response(self.path)
                if found is None:
                    self._send_json(404, b'{"error": {"message": "no such thing"}}')
                    return
                payload = {"id": found["id"], "object": "response.deleted", "deleted": True}
                self._send_json(200, json.dumps(payload).encode())

            def _stream(self, request: dict[str, Any], events: list[bytes] | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("X-Request-Id", "req-fake-stream")
                for name, value in fake.extra_headers:
                    self.send_header(name, value)
                self.end_headers()
                fake.send_chunks(self, stream_events(request) if events is None else events)

        return Handler


def completion(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY_TEXT},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }


def stream_events(request: dict[str, Any]) -> list[bytes]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": request.get("model", "fake-model"),
    }

    def event(choices: list[Any], **extra: Any) -> bytes:
        return b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n"

    events = [event([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])]
    events += [
        event([{"index": 0, "delta": {"content": word}, "finish_reason": None}])
        for word in REPLY_WORDS
    ]
    events.append(event([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append(event([], usage=USAGE))
    events.append(b"data: [DONE]\n\n")
    return events
