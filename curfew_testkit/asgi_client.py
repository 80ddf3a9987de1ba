"""The site's ASGI application driven in-process, as a server drives it.

The edge's routes (``curfew_core/edge/doors.py``) are not Django's: Django's
test client cannot reach them. ``AsgiClient`` calls
``curfew_site.asgi.application`` from the test's own thread, inside its
transaction, and answers with a response the API tests read as they read
Django's test client's.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import async_to_sync
from django.core import signals
from django.db import close_old_connections
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import AsyncClient as DjangoAsyncClient
from django.test import Client as DjangoClient

from curfew_core.edge.doors import DOORS
from curfew_core.store import async_cache
from curfew_testkit.asgi_scope import http_scope


class AsgiResponse(HttpResponse):
    """What Django's test client returns, enough for the API tests."""

    def json(self) -> Any:
        return json.loads(self.content)


_wsgi: list[Any] = []


def _django_wsgi() -> Any:
    if not _wsgi:
        from django.core.handlers.wsgi import WSGIHandler

        _wsgi.append(WSGIHandler())
    return _wsgi[0]


class AsgiStreamingResponse(StreamingHttpResponse):
    """A streamed answer of the app, read as it comes (``aclose``: go away)."""

    async def aclose(self) -> None:
        self.gone.set()  # type: ignore[attr-defined]
        await self.task  # type: ignore[attr-defined]

    def json(self) -> Any:
        raise AssertionError("a streamed answer: read streaming_content")


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
        return self.call_scope(self._scope(method, path, body, content_type, extra), body)

    def call_scope(self, scope: dict[str, Any], body: bytes = b"") -> AsgiResponse:
        """The app's answer to ``scope`` exactly as given (any shape a server may send)."""
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
        sync work runs in other threads, on their own connections). A streamed
        answer (no ``Content-Length``) comes back as soon as its head does,
        its body read as it arrives (``streaming_content``), as Django's async
        test client gives a streaming response: the call stays open upstream
        until the body is read or ``aclose`` is called."""
        scope = self._scope(method, path, body, content_type, extra)
        from curfew_site.asgi import application

        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        gone = asyncio.Event()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await gone.wait()
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            await queue.put(message)

        task = asyncio.ensure_future(application(scope, receive, send))
        getter = asyncio.ensure_future(queue.get())
        await asyncio.wait((task, getter), return_when=asyncio.FIRST_COMPLETED)
        if not getter.done():
            getter.cancel()
            task.result()  # the app ended without answering: its exception
            raise AssertionError("the app answered nothing")
        start = getter.result()
        headers = [
            (bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in start["headers"]
        ]
        if any(name.lower() == "content-length" for name, _ in headers):
            chunks = []
            while True:
                message = await queue.get()
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            gone.set()
            await task
            response: HttpResponseBase = AsgiResponse(b"".join(chunks), status=start["status"])
        else:

            async def content() -> Any:
                try:
                    while True:
                        message = await queue.get()
                        if message.get("body"):
                            yield message["body"]
                        if not message.get("more_body", False):
                            break
                    await task
                finally:
                    gone.set()

            response = AsgiStreamingResponse(content(), status=start["status"])
            response.gone = gone  # type: ignore[attr-defined]
            response.task = task  # type: ignore[attr-defined]
        del response["Content-Type"]
        for name, value in headers:
            response[name] = value
        return response  # type: ignore[return-value]

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
        #: Set once an event stream has sent its first event: a client that
        #: has read what it came for goes away (a stream never ends by itself).
        read_enough = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                # A client that waits for its answer, then leaves.
                await read_enough.wait()
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and message.get("body"):
                start = sent[0]
                streaming = any(
                    name == b"content-type" and value.startswith(b"text/event-stream")
                    for name, value in start.get("headers", ())
                )
                if streaming:
                    read_enough.set()

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


def edge_path(path: str) -> bool:
    """Whether the edge answers ``path`` itself (else Django does, behind it):
    from the door table, so a new route is driven through the edge at once."""
    path = path.partition("?")[0]
    return DOORS.door_for(path).match(path) is not None


def _asgi_arguments(
    defaults: dict[str, Any],
    path: str,
    data: Any,
    headers: dict[str, str] | None,
    query_params: Any,
    extra: dict[str, Any],
) -> tuple[str, bytes, dict[str, Any]]:
    """Django test-client arguments as ``AsgiClient``'s: the path with its
    query, the body, and every header as ``HTTP_*``."""
    query = extra.pop("QUERY_STRING", "") or (
        urlencode(query_params, doseq=True) if query_params else ""
    )
    if query:
        path = f"{path}{'&' if '?' in path else '?'}{query}"
    body = data.encode() if isinstance(data, str) else bytes(data or b"")
    merged = {**defaults, **extra}
    for name, value in (headers or {}).items():
        merged["HTTP_" + name.upper().replace("-", "_")] = value
    return path, body, merged


class _EdgeRouted:
    """A Django test client's ``generic``, with the edge's routes (``edge_path``)
    answered by the site's ASGI app as a server drives it: Django never sees them."""

    defaults: dict[str, Any]

    def _edge(
        self, method: str, path: str, body: bytes, content_type: str | None, **extra: Any
    ) -> Any:
        raise NotImplementedError

    def generic(
        self,
        method: str,
        path: str,
        data: Any = "",
        content_type: str | None = "application/octet-stream",
        secure: bool = False,
        *,
        headers: dict[str, str] | None = None,
        query_params: Any = None,
        **extra: Any,
    ) -> Any:
        if not edge_path(path):
            return super().generic(  # type: ignore[misc]
                method,
                path,
                data,
                content_type,
                secure,
                headers=headers,
                query_params=query_params,
                **extra,
            )
        path, body, merged = _asgi_arguments(
            self.defaults, path, data, headers, query_params, extra
        )
        return self._edge(method, path, body, content_type if body else None, **merged)


