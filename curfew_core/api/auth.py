"""Bearer-token authentication for the JSON API."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import RedisError

from curfew_core import throttle
from curfew_core.api.errors import ApiError
from curfew_core.edge import own_name
from curfew_core.edge.dialects import API
from curfew_core.edge.http_headers import bearer
from curfew_core.selectors.tokens import GATEWAY, TokenIdentity
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.api")
#: A storage outage is said once (with its traceback), not per 503 answered.
_storage_down = Notice(log, logging.ERROR)
P = ParamSpec("P")
View = Callable[Concatenate[HttpRequest, TokenIdentity, P], HttpResponse]


def token_required(view: View[P]) -> Callable[..., HttpResponse]:
    """Authenticate by ``Authorization: Bearer <API token>``; errors become JSON.

    CSRF does not apply: a bearer header is never sent by a browser on its own.
    """

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return with_token(
            bearer(request),
            throttle.client_address(request),
            lambda identity: view(request, identity, *args, **kwargs),
            member_header=request.headers.get("X-Curfew-User"),
        )

    return wrapper


def with_gateway_token(
    raw: str | None,
    address: str,
    answer: Callable[[TokenIdentity], HttpResponse],
    *,
    member_header: str | None = None,
) -> HttpResponse:
    """``with_token`` that also takes a team key (the team API reads with one)."""
    return with_token(raw, address, answer, kind=GATEWAY, member_header=member_header)


def with_token(
    raw: str | None,
    address: str,
    answer: Callable[[TokenIdentity], HttpResponse],
    *,
    kind: str = "api",
    member_header: str | None = None,
) -> HttpResponse:
    """``answer`` for the live API token ``raw`` (sent from ``address``), or the
    API's refusal: 401 without a live token, 429 over a throttle, 503 when
    storage is down; an ``ApiError`` raised by ``answer`` is its response.
    A personal token's ``member_header`` (``X-Curfew-User``) must name its own
    person (``edge.own_name``)."""
    try:
        identity = throttle.identify_throttled(raw, kind=kind, address=address)
        if identity is None:
            raise ApiError(
                401,
                "unauthorized",
                "missing bearer token" if raw is None else "unknown or revoked token",
            )
        if identity.team_id is None:
            refused = own_name.check(member_header, identity.user_id)
            if refused is not None:
                raise ApiError(refused.status, refused.code, refused.message)
        return answer(identity)
    except ApiError as exc:
        return exc.response()
    except throttle.Throttled as exc:
        return API.rate_limited(exc.refusal)
    except (DatabaseError, RedisError):
        # The cache or the database is down: say so in the API's shape, so
        # a gateway's outage policy (fail open/closed/last known) can act.
        _storage_down.failed("API: storage unavailable", exc_info=True)
        response = API.unavailable()
        response._has_been_logged = True  # type: ignore[attr-defined]  # said above, once
        return response
