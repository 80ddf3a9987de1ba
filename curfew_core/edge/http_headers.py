"""HTTP headers more than one module reads or writes, kept outside the doors
so that no door (and no module in front of them) imports another to share one.

- the bearer token: the API, the proxy and the guard in front of Django
  (``edge``) read it the same way (and the Messages door, Anthropic's
  ``x-api-key`` too);
- the capsule's Content-Security-Policy: the embed door sets it, and so does
  the outage answer (``outage``) on the same pages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware


def bearer_token(header: str) -> str | None:
    """The token in an ``Authorization: Bearer <token>`` header value, or None
    (another scheme, or nothing after it)."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def bearer_in(headers: Mapping[str, str]) -> str | None:
    """The bearer token in request headers (case-insensitive), or None."""
    return bearer_token(headers.get("Authorization", ""))


def bearer(request: HttpRequest) -> str | None:
    """The request's bearer token, or None."""
    return bearer_in(request.headers)


def api_key_or_bearer_token(api_key: str, authorization: str) -> str | None:
    """The token as Anthropic's clients send it: ``x-api-key: <token>``, or
    ``Authorization: Bearer <token>`` (the SDK's ``auth_token``, Claude Code's
    ``ANTHROPIC_AUTH_TOKEN``); the ``x-api-key`` first when both are sent."""
    return api_key.strip() or bearer_token(authorization)


def api_key_or_bearer_in(headers: Mapping[str, str]) -> str | None:
    """The ``x-api-key`` or bearer token in request headers (case-insensitive), or None."""
    return api_key_or_bearer_token(headers.get("x-api-key", ""), headers.get("Authorization", ""))


#: An API answer (JSON or an event stream) is never a page: nothing to load,
#: nothing may frame it (every answer of the edge).
API_POLICY = "default-src 'none'; frame-ancestors 'none'"


def _never(request: HttpRequest) -> HttpResponseBase:  # pragma: no cover - hooks only
    raise AssertionError("only the middleware's hooks are called")


class ApiAnswers:
    """What the site's middleware did that still applies to an API answer, by
    Django's own middleware hooks, for the routes that skip that middleware
    (the edge, ``edge.heads``): the HTTPS redirect, HSTS and
    the security headers, ``X-Frame-Options``, and ``API_POLICY`` unless the
    answer set its own policy."""

    def __init__(self) -> None:
        self.security = SecurityMiddleware(_never)
        self.frames = XFrameOptionsMiddleware(_never)

    def redirect(self, request: HttpRequest) -> HttpResponseBase | None:
        """The HTTPS redirect for ``request``, if the settings ask for one."""
        return self.security.process_request(request)

    def finish(self, request: HttpRequest, response: Any) -> None:
        """Set the headers on ``response`` (they only set headers, on any response)."""
        self.security.process_response(request, response)
        self.frames.process_response(request, response)
        response.headers.setdefault("Content-Security-Policy", API_POLICY)
        for name in HTML_ONLY:
            response.headers.pop(name, None)


#: Headers the middleware sets that only a page uses (OWASP's REST cheat
#: sheet: they "mainly enhance security for HTML responses"): an API answer
#: has no links to send a referrer from and, under ``API_POLICY``, runs no
#: script that an opener policy would isolate. The edge's answers leave them
#: out; each header costs the server about a fortieth of a warm verdict to
#: write (``docs/benchmarks/edge.md``). Its answers keep ``nosniff``, the
#: content policy and ``X-Frame-Options`` (and HSTS over HTTPS).
HTML_ONLY = ("Referrer-Policy", "Cross-Origin-Opener-Policy")


#: The iframe page may be framed by any site (that is its point); everything it
#: loads is still its own. ``frame-ancestors *`` admits every http(s) page.
EMBED_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors *"
)
