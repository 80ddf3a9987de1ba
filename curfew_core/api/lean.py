"""The verdict API's hot routes as a plain ASGI app beside Django's.

A gateway asks ``POST /api/v1/verdict`` before every model call it has not
cached, and a status display polls ``GET /api/v1/state``: the service's hot
path. Through Django a bearer-token JSON request walked the session, locale,
CSRF, auth, messages and htmx middleware it never uses, and, being a sync
view under ASGI, started a thread per request (measured: 0.73x the
throughput of a trivial Django JSON view). Here the two routes are answered
by :class:`LeanApi` in front of Django, with the same pieces, not a second
implementation:

- the token check, the per-token throttle, body parsing and validation,
  the engine and the error shapes are the API's own (``api.auth``,
  ``api.errors``, ``api.views``, ``selectors``, ``throttle``);
- **warm** (the token's check and the user's rows in the cache and fresh):
  one cache read (``async_cache.get_many``: one ``MGET`` on Redis) and the
  throttle's count (``throttle.ahit_token_rate``) on the event loop, then the
  engine: no thread, no database;
- anything else (a cold or stale entry, an unknown token, a backend that
  cannot be read from the loop) takes the sync path Django's views take
  (``auth.with_token`` and the same selectors) in a thread, with Django's
  request signals around it, as Django's handler runs a sync view.

What the site's middleware did that still applies to an API answer is done
by Django's own code, once per distinct request head (``asgi_front.Fronts``,
shared with the proxy's lean route): the ``Host`` check and the HTTPS
redirect (a request that fails either is handed to Django, which answers it
as before), the security headers, and a policy that allows nothing.
``curfew_site.asgi`` mounts it inside ``BodyGuard`` (body limits stay first).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponse
from django.utils import timezone
from redis.exceptions import RedisError

from curfew_core import throttle
from curfew_core.api.auth import rate_limited, unavailable, with_token
from curfew_core.api.errors import ApiError, json_object_from
from curfew_core.api.views import allowed_methods, checked_verdict_request, verdict_body
from curfew_core.asgi_front import Fronts, Headers, converted, read_body, send_answer
from curfew_core.asgi_limits import scope_bearer
from curfew_core.asgi_threads import in_request_thread
from curfew_core.hot_path import warm_inputs
from curfew_core.outage import FAILED_MESSAGE
from curfew_core.selectors.bundles import UserBundle, bundle_for
from curfew_core.selectors.tokens import TokenIdentity
from curfew_core.selectors.verdicts import bundle_state_json

log = logging.getLogger("curfew.api")

Scope = dict[str, Any]
ASGIApp = Callable[..., Awaitable[None]]

VERDICT = "/api/v1/verdict"
STATE = "/api/v1/state"
#: The routes answered here and their methods (the Django views' own, ``allow``).
ROUTES = {VERDICT: ("POST",), STATE: ("GET",)}
JSON = (b"content-type", b"application/json")


class LeanApi:
    """``ROUTES`` answered here; every other request goes to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._front = Fronts()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] not in ROUTES:
            await self.app(scope, receive, send)
            return
        front = self._front(scope)
        if front.to_django:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return  # the client went away: nobody to answer
        await send_answer(send, front, *await self._answer(scope, body))

    # -- the answer -----------------------------------------------------------------
    async def _answer(self, scope: Scope, body: bytes) -> tuple[int, Headers, bytes]:
        path = scope["path"]
        methods = ROUTES[path]
        if scope["method"] not in methods:
            return converted(allowed_methods(scope["method"], methods))
        raw = scope_bearer(scope)
        address = throttle.scope_address(scope)
        try:
            warm = await self._warm(path, raw, address, body)
        except ApiError as exc:
            return converted(exc.response())
        except throttle.Throttled as exc:
            return converted(rate_limited(exc.refusal))
        except (DatabaseError, RedisError):
            log.exception("API: storage unavailable")
            return converted(unavailable())
        except Exception:
            log.exception("API: %s failed", path)
            return converted(ApiError(500, "internal_error", FAILED_MESSAGE).response())
        if warm is not None:
            return 200, [JSON], warm
        return converted(await _in_thread(_sync_answer, path, raw, address, body))

    async def _warm(self, path: str, raw: str | None, address: str, body: bytes) -> bytes | None:
        """The answer from the cache alone, on the event loop (``hot_path``);
        ``None``: take the sync path (nothing was counted or changed then)."""
        warm = await warm_inputs(raw, kind="api", in_thread=_in_thread)
        if warm is None:
            return None
        return _body(path, body, warm.bundle, warm.identity.token_id)


def _body(path: str, body: bytes, bundle: UserBundle, token_id: int) -> bytes:
    """The route's answer for a known token and its user's bundle (the body
    is checked first: a 400 or 422 names the field)."""
    if path == VERDICT:
        asked = checked_verdict_request(json_object_from(body, allow_empty=True))
        return verdict_body(bundle, asked, now=timezone.now(), token_id=token_id)
    return bundle_state_json(bundle, now=timezone.now())


def _sync_answer(path: str, raw: str | None, address: str, body: bytes) -> HttpResponse:
    """The sync path: what Django's view does, from the token on."""

    def answer(identity: TokenIdentity) -> HttpResponse:
        return HttpResponse(
            _body(path, body, bundle_for(identity.user_id), identity.token_id),
            content_type="application/json",
        )

    return with_token(raw, address, answer)


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    return await in_request_thread(LeanApi, function, *args)
