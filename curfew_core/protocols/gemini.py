"""Google Gemini's wire protocol: ``POST /v1beta/models/{model}:generateContent``
and ``:streamGenerateContent``.

Its clients put the key as ``x-goog-api-key`` (the google-genai SDK), or as
``?key=`` in the query (Google's REST examples); its errors are
``{"error": {"code", "message", "status"}}``; it names its reply budget
``generationConfig.maxOutputTokens``, how much it may think
``generationConfig.thinkingConfig`` (a ``thinkingBudget``, ``-1``: dynamic,
``0``: off; Gemini 3's ``thinkingLevel``) and its usage ``usageMetadata``
(``promptTokenCount`` / ``candidatesTokenCount``). The request and answer
shapes are the client's (``curfew_client.gemini_shapes``): applying a verdict
clamps the thinking budget with the reply budget and lowers the level with the
reasoning effort there, so a gateway in front of Gemini clients does as the
door does.

The Curfew token comes as ``x-goog-api-key`` (or ``X-Curfew-Token``, or a
bearer token), or as ``?key=`` when no header holds one (:data:`QUERY_KEY`,
read by ``WireProtocol.query_token``); that ``key`` is never forwarded (it
would carry the token upstream): the operator's key goes as
``x-goog-api-key``. A team key names its member in ``X-Curfew-User`` only: a
Gemini body has no field for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_client import gemini_shapes, sse

from curfew_core.protocols.base import (
    Refusals,
    Usage,
    WireProtocol,
    bearer_in,
    curfew_token_in,
)
from curfew_core.protocols.operator_key import key_header

#: The key's header; ``authorization`` carries an OAuth token (Vertex AI's).
CREDENTIALS = frozenset({b"x-goog-api-key", b"authorization"})
#: The key's query parameter (``?key=``): read as the Curfew token when no
#: header holds one, never forwarded.
QUERY_KEY = "key"
#: Where a body names its reply budget.
MAX_OUTPUT_TOKENS = (gemini_shapes.GENERATION_CONFIG, gemini_shapes.BUDGET_KEY)
#: The API version the paths are under (the SDK's default), after the
#: upstream's base URL (``https://generativelanguage.googleapis.com``).
VERSION = "v1beta"
GENERATE = gemini_shapes.GENERATE
STREAM = gemini_shapes.STREAM


def token_in(headers: Mapping[str, str]) -> str | None:
    """The Gemini door's token: ``X-Curfew-Token`` when sent, else
    ``x-goog-api-key``, else a bearer token."""
    return (
        curfew_token_in(headers)
        or (headers.get("x-goog-api-key", "") or "").strip()
        or bearer_in(headers)
    )


def path(model: str, method: str) -> tuple[str, ...]:
    """``v1beta/models/<model>:<method>`` as upstream segments (the model id is
    checked as one segment by ``proxy.upstream``, like OpenAI's)."""
    return (VERSION, "models", f"{model}:{method}")


def _error(status: int, message: str, code: str, param: str | None, type: str) -> dict[str, Any]:
    return gemini_shapes.error_body(status, message)


def _broken(data: dict[str, Any]) -> bytes:
    return sse.event(data)


GEMINI = WireProtocol(
    name="gemini",
    error_body=_error,
    refusals=Refusals(
        missing="missing API key: use a curfew API token as the api_key (x-goog-api-key)"
    ),
    token_in=token_in,
    credential_headers=CREDENTIALS,
    query_credentials=frozenset({QUERY_KEY}),
    base_url_setting="CURFEW_GEMINI_UPSTREAM_BASE_URL",
    api_key_setting="CURFEW_GEMINI_UPSTREAM_API_KEY",
    auth=key_header("x-goog-api-key"),
    relayed_headers=frozenset({"retry-after"}),
    broken=_broken,
    budgets=(MAX_OUTPUT_TOKENS,),
    usage=Usage("usageMetadata", input=("promptTokenCount",), output=("candidatesTokenCount",)),
    origins=("gemini",),
)
