"""Every door answers a failure in its own shape: the safety net under the views.

A door that knows its protocol answers its own errors (the API's
``token_required``, the proxy's helpers). This module is for whatever escapes
them: a cache or database outage raised anywhere in a view becomes a 503 with
``Retry-After`` in the shape of the door it hit (``OutageMiddleware``), and any
other uncaught exception, or one raised by a middleware after the view, is
answered by ``server_error`` (``handler500``) in the same shapes, never
Django's bare HTML, debug off or on.

Doors are told apart by path, declared once in ``DOORS``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from curfew_client import anthropic_shapes
from curfew_client.openai_shapes import error_body
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.template import loader
from redis.exceptions import RedisError

from curfew_core.http_headers import EMBED_POLICY
from curfew_core.schema.errors import api_error_body

log = logging.getLogger("curfew.outage")

#: Storage or network below us went away: retrying soon may well work.
OUTAGES: tuple[type[BaseException], ...] = (
    RedisError,
    DatabaseError,
    ConnectionError,
    TimeoutError,
)
#: Seconds a client should wait before retrying an outage (as the API says).
RETRY_AFTER_SECONDS = 5

UNAVAILABLE_MESSAGE = "storage unavailable; retry shortly"
FAILED_MESSAGE = "internal error; the server could not answer this request"


def _api_shape(status: int, code: str, message: str) -> HttpResponse:
    # The API's one error shape (``curfew_core.schema.errors``).
    return JsonResponse(api_error_body(code, message), status=status)


def _openai_shape(status: int, code: str, message: str) -> HttpResponse:
    # The proxy speaks OpenAI's protocol, so SDKs raise their usual error (and retry).
    response = HttpResponse(
        json.dumps(error_body(message, type="server_error", code=code)),
        status=status,
        content_type="application/json",
    )
    # The proxy labels every answer; this one could not decide anything.
    response["X-Curfew-State"] = "unknown"
    response["X-Curfew-Action"] = "none"
    return response


def _anthropic_shape(status: int, code: str, message: str) -> HttpResponse:
    # The Messages door speaks Anthropic's protocol: its SDK raises (and retries) as usual.
    body = anthropic_shapes.error_body(message, type=anthropic_shapes.error_type(status))
    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    response["X-Curfew-State"] = "unknown"
    response["X-Curfew-Action"] = "none"
    return response


def _page_shape(status: int, code: str, message: str) -> HttpResponse:
    # Standalone templates (no ``request.user``, no database): the page must
    # render while the storage it would ask is down. The app's own stylesheet.
    template = "503.html" if status == 503 else "500.html"
    return HttpResponse(loader.render_to_string(template), status=status)


@dataclass(frozen=True, slots=True)
class Door:
    prefix: str
    answer: Callable[[int, str, str], HttpResponse]


#: First match wins; everything else is a page (sign-in, settings, the iframe capsule).
DOORS: tuple[Door, ...] = (
    Door("/api/", _api_shape),
    Door("/v1/messages", _anthropic_shape),
    Door("/v1/", _openai_shape),
    Door("/embed/state", _api_shape),
    Door("/healthz", _api_shape),
    Door("/readyz", _api_shape),
)


def door_answer(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    """``status`` in the shape of the door ``request`` came through."""
    path = request.path_info
    answer = next((door.answer for door in DOORS if path.startswith(door.prefix)), _page_shape)
    response = answer(status, code, message)
    response["Cache-Control"] = "no-store"
    if status == 503:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    if path.startswith("/embed/state") and "token" in request.GET:
        # Token polling comes from other sites' pages: let the capsule read the 503
        # (and back off as told) rather than see an opaque network error.
        response["Access-Control-Allow-Origin"] = "*"
    if path.startswith("/embed/capsule/"):
        # The iframe capsule is framed by other sites: its error page must show there too.
        response["Content-Security-Policy"] = EMBED_POLICY
        response.xframe_options_exempt = True
    return response


def unavailable(request: HttpRequest) -> HttpResponse:
    return door_answer(request, 503, "unavailable", UNAVAILABLE_MESSAGE)


class OutageMiddleware:
    """A cache or database outage in any view is a 503 in that door's shape.

    Sync-only like the CSP middleware (no extra thread hop per request);
    ``process_exception`` runs for async views too.
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OUTAGES):
            return None  # a real bug: Django's handling, then ``server_error``
        log.error(
            "%s %s: storage unavailable (%s: %s)",
            request.method,
            request.path,
            type(exception).__name__,
            exception,
        )
        return unavailable(request)


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """``handler500``: an uncaught exception, answered in the door's shape.

    Also reached for exceptions raised by middleware (outside ``process_exception``),
    so an outage there is still a 503 with ``Retry-After``.
    """
    exception = sys.exc_info()[1]
    if isinstance(exception, OUTAGES):
        return unavailable(request)
    return door_answer(request, 500, "internal_error", FAILED_MESSAGE)
