"""A call forwarded upstream within the token's share of upstream slots (a
team key's member's own share, as their own token would have), with the
operator's key, or (where the operator allows it) the caller's own provider
credential."""

from __future__ import annotations

from django.conf import settings
from django.http.response import HttpResponseBase

from curfew_core.edge import dialects
from curfew_core.edge.caller import share
from curfew_core.edge.http_headers import CURFEW_TOKEN_RAW, CallerCredential, caller_credential
from curfew_core.edge.request import EdgeRequest
from curfew_core.hot_settings import setting
from curfew_core.protocols.base import WireProtocol
from curfew_core.protocols.openai import OPENAI
from curfew_core.proxy import passing, upstream
from curfew_core.proxy.concurrency import slots

#: Seconds a token over its share of upstream calls is told to wait.
BUSY_TOKEN_RETRY_AFTER = 1

#: The code of the 403 a caller's own credential meets where the operator does
#: not allow it.
NOT_ALLOWED_CODE = "caller_credentials_not_allowed"
NOT_ALLOWED_MESSAGE = (
    "this Curfew server does not let callers bring their own provider credential "
    "(a subscription login or their own key): send your Curfew token as the API key and no "
    "credential of your own, or ask its operator to turn on CURFEW_PROXY_CALLER_CREDENTIALS"
)
#: What replaces the upstream's answer when it refuses the caller's own
#: credential: providers echo part of it in that message.
REFUSED_MESSAGE = (
    "the upstream provider refused your own credential (HTTP {status}); sign in again or "
    "check your key"
)


def own_credential(request: EdgeRequest) -> CallerCredential | None:
    """The caller's own provider credential, sent with its Curfew token in
    ``X-Curfew-Token`` (``http_headers.caller_credential``); ``None`` for
    every other call (one dict lookup). Where a credential may stand is the
    door's protocol's (``protocols``)."""
    if request.headers.raw(CURFEW_TOKEN_RAW) is None:
        return None
    protocol = request.door.dialect.protocol
    if protocol is None:
        return None
    return caller_credential(request.scope.get("headers") or (), protocol)


def credentials_allowed() -> bool:
    return bool(setting("CURFEW_PROXY_CALLER_CREDENTIALS"))


def not_allowed(dialect: dialects.Dialect) -> HttpResponseBase:
    """The 403 for a caller's own credential where the operator does not allow
    it, in the door's shape (nothing goes upstream, the credential is not named)."""
    return dialect.refusal(403, NOT_ALLOWED_MESSAGE, code=NOT_ALLOWED_CODE, type="permission_error")


async def forward(
    request: EdgeRequest,
    token_id: int,
    method: str,
    path: tuple[str, ...],
    content: bytes | None = None,
    *,
    protocol: WireProtocol = OPENAI,
) -> HttpResponseBase:
    """Forward to ``path`` (fixed, or one checked segment) with ``content`` and
    what ``passing`` lets through of ``request`` (its headers and query),
    holding one of the token's upstream slots until the answer ends; a token
    that holds all of its share gets a 429 at once instead (in the upstream
    protocol's shape: the client speaks it). Through a team key the share is
    the member's the call names (``edge.caller.share``): one member's open
    calls never leave the rest of the team without a slot.

    A caller that sent its Curfew token in ``X-Curfew-Token`` beside a
    credential of its own (:func:`own_credential`) has that credential sent
    upstream instead of the operator's key, where the operator allows it
    (``CURFEW_PROXY_CALLER_CREDENTIALS``), and a 403 otherwise. The
    credential goes nowhere else: no log line, ledger entry or error names
    it, and an upstream's refusal of it is replaced (it may quote it)."""
    own = own_credential(request)
    if own is not None and not credentials_allowed():
        return not_allowed(request.door.dialect)
    limit = int(settings.CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN)
    member = None if request.caller is None else share(request.caller)[1]
    slot = slots.take(token_id if member is None else (token_id, member), limit)
    if slot is None:
        whose = "this token" if member is None else "this member, through the team key,"
        refused = upstream.gateway_error(
            429,
            f"{whose} already has {limit} requests open upstream; retry when one ends",
            "too_many_concurrent_requests",
            type="rate_limit_error",
            protocol=protocol,
        )
        refused["Retry-After"] = str(BUSY_TOKEN_RETRY_AFTER)
        return refused
    headers = passing.headers(request.scope.get("headers") or ())
    if own is not None:
        # The caller's, passed among the headers, is the one: the operator's
        # key is not added.
        headers.extend(own)
    response = await upstream.forward(
        method,
        path,
        content,
        release=slot.release,
        protocol=protocol,
        headers=headers,
        query=passing.query(request.query_string, protocol.query_credentials),
        operator_key=own is None,
    )
    if own is not None and response.status_code >= 400:
        response = _without(own, response, protocol)
    return response


def _without(
    own: CallerCredential, response: HttpResponseBase, protocol: WireProtocol
) -> HttpResponseBase:
    """An upstream's error answer to a call made with the caller's credential:
    a refusal of it (401, 403) in the proxy's own words, any other with the
    credential cut out wherever it appears. (Every error answer is whole, not
    streamed: ``upstream`` reads it before relaying.)"""
    status = response.status_code
    if status in (401, 403):
        replaced = upstream.gateway_error(
            status,
            REFUSED_MESSAGE.format(status=status),
            "upstream_auth",
            protocol=protocol,
        )
        for name in protocol.relayed_headers:
            if name in response:
                replaced[name] = response[name]
        return replaced
    content = getattr(response, "content", None)
    if not isinstance(content, bytes):
        return response
    cleaned = content
    for _, value in own:
        for secret in {value.strip(), value.partition(" ")[2].strip()}:
            if len(secret) >= 8:
                cleaned = cleaned.replace(secret.encode("ascii"), upstream.REDACTED)
    if cleaned != content:
        response.content = cleaned  # type: ignore[attr-defined]
    return response
