"""Who may open a capsule socket, decided by the credential it carries.

A session cookie is ambient: the browser attaches it to a socket opened by any
page, so a session socket must come from an allowed origin (Channels'
``AllowedHostsOriginValidator`` semantics), or a hostile page could read the
user's state (cross-site WebSocket hijacking).

An embed token is not ambient: only a page that was given the token can send
it, and the ``<script>`` embed exists to run on other people's pages, so a token
socket is accepted from any origin. It then never sees the session: cookies are
stripped and the consumer authenticates by the token alone, so a hostile page
cannot add ``?token=x`` to skip the origin check and ride on the cookie.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import ParseResult, parse_qs, urlparse

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import OriginValidator
from django.conf import settings

from curfew_core.realtime.codes import CLOSE_FORBIDDEN_ORIGIN

Scope = dict[str, Any]
ASGIApp = Any

#: Scope keys set here and read by the consumer.
CREDENTIAL = "curfew_credential"
TOKEN = "curfew_token"  # noqa: S105 - a scope key, not a secret


def token_from_query(scope: Scope) -> str | None:
    """The ``token`` query parameter; ``""`` when present but empty, ``None`` when absent."""
    query = scope.get("query_string", b"").decode("latin1")
    values = parse_qs(query, keep_blank_values=True).get("token")
    return None if values is None else values[0]


def origin_of(scope: Scope) -> ParseResult | None:
    for name, value in scope.get("headers", []):
        if name == b"origin":
            try:
                text: str = value.decode("latin1")
                return urlparse(text)
            except (UnicodeDecodeError, ValueError):
                return None
    return None


class OriginRefusal(AsyncWebsocketConsumer):  # type: ignore[misc]
    """Accept, then close with 4403: a browser sees a refused handshake only as 1006."""

    code = CLOSE_FORBIDDEN_ORIGIN
    reason = "origin not allowed for a session socket; embed with ?token="

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=self.code, reason=self.reason)


class SessionOriginValidator(OriginValidator):  # type: ignore[misc]
    """``AllowedHostsOriginValidator`` that refuses with close code 4403.

    ``ALLOWED_HOSTS`` is read per connection (not once at import), so the
    validator always agrees with the HTTP side's host check.
    """

    def __init__(self, application: ASGIApp) -> None:
        self.application = application
        self.refusal = OriginRefusal.as_asgi()

    @property
    def allowed_origins(self) -> list[str]:
        hosts = list(settings.ALLOWED_HOSTS)
        if settings.DEBUG and not hosts:
            hosts = ["localhost", "127.0.0.1", "[::1]"]
        return hosts

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if self.valid_origin(origin_of(scope)):
            await self.application(scope, receive, send)
        else:
            await self.refusal(scope, receive, send)


class CapsuleGuard:
    """Route a socket by its credential: token (any origin) or session (allowed origins)."""

    def __init__(self, application: ASGIApp) -> None:
        self.token_app = application
        self.session_app = SessionOriginValidator(AuthMiddlewareStack(application))

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            raise ValueError("CapsuleGuard only guards WebSocket connections")
        raw = token_from_query(scope)
        if raw is not None:
            headers = [(k, v) for k, v in scope.get("headers", []) if k != b"cookie"]
            scope = {**scope, "headers": headers, CREDENTIAL: "token", TOKEN: raw}
            await self.token_app(scope, receive, send)
        else:
            await self.session_app({**scope, CREDENTIAL: "session"}, receive, send)
