"""OpenAI's wire protocol: chat completions, the Responses API, legacy
completions, embeddings and models, under ``/v1/``.

Its clients put the key as a bearer token; its errors are
``{"error": {"message", "type", "param", "code"}}``; its answers name their
usage ``usage`` (``prompt_tokens`` / ``completion_tokens``, the Responses
API's ``input_tokens`` / ``output_tokens`` inside ``response.completed``).
The request and answer shapes themselves are the client's
(``curfew_client.openai_shapes``, ``responses_shapes``, ``completions_shapes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_client.openai_shapes import error_body, sse_event

from curfew_core.protocols.base import (
    Refusals,
    Usage,
    WireProtocol,
    bearer_in,
    curfew_token_in,
)
from curfew_core.protocols.operator_key import key_header

#: The upstream answer headers passed on (ids for support tickets, rate
#: limits for well-behaved retries), by exact name: anything else an upstream
#: sends (cookies, debug headers, a header echoing the key) stays here.
RELAYED_HEADERS = frozenset(
    {
        "x-request-id",
        "retry-after",
        "openai-processing-ms",
        "openai-version",
        "x-ratelimit-limit-requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
    }
)
#: A caller's own credential: OpenAI's bearer.
CREDENTIALS = frozenset({b"authorization"})
#: What picks the account a key acts for: with the operator's key these are
#: dropped (``passing``), with the caller's own they belong to it and go with it.
ACCOUNT = frozenset({b"openai-organization", b"openai-project"})

#: The paths under the upstream's base URL (which ends in ``/v1``, as the SDK
#: takes it). Client input is at most one checked segment after them.
CHAT_COMPLETIONS = ("chat", "completions")
MODELS = ("models",)
RESPONSES = ("responses",)
EMBEDDINGS = ("embeddings",)
COMPLETIONS = ("completions",)


def token_in(headers: Mapping[str, str]) -> str | None:
    """The OpenAI door's token: ``X-Curfew-Token`` when sent, else the bearer token."""
    return curfew_token_in(headers) or bearer_in(headers)


def _error(status: int, message: str, code: str, param: str | None, type: str) -> dict[str, Any]:
    return error_body(message, type=type, code=code, param=param)


OPENAI = WireProtocol(
    name="openai",
    error_body=_error,
    refusals=Refusals(missing="missing bearer token: use a curfew API token as the api_key"),
    token_in=token_in,
    credential_headers=CREDENTIALS,
    account_headers=ACCOUNT,
    base_url_setting="CURFEW_UPSTREAM_BASE_URL",
    api_key_setting="CURFEW_UPSTREAM_API_KEY",
    auth=key_header("Authorization", "Bearer "),
    relayed_headers=RELAYED_HEADERS,
    broken=sse_event,
    budgets=(("max_tokens",), ("max_completion_tokens",), ("max_output_tokens",)),
    usage=Usage(
        "usage",
        input=("prompt_tokens", "input_tokens"),
        output=("completion_tokens", "output_tokens"),
        within=("response",),
    ),
    member_fields=((("user",), "user"),),
    origins=("chat", "completions", "responses", "embeddings"),
)
