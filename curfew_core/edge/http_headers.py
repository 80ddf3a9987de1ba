"""HTTP headers more than one module reads or writes, kept outside the doors
so that no door (and no module in front of them) imports another to share one.

- the bearer token: the API and the proxy doors read it the same way; each
  model door reads its token as its wire protocol declares (``protocols``:
  ``X-Curfew-Token`` first, where a caller that brings its own provider
  credential puts its Curfew token, then the protocol's own header), and
  :func:`caller_credential` finds that credential where the protocol
  carries one;
- the capsule's Content-Security-Policy: the embed door sets it, and so does
  the outage answer (``outage``) on the same pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware

from curfew_core.protocols.base import (
    CURFEW_TOKEN_HEADER,
    CURFEW_TOKEN_RAW,
    WireProtocol,
    bearer_in,
    bearer_token,
)

__all__ = [
    "CURFEW_TOKEN_HEADER",
    "CURFEW_TOKEN_RAW",
    "bearer_in",
    "bearer_token",
]


#: Curfew's own credentials by their prefixes (API, embed, team key, invite…,
#: as ``curfew_site.redaction`` knows them): never a provider's, never sent
#: upstream, even from a header that would carry the caller's own.
_CURFEW_OWN = re.compile(r"cf[wetih]_", re.IGNORECASE)


class CallerCredential(tuple[tuple[str, str], ...]):
    """The caller's own credential headers, ``(name, value)`` as sent. Its
    ``repr`` never shows a value: nothing that logs it can leak it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<CallerCredential {', '.join(name for name, _ in self)}: [redacted]>"

    __str__ = __repr__


def _own_secret(name: bytes, value: str) -> str:
    """The secret in a credential header's value (a bearer's token)."""
    if name == b"authorization":
        return bearer_token(value) or value.strip()
    return value.strip()


def caller_credential(
    raw: Iterable[tuple[bytes, bytes]], protocol: WireProtocol
) -> CallerCredential | None:
    """The caller's own provider credential in a request's raw (ASGI) headers:
    the headers ``protocol`` carries a credential in (``credential_headers``:
    OpenAI's ``Authorization``; Anthropic's and ``x-api-key``; Gemini's
    ``x-goog-api-key``) that hold something other than a Curfew token, when
    the Curfew token came in ``X-Curfew-Token``; its ``account_headers``
    (OpenAI's organization and project) go with it. ``None``: no
    ``X-Curfew-Token``, or nothing of the caller's own beside it (the
    operator's key is sent, as always).

    A name written with ``_`` is not read (as ``ScopeHeaders`` does not), and
    a value that is not ASCII is no credential."""
    names = protocol.credential_headers
    accounts = protocol.account_headers
    token_sent = False
    found: list[tuple[str, str]] = []
    account: list[tuple[str, str]] = []
    for raw_name, raw_value in raw:
        name = bytes(raw_name).lower()
        if name == CURFEW_TOKEN_RAW:
            token_sent = token_sent or bool(bytes(raw_value).strip())
            continue
        wanted = name in names
        if not wanted and name not in accounts:
            continue
        try:
            value = bytes(raw_value).decode("ascii")
        except UnicodeDecodeError:
            continue
        if not wanted:
            account.append((name.decode(), value))
            continue
        secret = _own_secret(name, value)
        if secret and not _CURFEW_OWN.match(secret):
            found.append((name.decode(), value))
    if not token_sent or not found:
        return None
    return CallerCredential((*found, *account))


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
