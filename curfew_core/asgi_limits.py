"""Refuse a request before its body is read, in front of Django's HTTP app.

Django's ASGI handler reads the whole body (spooling it to disk past 2.5 MB)
before any view runs, so a view's own checks come too late: a 1.2 GB
unauthenticated POST was written to disk and only then answered 401. For the
doors that take bodies from tokens (the proxy at ``/v1/``, the API at
``/api/v1/``) this guard decides first, from the request head alone (the
pages, which authenticate by session, get the size limits only):

- a declared ``Content-Length`` over the door's limit: 413 at once;
- a body that may be large (over one receive's worth, or of unknown length):
  the bearer token is checked first, and a missing or unknown one is a 401
  before a byte of the body is read;
- while the body streams in, it is counted: past the limit (a chunked body
  declares no length) the client gets 413 and Django a disconnect, so it stops
  reading and answers nothing.

A small body changes nothing: it has already arrived with the head, and the
view authenticates it as before (one token lookup per request, as ever).
Every refusal is in its door's own shape, built by the door's own helpers:
each token door declares its ``Door`` in its own ``limits`` module
(``proxy.limits``, ``api.limits``), and the ASGI app (``curfew_site.asgi``)
hands them to ``BodyGuard``, so this module imports no door.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.template import loader
from redis.exceptions import RedisError

from curfew_core import throttle
from curfew_core.asgi_threads import in_request_thread
from curfew_core.http_headers import api_key_or_bearer_token, bearer_token

log = logging.getLogger("curfew.limits")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]
ASGIApp = Callable[..., Awaitable[None]]

#: Bodies up to this size arrive with the head (one receive) and cost nothing
#: to read: only larger or unknown-length bodies wait for the token check.
EARLY_AUTH_BYTES = 64 * 1024


@dataclass(frozen=True)
class Door:
    prefix: str
    #: The largest body the door takes (``None``: no limit).
    max_body: Callable[[], int | None]
    #: Paths under ``prefix`` that need no token.
    public: frozenset[str]
    unauthorized: Callable[[bool], HttpResponseBase]
    too_large: Callable[[int], HttpResponseBase]
    unavailable: Callable[[], HttpResponseBase]
    rate_limited: Callable[[throttle.Refusal], HttpResponseBase]
    #: Whether the door authenticates by bearer token (pages use the session,
    #: which the guard cannot check before the body: they get the size limit only).
    takes_tokens: bool = True
    #: Whether ``x-api-key`` carries the token too (Anthropic's protocol).
    takes_api_key: bool = False


def _page_too_large(limit: int) -> HttpResponseBase:
    # The styled page every other page error uses (no user, no database needed).
    return HttpResponse(
        loader.render_to_string("413.html", {"limit_kb": limit // 1024}),
        status=413,
    )


def _no_token_door(*args: object) -> HttpResponseBase:  # pragma: no cover - never called
    raise AssertionError("a door without tokens has no token answers")


#: Everything that is not a token door (sign-in, the settings page's forms,
#: the admin): Django's own form limit, enforced before the body is spooled
#: rather than after. Listed last: its prefix takes every path.
PAGES = Door(
    prefix="/",
    max_body=lambda: settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    public=frozenset(),
    unauthorized=_no_token_door,
    too_large=_page_too_large,
    unavailable=_no_token_door,
    rate_limited=_no_token_door,
    takes_tokens=False,
)


def _door(path: str, doors: Sequence[Door]) -> Door | None:
    for door in doors:
        if path.startswith(door.prefix):
            return door
    return None


def scope_header(scope: Scope, name: bytes) -> bytes | None:
    """A request header's value from an ASGI scope (the lean API route reads them too)."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


def scope_bearer(scope: Scope) -> str | None:
    """The token as the doors read it (``Authorization: Bearer <token>``)."""
    return bearer_token((scope_header(scope, b"authorization") or b"").decode("latin-1"))


def _token(door: Door, scope: Scope) -> str | None:
    """The token as ``door`` reads it."""
    if not door.takes_api_key:
        return scope_bearer(scope)
    return api_key_or_bearer_token(
        (scope_header(scope, b"x-api-key") or b"").decode("latin-1"),
        (scope_header(scope, b"authorization") or b"").decode("latin-1"),
    )


async def _token_is_live(raw: str, address: str) -> bool:
    """The doors' own check, throttles included (a failure here counts as one
    there; ``throttle.Throttled`` when the address or the token is over its limit)."""
    # Its own thread: token lookups of different requests do not queue behind
    # one another, and the database connection is tidied after.
    identity = await in_request_thread(
        BodyGuard, lambda: throttle.identify_throttled(raw, kind="api", address=address)
    )
    return identity is not None


async def _answer(send: Send, response: HttpResponseBase) -> None:
    """``response`` over ASGI, closing the connection: the body was not read."""
    headers = [
        (name.encode("latin-1"), str(value).encode("latin-1")) for name, value in response.items()
    ]
    headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})  # type: ignore[attr-defined]


class BodyGuard:
    """Wraps Django's HTTP app; see the module docstring."""

    def __init__(self, app: ASGIApp, *, doors: Sequence[Door]) -> None:
        """``doors``: each door's limits and answers (its own ``limits`` module
        declares them), the first whose prefix matches a path applies."""
        self.app = app
        self.doors = tuple(doors)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        door = _door(scope.get("path", ""), self.doors) if scope["type"] == "http" else None
        if door is None:
            await self.app(scope, receive, send)
            return
        limit = door.max_body()
        declared = scope_header(scope, b"content-length")
        length = int(declared) if declared is not None and declared.isdigit() else None
        if limit is not None and length is not None and length > limit:
            await _answer(send, door.too_large(limit))
            return
        # HTTP/1.1: no Content-Length and no Transfer-Encoding means no body.
        unknown = length is None and scope_header(scope, b"transfer-encoding") is not None
        large = unknown or (length is not None and length > EARLY_AUTH_BYTES)
        if large and door.takes_tokens and scope["path"] not in door.public:
            refusal = await self._check_token(door, scope)
            if refusal is not None:
                await _answer(send, refusal)
                return
        if limit is None or not unknown:
            # A declared length is the body's length (the server holds the
            # client to it), and it is within the limit: nothing to count.
            await self.app(scope, receive, send)
            return
        await self._counted(door, limit, scope, receive, send)

    async def _check_token(self, door: Door, scope: Scope) -> HttpResponseBase | None:
        raw = _token(door, scope)
        if raw is None:
            return door.unauthorized(True)
        try:
            live = await _token_is_live(raw, throttle.scope_address(scope))
        except throttle.Throttled as exc:
            return door.rate_limited(exc.refusal)
        except (DatabaseError, RedisError):
            log.exception("early token check: storage unavailable")
            return door.unavailable()
        return None if live else door.unauthorized(False)

    async def _counted(
        self, door: Door, limit: int, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Run the app, cutting the body off at ``limit`` with a 413."""
        received = 0
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message: Message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    await _answer(send, door.too_large(limit))
                    # Django stops reading at a disconnect and answers nothing.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
