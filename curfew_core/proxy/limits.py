"""The proxy's limits and early refusals for the guard in front of Django
(``curfew_core.asgi_limits``), in the client's protocol (OpenAI error JSON)."""

from __future__ import annotations

from django.http.response import HttpResponseBase

from curfew_core.asgi_limits import Door
from curfew_core.proxy import views


def _too_large(limit: int) -> HttpResponseBase:
    response = views.openai_error(
        413,
        f"the request body must be at most {limit // 2**20} MB",
        code="request_too_large",
    )
    return views.labelled(response, None)


DOOR = Door(
    prefix="/v1/",
    max_body=lambda: views.MAX_BODY_BYTES,
    public=frozenset(),
    # The proxy's own 401 names a missing token or an unknown one.
    unauthorized=lambda missing: views.unauthorized(None if missing else ""),
    too_large=_too_large,
    unavailable=views.unavailable,
    rate_limited=lambda refusal: views.labelled(views.rate_limited(refusal), None),
)
