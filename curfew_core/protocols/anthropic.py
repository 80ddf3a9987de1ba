"""Anthropic's wire protocol: the Messages API (``/v1/messages`` and its
``count_tokens``).

Its clients put the key as ``x-api-key`` (or a bearer token: the SDK's
``auth_token``, Claude Code's ``ANTHROPIC_AUTH_TOKEN``); its errors are
``{"type": "error", "error": {"type", "message"}}`` with the type following
the status; its answers name their usage ``usage`` (``input_tokens`` in
``message_start``'s message, the running ``output_tokens`` in
``message_delta``). The request and answer shapes are the client's
(``curfew_client.anthropic_shapes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_client import anthropic_shapes, sse

from curfew_core.protocols.base import (
    Refusals,
    Usage,
    WireProtocol,
    bearer_token,
    curfew_token_in,
)
from curfew_core.protocols.operator_key import key_header

#: Anthropic's names for the headers OpenAI relays (``request-id``; rate
#: limits per kind of limit), by exact name.
RELAYED_HEADERS = frozenset(
    {
        "request-id",
        "retry-after",
        *(
            f"anthropic-ratelimit-{kind}-{what}"
            for kind in ("requests", "tokens", "input-tokens", "output-tokens")
            for what in ("limit", "remaining", "reset")
        ),
    }
)
#: A caller's own credential: ``Authorization: Bearer`` for a Claude Pro/Max
#: login (the SDK's ``auth_token``), ``x-api-key`` for a key.
CREDENTIALS = frozenset({b"authorization", b"x-api-key"})
#: The Messages API's paths, under the Anthropic upstream's base URL. That base
#: is given as Anthropic's SDK takes it (``https://api.anthropic.com``, DeepSeek's
#: ``https://api.deepseek.com/anthropic``): the SDK adds ``/v1/messages``, so do we.
MESSAGES = ("v1", "messages")
COUNT_TOKENS = ("v1", "messages", "count_tokens")


def api_key_or_bearer_token(api_key: str, authorization: str) -> str | None:
    """The token as Anthropic's clients send it: ``x-api-key: <token>``, or
    ``Authorization: Bearer <token>``; the ``x-api-key`` first when both are sent."""
    return api_key.strip() or bearer_token(authorization)


def api_key_or_bearer_in(headers: Mapping[str, str]) -> str | None:
    """The ``x-api-key`` or bearer token in request headers (case-insensitive), or None."""
    return api_key_or_bearer_token(headers.get("x-api-key", ""), headers.get("Authorization", ""))


def token_in(headers: Mapping[str, str]) -> str | None:
    """The Messages door's token: ``X-Curfew-Token`` when sent, else as
    :func:`api_key_or_bearer_in` reads it."""
    return curfew_token_in(headers) or api_key_or_bearer_in(headers)


def _error(status: int, message: str, code: str, param: str | None, type: str) -> dict[str, Any]:
    # Anthropic's SDK picks the exception by status; its error type follows it
    # (``code``, ``param`` and OpenAI's ``type`` have no place in it).
    return anthropic_shapes.error_body(message, type=anthropic_shapes.error_type(status))


def _broken(data: dict[str, Any]) -> bytes:
    return sse.event(data, "error")


ANTHROPIC = WireProtocol(
    name="anthropic",
    error_body=_error,
    # The proxy's words; only its error shape and where the credential may stand differ.
    refusals=Refusals(
        missing="missing API key: use a curfew API token as the api_key (x-api-key or Bearer)"
    ),
    token_in=token_in,
    credential_headers=CREDENTIALS,
    base_url_setting="CURFEW_ANTHROPIC_UPSTREAM_BASE_URL",
    api_key_setting="CURFEW_ANTHROPIC_UPSTREAM_API_KEY",
    auth=key_header("x-api-key"),
    relayed_headers=RELAYED_HEADERS,
    broken=_broken,
    # The API refuses a request without one; SDKs always send theirs.
    defaults=(("anthropic-version", "2023-06-01"),),
    budgets=(("max_tokens",),),
    usage=Usage("usage", input=("input_tokens",), output=("output_tokens",), within=("message",)),
    # Claude-style agents name the user in ``metadata.user_id``; ``user`` is
    # Curfew's own field at every JSON door.
    member_fields=((("user",), "user"), (("metadata", "user_id"), "metadata")),
    origins=("messages",),
)
