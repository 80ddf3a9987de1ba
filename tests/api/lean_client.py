"""The API tests through both doors: Django's views and the lean ASGI route.

``door`` (imported into a test module) runs each of its tests twice: through
Django's test client (``django``) and through the site's ASGI application as
a server drives it (``lean``: ``curfew_site.asgi.application``, so the body
guard, the lean route and, for every other path, Django behind them). Same
assertions, same database transaction: the lean route must answer exactly as
the views do.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core import signals
from django.db import close_old_connections
from django.http import HttpResponse

from curfew_core import async_cache
from curfew_core.api import lean
from curfew_testkit.asgi_scope import http_scope

DOORS = ("django", "lean")


@pytest.fixture(params=DOORS)
def door(request: pytest.FixtureRequest) -> str:
    """Which door the module's ``api`` clients call (every test, both)."""
    return str(request.param)


class AsgiResponse(HttpResponse):
    """What Django's test client returns, enough for the API tests."""

    def json(self) -> Any:
        return json.loads(self.content)


def _meta_header(name: str) -> bytes:
    # Django test client style ``HTTP_X_FOO`` -> ``x-foo``.
    return name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")


class AsgiClient:
    """Calls the site's ASGI app in-process, from this (the test's) thread.

    ``async_to_sync`` makes this thread the parent of the sync work the app
    hands to threads, so it runs here, inside the test's transaction, as
    Django's own async test client arranges; and, as Django's test client
    does, the request signals do not close the test's connection.
    """

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        self.headers = dict(headers or {})

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        content_type: str | None = None,
        **extra: Any,
    ) -> AsgiResponse:
        scope = self._scope(method, path, body, content_type, extra)
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            return async_to_sync(self._call)(scope, body)
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)

    async def arequest(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        content_type: str | None = None,
        **extra: Any,
    ) -> AsgiResponse:
        """``request`` from an async test (a transactional one: the app's
        sync work runs in other threads, on their own connections)."""
        return await self._call(self._scope(method, path, body, content_type, extra), body)

    def _scope(
        self, method: str, path: str, body: bytes, content_type: str | None, extra: dict[str, Any]
    ) -> dict[str, Any]:
        path, _, query = path.partition("?")
        headers = [(b"host", extra.pop("host", b"testserver"))]
        if content_type:
            headers.append((b"content-type", content_type.encode()))
        if body:
            headers.append((b"content-length", str(len(body)).encode()))
        for name, value in {**self.headers, **extra}.items():
            if name.startswith("HTTP_"):
                headers.append((_meta_header(name), str(value).encode("latin-1")))
        client = (extra.get("REMOTE_ADDR", "127.0.0.1"), 5000)
        return http_scope(method, path, headers, query=query.encode(), client=client)

    async def _call(self, scope: dict[str, Any], body: bytes) -> AsgiResponse:
        from curfew_site.asgi import application

        sent: list[dict[str, Any]] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                # A client that waits for its answer (Django listens for a
                # disconnect while the view runs, and cancels this when done).
                await asyncio.Event().wait()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        try:
            await application(scope, receive, send)
        finally:
            await async_cache.aclose()  # this loop ends with the call
        start = next(m for m in sent if m["type"] == "http.response.start")
        content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        response = AsgiResponse(content, status=start["status"])
        del response["Content-Type"]
        for name, value in start["headers"]:
            response[name.decode("latin-1")] = value.decode("latin-1")
        return response


def lean_path(path: str) -> bool:
    """Whether the lean route answers ``path`` (else Django does, behind it)."""
    return path.partition("?")[0] in lean.ROUTES
