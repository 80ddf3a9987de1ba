"""What every proxy door shares: the scope headers, the body, the verdict in
one trip, the labels, the error answers (OpenAI's shape unless a door gives its
own), the guard around each view and the per-token upstream slots.

Every answer, errors included, says what the curfew did in ``X-Curfew-State``
and ``X-Curfew-Action`` (``unknown`` / ``none`` when it could not decide). The
doors themselves are ``chat``, ``responses``, ``passthrough`` and ``messages``;
the sequence they follow is ``calls``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from curfew_client.openai_shapes import error_body
from curfew_client.scope import Scope, ScopeHeaderError, scope_from_headers
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import RedisError

from curfew_core import throttle
from curfew_core.engine import Action, RequestContext, Verdict
from curfew_core.hot_path import Warm, warm_inputs
from curfew_core.outage import RETRY_AFTER_SECONDS
from curfew_core.proxy import upstream
from curfew_core.proxy.concurrency import slots
from curfew_core.selectors.tokens import TokenIdentity
from curfew_core.selectors.verdicts import decide_for, verdict_for

log = logging.getLogger("curfew.proxy")
ProxyView = Callable[..., Coroutine[Any, Any, HttpResponseBase]]

#: Chat bodies carry whole conversations and images; Django's 2.5 MB form limit
#: is not meant for them. ASGI has already spooled the body by the time we read it.
MAX_BODY_BYTES = 64 * 1024 * 1024


class BadRequest(ValueError):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def parse_scope(headers: Mapping[str, str]) -> Scope:
    """Who is asking, from ``X-Curfew-Session`` / ``-Purpose`` / ``-Subagent``
    (``headers``: case-insensitive, Django's ``request.headers`` or the lean
    route's): the client's own reading (``curfew_client.scope``), so the proxy
    and every gateway take the same headers; a bad one is a ``BadRequest``
    naming it."""
    try:
        return scope_from_headers(headers)
    except ScopeHeaderError as exc:
        raise BadRequest(str(exc), exc.header) from None


def check_length(declared: str | None) -> None:
    """A ``BadRequest`` unless ``declared`` (the ``Content-Length``, if any)
    is a length within ``MAX_BODY_BYTES``."""
    length = declared or "0"
    # ASCII digits only: "²".isdigit() is true and int("²") raises.
    if not (length.isascii() and length.isdigit()) or int(length) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body must be at most {MAX_BODY_BYTES // 2**20} MB")


def _raw_body(request: HttpRequest) -> bytes:
    if hasattr(request, "_body"):
        return request.body
    check_length(request.META.get("CONTENT_LENGTH"))
    return request.read(MAX_BODY_BYTES + 1)


@dataclass(frozen=True, slots=True)
class Judged:
    token_id: int
    verdict: Verdict
    #: Whose token it is: the ledger's entry then needs no lookup by token.
    user_id: int


def _judge(raw_token: str | None, context: RequestContext, address: str) -> Judged | None:
    """Token and verdict in one trip to the sync world (cold, or not readable
    from the event loop)."""
    identity = throttle.identify_throttled(raw_token, kind="api", address=address)
    if identity is None:
        return None
    verdict, _ = verdict_for(user_id=identity.user_id, now=timezone.now(), request=context)
    return Judged(identity.token_id, verdict, identity.user_id)


async def _in_thread(function: Callable[..., Any], *args: Any) -> Any:
    # The request's own thread (Django's handler gave it one).
    return await sync_to_async(function)(*args)


def _decided(warm: Warm, context: RequestContext) -> Judged:
    verdict, _ = decide_for(warm.bundle, now=timezone.now(), request=context)
    return Judged(warm.identity.token_id, verdict, warm.identity.user_id)


async def judge(raw_token: str | None, context: RequestContext, address: str) -> Judged | None:
    """The live token and its verdict: warm, on the event loop with no thread
    (``hot_path``, as the verdict API's lean route); else the sync path."""
    warm = await warm_inputs(raw_token, kind="api", in_thread=_in_thread)
    if warm is None:
        return await sync_to_async(_judge)(raw_token, context, address)
    return _decided(warm, context)


@dataclass(frozen=True, slots=True)
class Warmly:
    """A verdict judged warm, and whose token it is (to count the rate)."""

    judged: Judged
    identity: TokenIdentity


#: Where the lean route hands Django's route the verdict it judged (warm,
#: uncounted) for a call it does not answer itself, so a passed or clamped
#: call is judged once (an ASGI scope key: only the server sets those).
JUDGED_AHEAD = "curfew.judged_ahead"


def judged_ahead(request: HttpRequest) -> Warmly | None:
    """The lean route's judgment of this call, if it made one."""
    scope = getattr(request, "scope", None)
    ahead = scope.get(JUDGED_AHEAD) if isinstance(scope, dict) else None
    return ahead if isinstance(ahead, Warmly) else None


class _Cold(Exception):
    """Warm judging needed a thread (a stale row, the once-a-minute stamp)."""


async def _no_thread(function: Callable[..., Any], *args: Any) -> Any:
    raise _Cold


async def judge_warm(raw_token: str | None, context: RequestContext) -> Warmly | None:
    """``judge`` from the cache alone, with no thread and **nothing counted**
    (the proxy's lean route: it counts with ``hot_path.charge`` only once it
    answers the call itself); ``None``: anything else, for ``judge`` to do."""
    try:
        warm = await warm_inputs(raw_token, kind="api", in_thread=_no_thread, count=False)
    except _Cold:
        return None
    return None if warm is None else Warmly(_decided(warm, context), warm.identity)


def labelled(response: HttpResponseBase, verdict: Verdict | None) -> HttpResponseBase:
    response["X-Curfew-State"] = verdict.state.value if verdict else "unknown"
    response["X-Curfew-Action"] = verdict.action.value if verdict else "none"
    if verdict is not None and verdict.action is Action.CLAMP and verdict.max_tokens is not None:
        response["X-Curfew-Max-Tokens"] = str(verdict.max_tokens)
    return response


def openai_error(
    status: int,
    message: str,
    *,
    code: str,
    param: str | None = None,
    type: str = "invalid_request_error",
) -> HttpResponse:
    response = HttpResponse(
        json.dumps(error_body(message, type=type, code=code, param=param), ensure_ascii=False),
        status=status,
        content_type="application/json",
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="curfew"'
    return response


def unauthorized(raw_token: str | None) -> HttpResponseBase:
    message = (
        "missing bearer token: use a curfew API token as the api_key"
        if raw_token is None
        else "unknown or revoked curfew API token"
    )
    return labelled(openai_error(401, message, code="invalid_api_key"), None)


class ErrorAnswer(Protocol):
    """A door's error answer in its protocol's shape (``openai_error`` here,
    ``messages.anthropic_error`` for the Messages door)."""

    def __call__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        type: str = "invalid_request_error",
    ) -> HttpResponse: ...


def rate_limited(refusal: throttle.Refusal, error: ErrorAnswer = openai_error) -> HttpResponse:
    # OpenAI's own 429 shape, so SDKs raise RateLimitError and honour Retry-After.
    response = error(429, refusal.message, code="rate_limit_exceeded", type="requests")
    response["Retry-After"] = str(refusal.retry_after)
    return response


def _not_allowed(allowed: str) -> HttpResponseBase:
    response = openai_error(405, f"use {allowed}", code="method_not_allowed")
    response["Allow"] = allowed
    return labelled(response, None)


def unavailable(error: ErrorAnswer = openai_error) -> HttpResponseBase:
    """The outage answer: 503, OpenAI's shape (or ``error``'s), ``Retry-After``, the labels."""
    response = error(
        503,
        "the curfew proxy cannot reach its storage; retry shortly",
        code="unavailable",
        type="server_error",
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return labelled(response, None)


def failed(exc: Exception, error: ErrorAnswer, method: str, path: str) -> HttpResponseBase:
    """The answer when a door raised ``exc`` (from inside an ``except``): a
    throttle's 429, an outage's 503, anything else a 500, in ``error``'s shape."""
    if isinstance(exc, throttle.Throttled):
        return labelled(rate_limited(exc.refusal, error), None)
    if isinstance(exc, (DatabaseError, RedisError)):
        # Storage is down: a gateway or SDK should retry, not report a bug.
        log.exception("proxy: storage unavailable on %s %s", method, path)
        return unavailable(error)
    log.exception("proxy failed on %s %s", method, path)
    return labelled(
        error(
            500, "the curfew proxy failed; see its log", code="internal_error", type="server_error"
        ),
        None,
    )


def labelled_always(view: ProxyView, error: ErrorAnswer = openai_error) -> ProxyView:
    """An unexpected failure still answers in OpenAI's shape (or ``error``'s), with the headers."""

    @wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return await view(request, *args, **kwargs)
        except Exception as exc:
            return failed(exc, error, request.method or "", request.path)

    return guarded


#: Seconds a token over its share of upstream calls is told to wait.
BUSY_TOKEN_RETRY_AFTER = 1


async def _forward(
    token_id: int,
    method: str,
    path: tuple[str, ...],
    content: bytes | None = None,
    *,
    provider: upstream.Provider = upstream.OPENAI,
    headers: Mapping[str, str] | None = None,
) -> HttpResponseBase:
    """Forward, holding one of the token's upstream slots until the answer ends;
    a token that holds all of its share gets a 429 at once instead (in the
    upstream protocol's shape: the client speaks it)."""
    slot = slots.take(token_id, int(settings.CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN))
    if slot is None:
        limit = settings.CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN
        refused = upstream.gateway_error(
            429,
            f"this token already has {limit} requests open upstream; retry when one ends",
            "too_many_concurrent_requests",
            type="rate_limit_error",
            provider=provider,
        )
        refused["Retry-After"] = str(BUSY_TOKEN_RETRY_AFTER)
        return refused
    return await upstream.forward(
        method, path, content, release=slot.release, provider=provider, headers=headers
    )


@csrf_exempt
async def not_proxied(request: HttpRequest, rest: str) -> HttpResponseBase:
    """Anything else under ``/v1/``: say what the proxy serves, in OpenAI's shape."""
    return labelled(
        openai_error(
            404,
            f"/v1/{rest} is not proxied; the curfew proxy serves POST /v1/chat/completions, "
            "POST /v1/responses, GET and DELETE /v1/responses/{id}, POST /v1/embeddings, "
            "POST /v1/completions and GET /v1/models",
            code="not_found",
        ),
        None,
    )
