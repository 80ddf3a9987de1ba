"""A call forwarded upstream within the token's share of upstream slots."""

from __future__ import annotations

from django.conf import settings
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.proxy import passing, upstream
from curfew_core.proxy.concurrency import slots

#: Seconds a token over its share of upstream calls is told to wait.
BUSY_TOKEN_RETRY_AFTER = 1


async def forward(
    request: EdgeRequest,
    token_id: int,
    method: str,
    path: tuple[str, ...],
    content: bytes | None = None,
    *,
    provider: upstream.Provider = upstream.OPENAI,
) -> HttpResponseBase:
    """Forward to ``path`` (fixed, or one checked segment) with ``content`` and
    what ``passing`` lets through of ``request`` (its headers and query),
    holding one of the token's upstream slots until the answer ends; a token
    that holds all of its share gets a 429 at once instead (in the upstream
    protocol's shape: the client speaks it)."""
    limit = int(settings.CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN)
    slot = slots.take(token_id, limit)
    if slot is None:
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
        method,
        path,
        content,
        release=slot.release,
        provider=provider,
        headers=passing.headers(request.scope.get("headers") or ()),
        query=passing.query(request.query_string),
    )
