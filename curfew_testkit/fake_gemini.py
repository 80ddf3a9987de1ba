"""A recording fake of Google's generateContent API, on a real local port: the
upstream of Curfew's Gemini door and of LiteLLM's Gemini route in the tests
(no Django). ``:generateContent`` is answered with one object,
``:streamGenerateContent`` with two SSE events; ``fail_with`` answers every
call with that status in Gemini's error shape."""

from __future__ import annotations

import json
from typing import Any

from curfew_testkit.fake_upstream import Recorded, read_body, recorded
from curfew_testkit.local_http import LocalHttpServer, QuietHandler

USAGE = {"promptTokenCount": 11, "candidatesTokenCount": 5, "totalTokenCount": 16}


def gemini_answer(text: str, model: str = "gemini-2.5-flash") -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": USAGE,
        "modelVersion": model,
    }


class FakeGemini(LocalHttpServer):
    """Answers ``:generateContent`` with one object and ``:streamGenerateContent``
    with two SSE events (the first with ``first_usage`` as its usage, when
    given: a stream's usage may grow event by event); records what it was sent."""

    def __init__(
        self, model: str = "gemini-2.5-flash", first_usage: dict[str, int] | None = None
    ) -> None:
        self.requests: list[Recorded] = []
        #: When set, every call is answered with this status and Gemini's error shape.
        self.fail_with: int | None = None
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = read_body(self)
                fake.requests.append(recorded("POST", self, body))
                if fake.fail_with is not None:
                    status = fake.fail_with
                    error = {"code": status, "message": "fake outage", "status": "INTERNAL"}
                    payload = json.dumps({"error": error}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if self.path.partition("?")[0].endswith(":streamGenerateContent"):
                    first = gemini_answer("Hello", model)
                    if first_usage is not None:
                        first["usageMetadata"] = first_usage
                    events = [first, gemini_answer(" there", model)]
                    payload = b"".join(f"data: {json.dumps(e)}\r\n\r\n".encode() for e in events)
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(gemini_answer("Hello there", model)).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        super().__init__(Handler)

    def model_posts(self) -> list[Recorded]:
        return [
            r for r in self.requests if r.path.partition("?")[0].lower().endswith("generatecontent")
        ]
