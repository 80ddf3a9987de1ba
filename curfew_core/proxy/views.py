"""The OpenAI-compatible doors: authenticate, take the verdict in-process, act.

- short-circuit: the canned reply (streamed or not, as asked), zero usage, and
  nothing sent upstream;
- clamp: forwarded with the clamped budget and the persona;
- pass (on duty, exempt, dry run): forwarded byte for byte.

Every answer, errors included, says what the curfew did in ``X-Curfew-State``
and ``X-Curfew-Action`` (``unknown`` / ``none`` when it could not decide).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import wraps
from typing import Any
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from curfew_core import throttle
from curfew_core.api.auth import bearer
from curfew_core.engine import Action, RequestContext, Verdict
from curfew_core.openai_shapes import (
    apply_verdict,
    error_body,
    short_circuit_body,
)
from curfew_core.proxy import upstream
from curfew_core.selectors.verdicts import verdict_for

log = logging.getLogger("curfew.proxy")
ProxyView = Callable[..., Coroutine[Any, Any, HttpResponseBase]]

MAX_HEADER_TEXT = 200
#: Chat bodies carry whole conversations and images; Django's 2.5 MB form limit
#: is not meant for them. ASGI has already spooled the body by the time we read it.
MAX_BODY_BYTES = 64 * 1024 * 1024
_TRUE = {"1", "true", "yes"}
_FALSE = {"", "0", "false", "no"}


class BadRequest(ValueError):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class Scope:
    session_id: str | None
    purpose: str | None
    subagent: bool


def _header_text(request: HttpRequest, name: str) -> str | None:
    value = request.headers.get(name, "").strip()
    if len(value) > MAX_HEADER_TEXT:
        raise BadRequest(f"{name} must be at most {MAX_HEADER_TEXT} characters", name)
    return value or None


def parse_scope(request: HttpRequest) -> Scope:
    """Who is asking, from ``X-Curfew-Session`` / ``-Purpose`` / ``-Subagent``."""
    subagent = request.headers.get("X-Curfew-Subagent", "").strip().lower()
    if subagent not in _TRUE | _FALSE:
        raise BadRequest(
            f"X-Curfew-Subagent must be 1 or 0 (true/false), not {subagent!r}", "X-Curfew-Subagent"
        )
    return Scope(
        session_id=_header_text(request, "X-Curfew-Session"),
        purpose=_header_text(request, "X-Curfew-Purpose"),
        subagent=subagent in _TRUE,
    )


def _raw_body(request: HttpRequest) -> bytes:
    if hasattr(request, "_body"):
        return request.body
    length = request.META.get("CONTENT_LENGTH") or "0"
    if not length.isdigit() or int(length) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body must be at most {MAX_BODY_BYTES // 2**20} MB")
    return request.read(MAX_BODY_BYTES + 1)


def parse_chat_body(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise BadRequest("the request body is empty; send a chat completions JSON object")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(body).__name__}")
    return body


def _judge(raw_token: str | None, context: RequestContext, address: str) -> Verdict | None:
    """Token and verdict in one trip to the sync world (both cached when warm)."""
    identity = throttle.identify_throttled(raw_token, kind="api", address=address)
    if identity is None:
        return None
    verdict, _ = verdict_for(user_id=identity.user_id, now=timezone.now(), request=context)
    return verdict


judge = sync_to_async(_judge)


def _labelled(response: HttpResponseBase, verdict: Verdict | None) -> HttpResponseBase:
    response["X-Curfew-State"] = verdict.state.value if verdict else "unknown"
    response["X-Curfew-Action"] = verdict.action.value if verdict else "none"
    if verdict is not None and verdict.action is Action.CLAMP and verdict.max_tokens is not None:
        response["X-Curfew-Max-Tokens"] = str(verdict.max_tokens)
    return response


def _error(
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


def _unauthorized(raw_token: str | None) -> HttpResponseBase:
    message = (
        "missing bearer token: use a curfew API token as the api_key"
        if raw_token is None
        else "unknown or revoked curfew API token"
    )
    return _labelled(_error(401, message, code="invalid_api_key"), None)


def _rate_limited(refusal: throttle.Refusal) -> HttpResponse:
    # OpenAI's own 429 shape, so SDKs raise RateLimitError and honour Retry-After.
    response = _error(429, refusal.message, code="rate_limit_exceeded", type="requests")
    response["Retry-After"] = str(refusal.retry_after)
    return response


def _not_allowed(allowed: str) -> HttpResponseBase:
    response = _error(405, f"use {allowed}", code="method_not_allowed")
    response["Allow"] = allowed
    return _labelled(response, None)


def labelled_always(view: ProxyView) -> ProxyView:
    """An unexpected failure still answers in OpenAI's shape, with the headers."""

    @wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return await view(request, *args, **kwargs)
        except throttle.Throttled as exc:
            return _labelled(_rate_limited(exc.refusal), None)
        except Exception:
            log.exception("proxy failed on %s %s", request.method, request.path)
            return _labelled(
                _error(
                    500,
                    "the curfew proxy failed; see its log",
                    code="internal_error",
                    type="server_error",
                ),
                None,
            )

    return guarded


