"""Google Gemini API shapes (``generateContent`` / ``streamGenerateContent``):
apply a verdict to a request body, the short-circuit answer, and the error.

The Gemini counterpart of :mod:`curfew_client.openai_shapes`, shared by the
proxy's ``/v1beta/models/{model}:generateContent`` door and any gateway in
front of Gemini clients. Standard library only and no Django, like the rest of
the client.

Unlike OpenAI's and Anthropic's, a Gemini request says whether it streams by
its path (``:streamGenerateContent``) and how by its query (``alt=sse``: an
event stream; without it a JSON array of the same objects), never by its body.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any, TypeGuard

from curfew_client import sse
from curfew_client.openai_shapes import VerdictLike

#: Where a request names its reply budget.
GENERATION_CONFIG = "generationConfig"
BUDGET_KEY = "maxOutputTokens"
#: What a denied request may not use.
TOOL_KEYS = ("tools", "toolConfig")


def _positive_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _with_persona(instruction: Any, persona: str) -> dict[str, Any]:
    """``systemInstruction`` with ``persona`` appended as its last part
    (appended, never prepended: a cached prefix still matches)."""
    if isinstance(instruction, Mapping) and isinstance(instruction.get("parts"), list):
        return {**instruction, "parts": [*instruction["parts"], {"text": persona}]}
    if isinstance(instruction, str) and instruction.strip():
        return {"parts": [{"text": instruction}, {"text": persona}]}
    return {"parts": [{"text": persona}]}


def apply_verdict(body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
    """A new ``generateContent`` body that obeys ``verdict`` (``body`` is not
    modified); an on-duty, exempt or dry-run verdict gives back an equal body.

    - ``generationConfig.maxOutputTokens``: ``min`` of the client's and the
      verdict's, never a raise; the verdict's when the client named none;
    - persona: appended to ``systemInstruction`` as a last part;
    - tools denied: ``tools`` and ``toolConfig`` dropped.
    """
    out = dict(body)
    if verdict.max_tokens is not None:
        config = out.get(GENERATION_CONFIG)
        config = dict(config) if isinstance(config, Mapping) else {}
        asked = config.get(BUDGET_KEY)
        config[BUDGET_KEY] = (
            min(asked, verdict.max_tokens) if _positive_int(asked) else verdict.max_tokens
        )
        out[GENERATION_CONFIG] = config
    if verdict.persona:
        out["systemInstruction"] = _with_persona(out.get("systemInstruction"), verdict.persona)
    if verdict.tools == "deny":
        for key in TOOL_KEYS:
            out.pop(key, None)
    return out


def zero_usage() -> dict[str, int]:
    """A fresh all-zero ``usageMetadata``."""
    return {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}


def response_id() -> str:
    return f"curfew-{secrets.token_hex(12)}"


def answer(model: str, text: str, *, id: str | None = None) -> dict[str, Any]:
    """The complete answer: one candidate with the text, ``STOP``, zero usage."""
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": zero_usage(),
        "modelVersion": model or "curfew",
        "responseId": id or response_id(),
    }


def short_circuit_body(model: str, text: str, *, stream: bool, alt_sse: bool) -> tuple[bytes, str]:
    """``(payload, content_type)`` of the answer to a call for ``model``:
    ``generateContent``'s one JSON object; ``streamGenerateContent``'s one
    event (``alt=sse``), or a JSON array of one object (without it)."""
    data = answer(model, text)
    if stream and alt_sse:
        return sse.event(data), sse.CONTENT_TYPE
    encoded = json.dumps([data] if stream else data, ensure_ascii=False).encode()
    return encoded, "application/json"


#: The ``error.status`` Google's APIs give each HTTP status (google.rpc.Code).
STATUSES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_status(status: int) -> str:
    """``error.status`` for an HTTP ``status``: its own name, else
    ``FAILED_PRECONDITION`` for a client error and ``INTERNAL`` for a server one."""
    return STATUSES.get(status, "FAILED_PRECONDITION" if status < 500 else "INTERNAL")


def error_body(status: int, message: str) -> dict[str, Any]:
    """Gemini's error shape, ``{"error": {"code", "message", "status"}}``: the
    google-genai SDK raises its ``ClientError`` / ``ServerError`` with it."""
    return {"error": {"code": status, "message": message, "status": error_status(status)}}
