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

import re
from collections.abc import Mapping

from curfew_client import anthropic_shapes
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.proxy import calls, upstream
from curfew_core.proxy.forward import forward

#: The protocol version sent upstream when the client named none (or an odd one).
DEFAULT_VERSION = "2023-06-01"
#: What the client's protocol headers must look like to be passed on: a date,
#: and a comma-separated list of beta names. Anything else stays here.
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")
_BETAS = re.compile(r"[A-Za-z0-9._-]{1,100}(?: *, *[A-Za-z0-9._-]{1,100}){0,31}")


def protocol_headers(request_headers: Mapping[str, str]) -> dict[str, str]:
    """``anthropic-version`` (the client's when it looks like one, else the
    default) and ``anthropic-beta`` (when it looks like a list of names)."""
    version = request_headers.get("anthropic-version", "").strip()
    headers = {"anthropic-version": version if _VERSION.fullmatch(version) else DEFAULT_VERSION}
    beta = request_headers.get("anthropic-beta", "").strip()
    if _BETAS.fullmatch(beta):
        headers["anthropic-beta"] = beta
    return headers


MESSAGES = calls.ModelEndpoint(
    name="messages",
    what="a Messages API JSON object",
    path=upstream.MESSAGES,
    short_circuit=anthropic_shapes.short_circuit_body,
    apply=anthropic_shapes.apply_verdict,
    provider=upstream.ANTHROPIC,
)


async def messages(request: EdgeRequest) -> HttpResponseBase:
    return await calls.model_call(request, MESSAGES, headers=protocol_headers(request.headers))


async def count_tokens(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/messages/count_tokens``, forwarded as sent: counting tokens is
    not a model call, so no verdict gates it (the token still must be live)."""
    judged = calls.judged_caller(request)
    response = await forward(
        judged.token_id,
        "POST",
        upstream.COUNT_TOKENS,
        request.body,
        provider=upstream.ANTHROPIC,
        headers=protocol_headers(request.headers),
    )
    return calls.passed(response, judged.verdict)