class Client(_EdgeRouted, DjangoClient):  # type: ignore[misc]
    """Django's test client; the edge's routes through the site's ASGI app."""

    def _edge(
        self, method: str, path: str, body: bytes, content_type: str | None, **extra: Any
    ) -> Any:
        return AsgiClient().request(method, path, body, content_type, **extra)


class AsyncClient(_EdgeRouted, DjangoAsyncClient):  # type: ignore[misc]
    """Django's async test client; the edge's routes through the site's ASGI
    app (from a transactional test: the app's sync work runs in its own
    threads, on their own connections)."""

    def _edge(
        self, method: str, path: str, body: bytes, content_type: str | None, **extra: Any
    ) -> Any:
        return AsgiClient().arequest(method, path, body, content_type, **extra)


def as_wsgi(environ: dict[str, Any], start_response: Any) -> Any:
    """The site as a WSGI app, called on the caller's thread: the edge's routes
    through the site's ASGI app (as ``AsgiClient`` drives it, inside the
    test's transaction), the rest through Django's own WSGI handler (quicker
    than its ASGI one, the same views and middleware), so a WSGI test tool
    (schemathesis's) drives the whole site."""
    if not edge_path(environ.get("PATH_INFO") or "/"):
        return _django_wsgi()(environ, start_response)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    headers = [
        (name[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in environ.items()
        if name.startswith("HTTP_")
    ]
    if environ.get("CONTENT_TYPE"):
        headers.append((b"content-type", environ["CONTENT_TYPE"].encode("latin-1")))
    if length:
        headers.append((b"content-length", str(length).encode()))
    scope = http_scope(
        environ["REQUEST_METHOD"],
        environ.get("PATH_INFO") or "/",
        headers,
        query=environ.get("QUERY_STRING", "").encode("latin-1"),
        client=(environ.get("REMOTE_ADDR") or "127.0.0.1", 5000),
    )
    response = AsgiClient().call_scope(scope, body)
    start_response(
        f"{response.status_code} {response.reason_phrase}",
        [(name, value) for name, value in response.items()],
    )
    return [response.content]
