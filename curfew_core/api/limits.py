"""The API's limits and early refusals for the guard in front of Django
(``curfew_core.asgi_limits``), in the API's JSON error shape."""

from __future__ import annotations

from django.conf import settings
from django.http.response import HttpResponseBase

from curfew_core.api.auth import rate_limited, unavailable
from curfew_core.api.errors import ApiError
from curfew_core.asgi_limits import Door


def _unauthorized(missing: bool) -> HttpResponseBase:
    message = "missing bearer token" if missing else "unknown or revoked token"
    return ApiError(401, "unauthorized", message).response()


def _too_large(limit: int) -> HttpResponseBase:
    return ApiError(
        413,
        "too_large",
        f"the request body must be at most {limit} bytes",
        {"body": "is too large for a settings or verdict request"},
    ).response()


DOOR = Door(
    prefix="/api/v1/",
    max_body=lambda: settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    public=frozenset({"/api/v1/openapi.json"}),
    unauthorized=_unauthorized,
    too_large=_too_large,
    unavailable=unavailable,
    rate_limited=rate_limited,
)
