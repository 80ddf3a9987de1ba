"""The proxy's limits and early refusals for the guard in front of Django
(``curfew_core.asgi_limits``), in the client's protocol (OpenAI error JSON, or
Anthropic's at ``/v1/messages``)."""

from __future__ import annotations

from django.http.response import HttpResponseBase

from curfew_core.asgi_limits import Door
from curfew_core.proxy import messages, views


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

#: ``/v1/messages`` speaks Anthropic's protocol: its refusals in that shape, and
#: the token read from ``x-api-key`` too. Listed before ``DOOR`` (a longer prefix).
MESSAGES_DOOR = Door(
    prefix="/v1/messages",
    max_body=lambda: views.MAX_BODY_BYTES,
    public=frozenset(),
    unauthorized=lambda missing: messages.unauthorized(None if missing else ""),
    too_large=messages.too_large,
    unavailable=lambda: views.unavailable(messages.anthropic_error),
    rate_limited=lambda refusal: views.labelled(
        views.rate_limited(refusal, messages.anthropic_error), None
    ),
    takes_api_key=True,
)
