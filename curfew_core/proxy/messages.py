"""The Anthropic Messages door: ``POST /v1/messages`` and its ``count_tokens``.

Point Anthropic's SDK (or a Claude-style agent) at the server's root with a
curfew token as the key. The door acts as the chat door does, in Anthropic's
protocol:

- short-circuit: the canned reply as a ``message`` (or its event stream),
  zero usage, nothing sent upstream;
- clamp: forwarded with ``max_tokens`` clamped, the persona in ``system``,
  thinking kept within the clamp, tools dropped when denied;
- pass (on duty, exempt, dry run): forwarded byte for byte.

The token comes as ``x-api-key`` or ``Authorization: Bearer``. Every answer
says what the curfew did (``X-Curfew-State`` / ``X-Curfew-Action``) and every
error is in Anthropic's shape, so its SDK raises its usual exceptions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from curfew_client import anthropic_shapes
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from curfew_core import throttle
from curfew_core.engine import Action, RequestContext
from curfew_core.http_headers import api_key_or_bearer
from curfew_core.proxy import bodies, upstream
from curfew_core.proxy.views import (
    BadRequest,
    ProxyView,
    Scope,
    _forward,
    _raw_body,
    judge,
    labelled,
    labelled_always,
    parse_scope,
)

#: The protocol version sent upstream when the client named none (or an odd one).
DEFAULT_VERSION = "2023-06-01"
#: What the client's protocol headers must look like to be passed on: a date,
#: and a comma-separated list of beta names. Anything else stays here.
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")
_BETAS = re.compile(r"[A-Za-z0-9._-]{1,100}(?: *, *[A-Za-z0-9._-]{1,100}){0,31}")


def anthropic_error(
    status: int,
    message: str,
    *,
    code: str,
    param: str | None = None,
    type: str = "invalid_request_error",
) -> HttpResponse:
    """An error in Anthropic's shape; its ``type`` follows the status (``code``,
    ``param`` and the OpenAI ``type`` have no place in it)."""
    body = anthropic_shapes.error_body(message, type=anthropic_shapes.error_type(status))
    response = HttpResponse(
        json.dumps(body, ensure_ascii=False), status=status, content_type="application/json"
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="curfew"'
    return response


def anthropic_labelled(view: ProxyView) -> ProxyView:
    """``labelled_always`` in Anthropic's shape: a failure is still its error."""
    return labelled_always(view, anthropic_error)


def unauthorized(raw_token: str | None) -> HttpResponseBase:
    message = (
        "missing API key: use a curfew API token as the api_key (x-api-key or Bearer)"
        if raw_token is None
        else "unknown or revoked curfew API token"
    )
    return labelled(anthropic_error(401, message, code="invalid_api_key"), None)


def too_large(limit: int) -> HttpResponseBase:
    error = anthropic_error(
        413, f"the request body must be at most {limit // 2**20} MB", code="request_too_large"
    )
    return labelled(error, None)


def _not_allowed() -> HttpResponseBase:
    response = anthropic_error(405, "use POST", code="method_not_allowed")
    response["Allow"] = "POST"
    return labelled(response, None)


def protocol_headers(request: HttpRequest) -> dict[str, str]:
    """``anthropic-version`` (the client's when it looks like one, else the
    default) and ``anthropic-beta`` (when it looks like a list of names)."""
    version = request.headers.get("anthropic-version", "").strip()
    headers = {"anthropic-version": version if _VERSION.fullmatch(version) else DEFAULT_VERSION}
    beta = request.headers.get("anthropic-beta", "").strip()
    if _BETAS.fullmatch(beta):
        headers["anthropic-beta"] = beta
    return headers


def _context(scope: Scope) -> RequestContext:
    # The budget is left out, as at the chat door: the verdict then carries the
    # curve's ceiling and apply_verdict clamps the client's max_tokens with it.
    return RequestContext(
        session_id=scope.session_id, purpose=scope.purpose, subagent=scope.subagent
    )


@csrf_exempt
@anthropic_labelled
async def messages(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return _not_allowed()
    raw_token = api_key_or_bearer(request)
    problem: BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = Scope(None, None, False)
    try:
        scope = parse_scope(request)
        raw = _raw_body(request)
        body = bodies.json_object(raw)
    except BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = BadRequest(f"{exc}; send a Messages API JSON object")
    judged = await judge(raw_token, _context(scope), throttle.client_address(request))
    if judged is None:
        return unauthorized(raw_token)
    verdict = judged.verdict
    if problem is not None:
        response = labelled(anthropic_error(400, str(problem), code="invalid_request"), verdict)
        response["X-Curfew-Action"] = "none"
        return response

    if verdict.action is Action.SHORT_CIRCUIT and verdict.reply is not None:
        payload, content_type = anthropic_shapes.short_circuit_body(body, verdict.reply)
        answer = HttpResponse(payload, content_type=content_type)
        answer["Cache-Control"] = "no-cache"
        return labelled(answer, verdict)
    if verdict.action is Action.PASS:
        # Untouched means the very bytes the client sent.
        content = raw
    else:
        content = json.dumps(
            anthropic_shapes.apply_verdict(body, verdict), ensure_ascii=False
        ).encode()
    response = await _forward(
        judged.token_id,
        "POST",
        upstream.MESSAGES,
        content,
        provider=upstream.ANTHROPIC,
        headers=protocol_headers(request),
    )
    return labelled(response, verdict)


@csrf_exempt
@anthropic_labelled
async def count_tokens(request: HttpRequest) -> HttpResponseBase:
    """``POST /v1/messages/count_tokens``, forwarded as sent: counting tokens is
    not a model call, so no verdict gates it (the token still must be live)."""
    if request.method != "POST":
        return _not_allowed()
    raw_token = api_key_or_bearer(request)
    try:
        scope = parse_scope(request)
    except BadRequest:
        scope = Scope(None, None, False)
    judged = await judge(raw_token, _context(scope), throttle.client_address(request))
    if judged is None:
        return unauthorized(raw_token)
    try:
        raw = _raw_body(request)
    except BadRequest as exc:
        response = labelled(anthropic_error(400, str(exc), code="invalid_request"), judged.verdict)
        response["X-Curfew-Action"] = "none"
        return response
    response = await _forward(
        judged.token_id,
        "POST",
        upstream.COUNT_TOKENS,
        raw,
        provider=upstream.ANTHROPIC,
        headers=protocol_headers(request),
    )
    response = labelled(response, judged.verdict)
    response["X-Curfew-Action"] = Action.PASS.value
    return response
