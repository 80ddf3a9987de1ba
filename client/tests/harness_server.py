"""A fake Curfew server for the ``curfew`` command's tests (httpx's
``MockTransport``): it answers a verdict and a state, and records each request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

URL = "http://curfew.test"
TOKEN = "cfw_harness_token"


@dataclass
class FakeServer:
    verdict: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    #: Answer every request with this status (and an HTML page), e.g. 500.
    status: int | None = None
    #: Raise this instead of answering (the server is down).
    down: bool = False
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.down:
            raise httpx.ConnectError("Connection refused", request=request)
        if self.status is not None:
            return httpx.Response(self.status, html="<title>Server Error</title>")
        if request.url.path == "/api/v1/verdict" and self.verdict is not None:
            return httpx.Response(200, json=self.verdict)
        if request.url.path == "/api/v1/state" and self.state is not None:
            return httpx.Response(200, json=self.state)
        return httpx.Response(404, json={"error": "not_found", "message": "no such route"})

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def asked(self) -> list[dict[str, Any]]:
        """The bodies of the verdict requests."""
        return [
            json.loads(request.content)
            for request in self.requests
            if request.url.path == "/api/v1/verdict"
        ]


def environment(tmp: Any, **extra: str) -> dict[str, str]:
    return {
        "CURFEW_URL": URL,
        "CURFEW_TOKEN": TOKEN,
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "HOME": str(tmp),
        **extra,
    }
