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

from curfew_client import anthropic_shapes
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from curfew_core.http_headers import api_key_or_bearer_in
from curfew_core.proxy import calls, upstream
from curfew_core.proxy.views import (
    BadRequest,
    Judged,
    ProxyView,
    _forward,
    _raw_body,
    labelled,
    labelled_always,
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


#: Anthropic's protocol: the token as ``x-api-key`` (or Bearer), its error shape.
ANTHROPIC = calls.Dialect(
    credential=api_key_or_bearer_in,
    error=anthropic_error,
    unauthorized=unauthorized,
    provider=upstream.ANTHROPIC,
)


DOOR = calls.ModelDoor(
    name="messages",
    what="a Messages API JSON object",
    path=upstream.MESSAGES,
    short_circuit=anthropic_shapes.short_circuit_body,
    apply=anthropic_shapes.apply_verdict,
    dialect=ANTHROPIC,
)


@csrf_exempt
@anthropic_labelled
async def messages(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return _not_allowed()
    call = await calls.read_call(request, DOOR.what, DOOR.dialect)
    if not isinstance(call, calls.Call):
        return call
    return await calls.act(call, DOOR, headers=protocol_headers(request))


@csrf_exempt
@anthropic_labelled
async def count_tokens(request: HttpRequest) -> HttpResponseBase:
    """``POST /v1/messages/count_tokens``, forwarded as sent: counting tokens is
    not a model call, so no verdict gates it (the token still must be live)."""
    if request.method != "POST":
        return _not_allowed()
    judged = await calls.read_caller(request, ANTHROPIC)
    if not isinstance(judged, Judged):
        return judged
    try:
        raw = _raw_body(request)
    except BadRequest as exc:
        return calls.refused(ANTHROPIC, judged.verdict, 400, exc, code="invalid_request")
    response = await _forward(
        judged.token_id,
        "POST",
        upstream.COUNT_TOKENS,
        raw,
        provider=upstream.ANTHROPIC,
        headers=protocol_headers(request),
    )
    return calls.passed(response, judged.verdict)
