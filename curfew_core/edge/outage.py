"""Every door answers a failure in its own shape: the safety net under Django's views.

The edge (``edge.app``) answers its own doors' failures; this module is for
what Django serves (pages, the admin, the capsule, the probes): a cache or
database outage raised anywhere in a view becomes a 503 with ``Retry-After``
in the shape of the door it hit (``OutageMiddleware``), and any other
uncaught exception, or one raised by a middleware after the view, is
answered by ``server_error`` (``handler500``) in the same shapes, never
Django's bare HTML, debug off or on. A path Django does not know, a
refusal (``PermissionDenied``) or a bad request on a door Django serves in
the API's shape (``/api/`` outside the edge's routes, the probes, the
capsule's state) is answered in that shape too (``not_found``,
``forbidden``, ``bad_request``: ``handler404`` …); on the pages, by the
site's own 404, 403 and 400 pages.

Which shape is the door's dialect, from the one door table (``edge.doors``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views import defaults

from curfew_core.edge.dialects import OUTAGES, PAGE
from curfew_core.edge.doors import DOORS
from curfew_core.edge.http_headers import EMBED_POLICY
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.outage")
#: An outage is said once, not per 503 answered (``store.outage_log``).
_storage_down = Notice(log, logging.ERROR)


def door_answer(request: HttpRequest, status: int) -> HttpResponse:
    """A 503 (outage) or a 500 (anything else) in the shape of ``request``'s door."""
    path = request.path_info
    dialect = DOORS.door_for(path).dialect
    response = dialect.unavailable() if status == 503 else dialect.failed()
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
    return door_answer(request, 503)


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
        _storage_down.failed(
            "%s %s: storage unavailable (%s: %s)",
            request.method,
            request.path,
            type(exception).__name__,
            exception,
        )
        response = unavailable(request)
        response._has_been_logged = True  # type: ignore[attr-defined]  # said above, once
        return response


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """``handler500``: an uncaught exception, answered in the door's shape.

    Also reached for exceptions raised by middleware (outside ``process_exception``),
    so an outage there is still a 503 with ``Retry-After``.
    """
    exception = sys.exc_info()[1]
    if isinstance(exception, OUTAGES):
        _storage_down.failed(
            "%s %s: storage unavailable", request.method, request.path, exc_info=True
        )
        response = unavailable(request)
        response._has_been_logged = True  # type: ignore[attr-defined]  # said above, once
        return response
    return door_answer(request, 500)


def _door_refusal(
    status: int, message: str, code: str, page: Callable[[HttpRequest, Exception], HttpResponse]
) -> Callable[[HttpRequest, Exception], HttpResponse]:
    """A ``handler4xx``: ``page`` (Django's view of the site's template) on the
    pages door; elsewhere the door's own refusal."""

    def handler(request: HttpRequest, exception: Exception) -> HttpResponse:
        dialect = DOORS.door_for(request.path_info).dialect
        if dialect is PAGE:
            return page(request, exception)
        return dialect.refusal(status, message, code=code)

    return handler


#: ``handler404``, ``handler403`` and ``handler400``, in the shape of the request's door.
not_found = _door_refusal(404, "no such endpoint", "not_found", defaults.page_not_found)
forbidden = _door_refusal(403, "not allowed", "forbidden", defaults.permission_denied)
bad_request = _door_refusal(400, "bad request", "invalid_request", defaults.bad_request)
