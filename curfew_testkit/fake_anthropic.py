"""A recording fake of an Anthropic Messages provider, on a real local port.

It records every request it receives (method, path, headers, body) and answers
like the Messages API would: a ``message``, a real named-event stream
(``message_start`` … ``message_stop``), a token count, or a scripted error. A
gate can hold a stream after its first event, which is how the tests prove the
proxy relays without buffering.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from curfew_testkit.fake_upstream import Recorded, RecordingFake, read_body, recorded
from curfew_testkit.local_http import QuietHandler

REPLY_WORDS = ["Hello", " from", " the", " fake", " Anthropic."]
REPLY_TEXT = "".join(REPLY_WORDS)
USAGE = {
    "input_tokens": 11,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
INPUT_TOKENS = 42
REQUEST_ID = "req_fake_anthropic_1"


class FakeAnthropic(RecordingFake):
    """Anthropic's protocol: messages (a ``message`` or its event stream) and
    ``count_tokens``, at the real paths only (``/v1/messages``)."""

    @property
    def message_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.route.endswith("/messages")]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            def _head(self, status: int, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("request-id", REQUEST_ID)
                self.send_header("anthropic-ratelimit-requests-remaining", "49")
                # Not on the relay list: must stay at the proxy.
                self.send_header("anthropic-organization-id", "org-fake-secret")
                for name, value in fake.extra_headers:
                    self.send_header(name, value)

            def _send_json(self, status: int, payload: bytes) -> None:
                self._head(status, "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _read(self) -> bytes:
                return read_body(self)

            def do_POST(self) -> None:
                body = self._read()
                fake._record(recorded("POST", self, body))
                if fake.fail is not None:
                    self._send_json(*fake.fail)
                    return
                request = json.loads(body)
                route = self.path.partition("?")[0]
                if route.endswith("/v1/messages/count_tokens"):
                    self._send_json(200, json.dumps({"input_tokens": INPUT_TOKENS}).encode())
                elif not route.endswith("/v1/messages"):
                    error = {
                        "type": "error",
                        "error": {"type": "not_found_error", "message": "no such thing"},
                    }
                    self._send_json(404, json.dumps(error).encode())
                elif request.get("stream"):
                    self._stream(request)
                else:
                    self._send_json(200, json.dumps(message(request)).encode())

            def _stream(self, request: dict[str, Any]) -> None:
                self._head(200, "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                fake.send_chunks(self, stream_events(request))

        return Handler


def _model(request: dict[str, Any]) -> str:
    model = request.get("model")
    return model if isinstance(model, str) else "fake-claude"


def message(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": _model(request),
        "content": [{"type": "text", "text": REPLY_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": USAGE,
    }


def stream_events(request: dict[str, Any]) -> list[bytes]:
    """The Messages API's event stream for :data:`REPLY_WORDS`, one ``bytes``
    per event (a ``ping`` included, as the real API sends one)."""
    start = {
        **message(request),
        "content": [],
        "stop_reason": None,
        "usage": {**USAGE, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
            for w in REPLY_WORDS
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": USAGE["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events]
