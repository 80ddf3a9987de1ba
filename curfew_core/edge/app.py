"""The edge: one ASGI pipeline for every token door, Django for the rest.

Every HTTP request finds its door in the table (``edge.doors``). A route the
edge serves (the whole API, the change stream, every proxy door) goes through
one pipeline, end to end, with no Django handler or middleware:

1. **head**: the ``Host`` check and the HTTPS redirect, by Django's own code
   once per distinct head (``edge.heads``); the method (a 405 naming the
   ones served, before any token);
2. **guard**: a declared ``Content-Length`` over the door's limit is a 413
   before anything else;
3. **credential**: the door's token reader, then the caller, warm from the
   cache on the event loop or with one hop to a pooled thread
   (``edge.caller``): a missing or unknown token is a 401 before a byte of
   the body is read, a throttle a 429, an outage a 503; a team key as the
   route takes one (``Route.team_key``), its rate counted once the body
   says which member the call is for (``edge.team_caller``);
4. **body**: read and counted against the limit (a chunked body declares
   none: past it, a 413);
5. **handler**: the route's, given an :class:`~curfew_core.edge.request.EdgeRequest`
   (a sync one, ``Route.thread``, on a pooled thread); whatever it raises is
   answered in the door's dialect (a ``Refused`` its own answer, an outage a
   503 with ``Retry-After``, anything else a 500), never an HTML page;
6. **answer**: whole or streamed (``edge.send``), with the head's headers; a
   long route (an upstream call, a stream) is cancelled if the client goes
   away, and its answer closed either way.

Everything else goes to Django (pages, the admin, the capsule, the probes),
behind the same body guard: over the door's limit a 413 before Django reads
the body. No path under a token door is Django's (``declare.Table``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from django.core.signals import setting_changed
from django.http.response import HttpResponseBase
from django.utils.module_loading import import_string

from curfew_core import throttle
from curfew_core.edge import caller as callers
from curfew_core.edge import own_name, team_caller
from curfew_core.edge.declare import Door, Route, Table
from curfew_core.edge.dialects import OUTAGES
from curfew_core.edge.doors import DOORS
from curfew_core.edge.heads import Head, Heads
from curfew_core.edge.request import EdgeRequest, Refused, address_of
from curfew_core.edge.scope import Message, Scope, ScopeHeaders, header, route_path
from curfew_core.edge.send import (
    Answer,
    cancelled_on_disconnect,
    head_of_answer,
    send_response,
    send_whole,
)
from curfew_core.edge.threads import run_sync
from curfew_core.store import local_layer
from curfew_core.store.memos import LRU
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.edge")
#: A storage outage is said once (with its traceback), not per 503 answered.
_storage_down = Notice(log, logging.ERROR)

ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Handler = Callable[[EdgeRequest], Awaitable[HttpResponseBase | Answer]]

#: Paths whose route is kept (``Edge._routed``): bounded, least recently used
#: (issue 40), so a scan of unknown paths no longer forgets the few a gateway asks.
_ROUTED_KEPT = 1024
#: Request heads whose reading is kept (``Edge._known``): bounded, least
#: recently used. As many as the process's layer holds entries: a head names
#: its token, and 10,000 gateways' heads through 1,024, forgotten whole when
#: full, were read anew every time (issue 40).
_KNOWN_KEPT = local_layer.LOCAL_LAYER_SIZE


class _Known:
    """What a request head says before its body is read (``Edge._head``): its
    headers, Django's checks of it, its declared length and its credential.
    All of it follows from the head alone (and the settings: forgotten when
    they change), so a head seen before is read again with one dict lookup:
    a gateway sends the same head, token and all, call after call, and
    reading it anew (every header, Django's checks, the token's header) was a
    tenth of a warm verdict."""

    __slots__ = ("credential", "declared", "head", "headers", "length")

    def __init__(
        self,
        headers: ScopeHeaders,
        head: Head,
        declared: bytes | None,
        credential: str | None,
    ) -> None:
        self.headers = headers
        self.head = head
        self.declared = declared
        self.length = _length(declared)
        self.credential = credential


class _TooLarge(Exception):
    pass


class _Gone(Exception):
    """The client went away before its body arrived: nobody to answer."""


def _declared_length(scope: Scope) -> int | None:
    return _length(header(scope, b"content-length"))


def _length(declared: bytes | None) -> int | None:
    if declared is None or not (declared.isascii() and declared.isdigit()):
        return None
    return int(declared)


async def _read_body(receive: Receive, limit: int | None, message: Message) -> bytes:
    """The body, from its first message on (``message``, already received)."""
    chunks = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise _Gone
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


def _in_thread(handler: Callable[[EdgeRequest], HttpResponseBase]) -> Handler:
    """A sync handler as the pipeline calls one: on a pooled thread."""

    async def in_thread(request: EdgeRequest) -> HttpResponseBase:
        return await run_sync(handler, request)

    return in_thread


class Edge:
    """The site's HTTP app; see the module docstring. ``app``: Django's."""

    def __init__(self, app: ASGIApp, table: Table = DOORS) -> None:
        self.app = app
        self.table = table
        self.heads = Heads()
        # Every handler imported now: a typo in the table fails at start.
        self.handlers: dict[str, Handler] = {}
        for route in table.routes():
            handler = import_string(route.handler)
            self.handlers[route.handler] = _in_thread(handler) if route.thread else handler
        #: Each path's door and route, found once: a gateway asks the same
        #: few paths all day (a path's match depends on the table alone).
        self._routed: LRU[str, tuple[Door, tuple[Route, dict[str, str]] | None]] = LRU(
            maxsize=_ROUTED_KEPT
        )
        #: Each request head's reading (``_head``), by the head itself.
        self._known: LRU[tuple[Any, ...], _Known] = LRU(maxsize=_KNOWN_KEPT)
        setting_changed.connect(self._settings_changed, weak=False)

    def _settings_changed(self, **kwargs: Any) -> None:
        self.heads.clear()
        self._known.clear()

    def _head(self, door: Door, scope: Scope) -> _Known:
        """The reading of the request's head for ``door`` (see ``_Known``).

        Keyed by everything it is read from: the door (its credential reader),
        the scope's scheme, server and root path (Django's checks) and every
        header, names and values as sent. A shape that cannot be a key (a
        server sending lists, as the ASGI spec allows) is read every time."""
        raw = scope.get("headers") or ()
        try:
            key: tuple[Any, ...] | None = (
                door.name,
                scope.get("scheme"),
                scope.get("server"),
                scope.get("root_path"),
                tuple(raw),
            )
            known = self._known.get(key)  # type: ignore[arg-type]
        except TypeError:
            key = known = None
        if known is not None:
            return known
        headers = ScopeHeaders(raw)
        known = _Known(
            headers,
            self.heads(scope, headers),
            headers.raw(b"content-length"),
            door.credential(headers) if door.credential is not None else None,
        )
        if key is not None and known.head.redirect is None:
            # Unhashable (a server's lists): ``get`` answered None, setting raises.
            # A redirect names this request's path and query: never kept (``Heads``).
            with contextlib.suppress(TypeError):
                self._known[key] = known
        return known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        routed = self._routed.get(path)
        if routed is None:
            door = self.table.door_for(path)
            routed = (door, door.match(path))
            self._routed[path] = routed
        door, found = routed
        if found is None:
            await self._to_django(door, scope, receive, send)
            return
        route, params = found
        try:
            await self._serve(door, route, params, path, scope, receive, send)
        except _Gone:
            return

    # -- the pipeline ----------------------------------------------------------------
    async def _serve(
        self,
        door: Door,
        route: Route,
        params: dict[str, str],
        path: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        dialect = door.dialect
        known = self._head(door, scope)
        head = known.head
        if head.bad_host is not None:
            await send_response(send, dialect.bad_host(head.bad_host))
            return
        if head.redirect is not None:
            await send_response(send, head.redirect)
            return
        extra = head.headers
        method = scope["method"]
        if route.methods and method not in route.methods:
            await send_response(send, dialect.not_allowed(method, route.methods), extra)
            return
        limit = door.max_body()
        length = known.length
        if known.declared is not None and length is None:
            # ASCII digits only: a latin-1 "²" is a digit to isdigit() and not to int().
            refusal = dialect.refusal(
                400, "the request body's Content-Length is not a length", code="invalid_request"
            )
            await send_response(send, refusal, extra, close=True)
            return
        if limit is not None and length is not None and length > limit:
            await send_response(send, dialect.too_large(limit), extra, close=True)
            return
        headers = known.headers
        caller = None
        if route.token:
            # Written out here, not a helper coroutine: this step is on every
            # request. Where it comes from is worked out only if the cache
            # cannot vouch for the token; the kind asked for is the route's.
            raw = known.credential
            if raw is None and door.query_credential is not None:
                # Read per request: the head's reading is keyed by headers alone.
                raw = door.query_credential(scope.get("query_string") or b"")
            try:
                caller = await callers.resolve(
                    raw, partial(address_of, scope, headers), kind=route.token_kind
                )
            except throttle.Throttled as exc:
                await send_response(send, dialect.rate_limited(exc.refusal), extra, close=True)
                return
            except OUTAGES:
                _storage_down.failed(
                    "%s: token check: storage unavailable", door.name, exc_info=True
                )
                await send_response(send, dialect.unavailable(), extra, close=True)
                return
            if caller is None:
                await send_response(
                    send, dialect.unauthorized(raw, route.token_kind), extra, close=True
                )
                return
        # A body that came whole with its first message (most do) is read here.
        message = await receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            body = message.get("body", b"")
            too_large = limit is not None and len(body) > limit
        else:
            try:
                body = await _read_body(receive, limit, message)
                too_large = False
            except _TooLarge:
                too_large = True
        if too_large:
            await send_response(send, dialect.too_large(limit or 0), extra, close=True)
            return
        request = EdgeRequest(scope, door, method, path, headers, body, caller, dict(params))
        if caller is not None and team_caller.is_team(caller):
            # A team key: served as the member it names (issue 26), or as
            # itself where the route takes it so; its rate counted on whom
            # it is for (the member's own, or the key's).
            try:
                member = (
                    await team_caller.as_itself(request)
                    if route.team_key == "itself"
                    else await team_caller.member_caller(
                        request, required=route.team_key == "member"
                    )
                )
            except OUTAGES:
                _storage_down.failed(
                    "%s: team key's member: storage unavailable", door.name, exc_info=True
                )
                member = dialect.unavailable()
            if isinstance(member, HttpResponseBase):
                await send_response(send, member, extra)
                return
            if member is not None:
                request.caller = member
        elif caller is not None:
            # A personal token that names a member (seldom sent): only its own person.
            named = headers.raw(team_caller.MEMBER_HEADER)
            if named is not None:
                refused = await own_name.refusal(request, named)
                if refused is not None:
                    await send_response(send, refused, extra)
                    return
        handler = self.handlers[route.handler]
        if route.long:
            await cancelled_on_disconnect(receive, self._answer(handler, request, send, extra))
        else:
            await self._answer(handler, request, send, extra)

    async def _answer(
        self,
        handler: Handler,
        request: EdgeRequest,
        send: Send,
        extra: tuple[tuple[bytes, bytes], ...],
    ) -> None:
        """The handler's answer, or the dialect's when it fails before answering."""
        dialect = request.door.dialect
        try:
            response = await handler(request)
        except Refused as exc:
            response = exc.response()
        except throttle.Throttled as exc:
            response = dialect.rate_limited(exc.refusal)
        except OUTAGES:
            _storage_down.failed(
                "%s %s: storage unavailable", request.method, request.path, exc_info=True
            )
            response = dialect.unavailable()
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            response = dialect.failed()
        if isinstance(response, Answer):
            # The hot routes' bytes: the head is made before anything is sent
            # (nothing tracked, no closure per answer), so a failure making it
            # is still the dialect's answer, and one sending it broke off.
            try:
                head = head_of_answer(response, extra)
            except Exception:
                log.exception("%s %s: the answer failed", request.method, request.path)
                await send_response(send, dialect.failed(), extra)
                return
            try:
                await send_whole(send, response.status_code, head, response.content)
            except Exception:
                log.exception("%s %s: the answer broke off", request.method, request.path)
                raise
            return
        await self._send_tracked(request, response, send, extra)

    async def _send_tracked(
        self,
        request: EdgeRequest,
        response: HttpResponseBase | Answer,
        send: Send,
        extra: tuple[tuple[bytes, bytes], ...],
    ) -> None:
        """``response``, or the dialect's 500 when it fails before its first byte."""
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await send_response(tracked, response, extra)
        except Exception:
            if started:
                # Mid-answer: nothing more can be said; the server ends it.
                log.exception("%s %s: the answer broke off", request.method, request.path)
                raise
            log.exception("%s %s: the answer failed", request.method, request.path)
            await send_response(send, request.door.dialect.failed(), extra)

    # -- everything else: Django, behind the body guard -------------------------------
    async def _to_django(self, door: Door, scope: Scope, receive: Receive, send: Send) -> None:
        limit = door.max_body()
        length = _declared_length(scope)
        if limit is not None and length is not None and length > limit:
            await send_response(send, door.dialect.too_large(limit), close=True)
            return
        # HTTP/1.1: no Content-Length and no Transfer-Encoding means no body.
        unknown = length is None and header(scope, b"transfer-encoding") is not None
        if limit is None or not unknown:
            # A declared length is the body's length (the server holds the
            # client to it), and it is within the limit: nothing to count.
            await self.app(scope, receive, send)
            return
        await self._counted(door, limit, scope, receive, send)

    async def _counted(
        self, door: Door, limit: int, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Django's app, its body cut off at ``limit`` with a 413."""
        received = 0
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    await send_response(send, door.dialect.too_large(limit), close=True)
                    # Django stops reading at a disconnect and answers nothing.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