@csrf_exempt
@labelled_always
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return _not_allowed("POST")
    raw_token = bearer(request)
    problem: BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = Scope(None, None, False)
    try:
        scope = parse_scope(request)
        raw = _raw_body(request)
        body = parse_chat_body(raw)
    except BadRequest as exc:
        problem = exc
    # The budget is left out on purpose: the verdict then carries the curve's
    # ceiling, and apply_verdict clamps each budget the client named against it
    # on its own (a client may send both names with different values).
    context = RequestContext(
        session_id=scope.session_id, purpose=scope.purpose, subagent=scope.subagent
    )
    verdict = await judge(raw_token, context, throttle.client_address(request))
    if verdict is None:
        return _unauthorized(raw_token)
    if problem is not None:
        error = _error(400, str(problem), code="invalid_request", param=problem.param)
        response = _labelled(error, verdict)
        response["X-Curfew-Action"] = "none"
        return response

    if verdict.action is Action.SHORT_CIRCUIT and verdict.reply is not None:
        payload, content_type = short_circuit_body(body, verdict.reply)
        answer = HttpResponse(payload, content_type=content_type)
        answer["Cache-Control"] = "no-cache"
        return _labelled(answer, verdict)
    if verdict.action is Action.PASS:
        # Untouched means the very bytes the client sent.
        content = raw
    else:
        content = json.dumps(apply_verdict(body, verdict), ensure_ascii=False).encode()
    return _labelled(await upstream.forward("POST", "chat/completions", content), verdict)


@csrf_exempt
@labelled_always
async def models(request: HttpRequest, model: str | None = None) -> HttpResponseBase:
    """``GET /v1/models[/<id>]``, forwarded: listing models is not a model call."""
    if request.method != "GET":
        return _not_allowed("GET")
    raw_token = bearer(request)
    try:
        scope = parse_scope(request)
    except BadRequest:
        scope = Scope(None, None, False)
    verdict = await judge(
        raw_token,
        RequestContext(scope.session_id, scope.purpose, scope.subagent),
        throttle.client_address(request),
    )
    if verdict is None:
        return _unauthorized(raw_token)
    path = "models" if model is None else f"models/{quote(model, safe='/:@')}"
    response = await upstream.forward("GET", path)
    response = _labelled(response, verdict)
    response["X-Curfew-Action"] = Action.PASS.value
    return response


@csrf_exempt
async def not_proxied(request: HttpRequest, rest: str) -> HttpResponseBase:
    """Anything else under ``/v1/``: say what the proxy serves, in OpenAI's shape."""
    return _labelled(
        _error(
            404,
            f"/v1/{rest} is not proxied; the curfew proxy serves POST /v1/chat/completions "
            "and GET /v1/models",
            code="not_found",
        ),
        None,
    )
