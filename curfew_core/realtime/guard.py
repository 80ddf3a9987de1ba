"""Who may open a capsule socket, decided by the credential it carries.

A session cookie is ambient: the browser attaches it to a socket opened by any
page, so a session socket must come from the app's own origin (scheme, host and
port, exactly as Django's CSRF origin check compares them) or from an origin in
``CSRF_TRUSTED_ORIGINS``; otherwise a hostile page, even one on another port of
the same host, could read the user's state (cross-site WebSocket hijacking).

An embed token is not ambient: only a page that was given the token can send
it, and the ``<script>`` embed exists to run on other people's pages, so a token
socket is accepted from any origin. It then never sees the session: cookies are
stripped and the consumer authenticates by the token alone, so a hostile page
cannot add ``?token=x`` to skip the origin check and ride on the cookie.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddleware
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from curfew_core.realtime.codes import CLOSE_FORBIDDEN_ORIGIN

log = logging.getLogger("curfew.realtime")

Scope = dict[str, Any]
ASGIApp = Any

#: Scope keys set here and read by the consumer.
CREDENTIAL = "curfew_credential"
TOKEN = "curfew_token"  # noqa: S105 - a scope key, not a secret
#: Set when the session could not be read (database down): the consumer closes 1011.
UNAVAILABLE = "curfew_unavailable"


def token_from_query(scope: Scope) -> str | None:
    """The ``token`` query parameter; ``""`` when present but empty, ``None`` when absent."""
    query = scope.get("query_string", b"").decode("latin1")
    values = parse_qs(query, keep_blank_values=True).get("token")
    return None if values is None else values[0]


class HandshakeRequest(HttpRequest):
    """The socket's handshake as Django's request, for Django's own origin check.

    ``is_secure()`` then honours ``SECURE_PROXY_SSL_HEADER`` and ``get_host()``
    validates the Host against ``ALLOWED_HOSTS``, as for any page.
    """

    def __init__(self, scope: Scope) -> None:
        super().__init__()
        self.scope_scheme = scope.get("scheme", "ws")
        self.path = self.path_info = scope.get("path", "")
        server = scope.get("server") or (None, None)
        self.META = {"SERVER_NAME": server[0] or "", "SERVER_PORT": str(server[1] or "")}
        for name, value in scope.get("headers", []):
            key = "HTTP_" + name.decode("latin1").upper().replace("-", "_")
            text = value.decode("latin1")
            # Repeated headers join with commas, as Django's ASGI request does.
            self.META[key] = f"{self.META[key]},{text}" if key in self.META else text

    def _get_scheme(self) -> str:
        return "https" if self.scope_scheme in ("wss", "https") else "http"


def _origin_checker() -> CsrfViewMiddleware:
    return CsrfViewMiddleware(lambda request: None)  # type: ignore[arg-type]


def same_origin(scope: Scope) -> bool:
    """Whether the socket's ``Origin`` is its own origin or a trusted one (Django's rule)."""
    request = HandshakeRequest(scope)
    origin = request.META.get("HTTP_ORIGIN")
    if not origin or origin == "null":
        return False
    try:
        request.get_host()  # the Host itself must be allowed
    except DisallowedHost:
        return False
    verified: bool = _origin_checker()._origin_verified(request)  # type: ignore[attr-defined]  # Django's own rule
    return verified


class OriginRefusal(AsyncWebsocketConsumer):  # type: ignore[misc]
    """Accept, then close with 4403: a browser sees a refused handshake only as 1006."""

    code = CLOSE_FORBIDDEN_ORIGIN
    reason = "origin not allowed for a session socket; embed with ?token="
    #: No channel layer (an alias that names none): a refused socket hears
    #: nothing, and with Redis a channel of its own cost a blocking receive
    #: for as long as the client kept it open.
    channel_layer_alias = "curfew-no-layer"

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=self.code, reason=self.reason)


class SessionOriginValidator:
    """Only same-origin (or trusted-origin) session sockets get through; others 4403."""

    def __init__(self, application: ASGIApp) -> None:
        self.application = application
        self.refusal = OriginRefusal.as_asgi()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if same_origin(scope):
            await self.application(scope, receive, send)
        else:
            await self.refusal(scope, receive, send)


class SessionAuth(AuthMiddleware):  # type: ignore[misc]
    """Channels' ``AuthMiddleware``, except that a session that cannot be read
    (the database is down) marks the scope instead of failing the handshake
    with an HTTP 500: the consumer then accepts and closes with 1011."""

    async def resolve_scope(self, scope: Scope) -> None:
        try:
            await super().resolve_scope(scope)
        except Exception:
            log.exception("capsule socket: session could not be read")
            scope[UNAVAILABLE] = True


class CapsuleGuard:
    """Route a socket by its credential: token (any origin) or session (own origin)."""

    def __init__(self, application: ASGIApp) -> None:
        self.token_app = application
        self.session_app = SessionOriginValidator(
            CookieMiddleware(SessionMiddleware(SessionAuth(application)))
        )

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            raise ValueError("CapsuleGuard only guards WebSocket connections")
        raw = token_from_query(scope)
        if raw is not None:
            headers = scope.get("headers", [])
            if any(name == b"cookie" for name, _ in headers):  # else no copy (kept per socket)
                headers = [(k, v) for k, v in headers if k != b"cookie"]
            scope = {**scope, "headers": headers, CREDENTIAL: "token", TOKEN: raw}
            await self.token_app(scope, receive, send)
        else:
            await self.session_app({**scope, CREDENTIAL: "session"}, receive, send)
