"""What a request head decides before any handler, by Django's own code.

The edge answers its doors without Django's handler and middleware; what that
middleware did that still applies to an API answer is done here with
Django's own methods, once per distinct request head (a deployment sees a
handful): the ``Host`` check (``ALLOWED_HOSTS``), the HTTPS redirect (made for
each request it answers: it names that request's path and query), and the
answer headers (HSTS, ``nosniff``, ``X-Frame-Options``, and a content policy
that allows nothing: a JSON or SSE answer is never a page, so the referrer and
opener policies a page needs are left out, ``http_headers.HTML_ONLY``).
"""

from __future__ import annotations

from dataclasses import dataclass
from io import BytesIO
from typing import Any

from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.http.response import HttpResponseBase

from curfew_core.edge.http_headers import ApiAnswers
from curfew_core.edge.scope import Scope, ScopeHeaders, server_key
from curfew_core.store.memos import LRU

#: Distinct request heads kept: bounded, least recently used (issue 40). Keyed
#: by the host headers, not the token: a deployment sees a handful.
_KEPT = 256


@dataclass(frozen=True, slots=True)
class Head:
    """What a request head decided."""

    #: The ``Host`` it named when ``ALLOWED_HOSTS`` refuses it, else ``None``.
    bad_host: str | None
    #: Django's HTTPS redirect, when the settings ask for one.
    redirect: HttpResponseBase | None
    #: The headers every answer to such a head carries (names lower case).
    headers: tuple[tuple[bytes, bytes], ...]


class Heads:
    """Django's checks and answer headers for a request head, remembered per head."""

    def __init__(self) -> None:
        self._heads: LRU[tuple[Any, ...], Head] = LRU(maxsize=_KEPT)
        self._answers = ApiAnswers()

    def __call__(self, scope: Scope, headers: ScopeHeaders) -> Head:
        # Each header with all its values, as Django reads it: a head keyed
        # by a first value alone would share its entry with a head that sends
        # a second, refused ``Host`` (the refusal then answered to both).
        raw = headers.raw
        key = (
            scope.get("scheme"),
            server_key(scope),
            scope.get("root_path"),
            raw(b"host"),
            raw(b"x-forwarded-host"),
            raw(b"x-forwarded-port"),
            raw(b"x-forwarded-proto"),
        )
        head = self._heads.get(key)
        if head is None:
            head = self._decide(scope)
            if head.redirect is None:
                # A redirect names the request's own path and query (a
                # Gemini client's ``?key=``): made anew for each request,
                # never answered to the next head like it.
                self._heads[key] = head
        return head

    def clear(self) -> None:
        """Forget every head (the settings they were decided by changed)."""
        self._heads.clear()

    def _decide(self, scope: Scope) -> Head:
        request = ASGIRequest({**scope, "method": "GET"}, BytesIO())
        try:
            request.get_host()
        except DisallowedHost:
            return Head(request._get_raw_host(), None, ())  # type: ignore[attr-defined]
        redirect = self._answers.redirect(request)
        if redirect is not None:
            return Head(None, redirect, ())
        response = HttpResponse()
        self._answers.finish(request, response)
        return Head(
            None,
            None,
            tuple(
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in response.items()
                if name.lower() != "content-type"
            ),
        )
