"""The Anthropic Messages door: ``POST /v1/messages`` and its ``count_tokens``.

Point Anthropic's SDK (or a Claude-style agent) at the server's root with a
curfew token as the key. The door acts as the chat door does, in Anthropic's
protocol:

- short-circuit: the canned reply as a ``message`` (or its event stream),
  zero usage, nothing sent upstream;
- clamp: forwarded with ``max_tokens`` clamped, the persona in ``system``,
  thinking kept within the clamp, tools dropped when denied;
- pass (on duty, exempt, dry run): forwarded byte for byte.

The token comes as ``x-api-key`` or ``Authorization: Bearer``. The client's
``anthropic-version`` and ``anthropic-beta`` go upstream as sent, like every
header ``passing`` lets through; a request without a version gets the
default (``protocols.anthropic``). Every answer
says what the curfew did (``X-Curfew-State`` / ``X-Curfew-Action``) and every
error is in Anthropic's shape, so its SDK raises its usual exceptions.
"""

from __future__ import annotations

from curfew_client import anthropic_shapes
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.protocols import anthropic
from curfew_core.proxy import calls, helper_calls
from curfew_core.proxy.forward import forward

MESSAGES = calls.ModelEndpoint(
    name="messages",
    what="a Messages API JSON object",
    path=anthropic.MESSAGES,
    shapes=anthropic_shapes,
    protocol=anthropic.ANTHROPIC,
    purpose_of=helper_calls.claude_code_purpose,
)


async def messages(request: EdgeRequest) -> HttpResponseBase:
    return await calls.model_call(request, MESSAGES)


async def count_tokens(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1/messages/count_tokens``, forwarded as sent: counting tokens is
    not a model call, so no verdict gates it (the token still must be live)."""
    judged = calls.judged_caller(request)
    response = await forward(
        request,
        judged.token_id,
        "POST",
        anthropic.COUNT_TOKENS,
        request.body,
        protocol=anthropic.ANTHROPIC,
    )
    return calls.passed(response, judged.verdict)
