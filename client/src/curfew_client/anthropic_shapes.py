"""Anthropic Messages API shapes: apply a verdict to a ``/v1/messages`` body,
and the short-circuit answer (a ``message`` object or its SSE event stream).

The Messages API counterpart of :mod:`curfew_client.openai_shapes`, shared by
the proxy's ``/v1/messages`` door and any gateway in front of Claude-style
agents, so both act on a verdict in exactly one way. Standard library only and
no Django, like the rest of the client.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping
from typing import Any, TypeGuard

from curfew_client import sse
from curfew_client.openai_shapes import VerdictLike

#: Anthropic's smallest thinking budget (``budget_tokens`` must be at least this
#: and below ``max_tokens``).
MIN_THINKING_BUDGET = 1024


def _positive_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _with_persona(system: Any, persona: str) -> Any:
    """``system`` with ``persona`` appended: after the text, or as a last block.

    Appended, never prepended: a ``cache_control`` breakpoint on the client's
    blocks then still covers the same prefix, so its prompt cache keeps working.
    """
    if isinstance(system, str) and system.strip():
        return f"{system}\n\n{persona}"
    if isinstance(system, list):
        return [*system, {"type": "text", "text": persona}]
    return persona


def _within(thinking: Any, max_tokens: int) -> Any:
    """``thinking`` made valid under ``max_tokens``.

    Only ``{"type": "enabled", "budget_tokens": n}`` names a budget; it must be
    at least 1024 and below ``max_tokens``. A budget at or above the clamp is
    lowered to ``max_tokens - 1`` (a ``min``: never raised). When the clamp is
    1024 or less no valid budget exists, and thinking is turned off explicitly
    with ``{"type": "disabled"}`` rather than dropped: without the key a model
    whose default is to think (adaptive thinking) would still spend the small
    budget thinking, and the request would not say what was done to it.
    Adaptive and other budget-less kinds stay as they are: the model keeps
    itself within ``max_tokens``.
    """
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return thinking
    if max_tokens <= MIN_THINKING_BUDGET:
        return {"type": "disabled"}
    budget = thinking.get("budget_tokens")
    if _positive_int(budget) and budget < max_tokens:
        return thinking
    # Over the clamp, or not a budget we can compare with.
    return {**thinking, "budget_tokens": max_tokens - 1}


def apply_verdict(body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
    """A new Messages request body that obeys ``verdict`` (``body`` is not modified).

    Acts only on what the verdict sets, so an on-duty, exempt or dry-run verdict
    (every field null, tools allowed) gives back an equal body.

    - ``max_tokens``: ``min`` of the client's and the verdict's, never a raise;
      the verdict's when the client's is absent or not a positive integer (the
      API requires it, so there is no default to fall back on);
    - persona: appended to the top-level ``system`` (text or blocks);
    - ``thinking.budget_tokens``: kept below the clamped ``max_tokens``, or
      thinking disabled when the clamp leaves no room for it (see ``_within``);
    - tools denied: ``tools`` and ``tool_choice`` dropped.
    """
    out = dict(body)
    if verdict.max_tokens is not None:
        current = out.get("max_tokens")
        clamped = min(current, verdict.max_tokens) if _positive_int(current) else verdict.max_tokens
        out["max_tokens"] = clamped
        if "thinking" in out:
            out["thinking"] = _within(out["thinking"], clamped)
    if verdict.persona:
        out["system"] = _with_persona(out.get("system"), verdict.persona)
    if verdict.tools == "deny":
        out.pop("tools", None)
        out.pop("tool_choice", None)
    return out


# -- the short-circuit answer -------------------------------------------------


def message_id() -> str:
    return f"msg_curfew_{secrets.token_hex(12)}"


def zero_usage() -> dict[str, Any]:
    """A fresh all-zero ``usage``, every count a cost ledger reads set to 0."""
    return {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    return model if isinstance(model, str) and model else "curfew"


#: ``tool_choice`` types that demand a tool call: any tool, or the one named.
FORCING_TOOL_CHOICES = ("any", "tool")


def forces_tool(body: Mapping[str, Any]) -> bool:
    """The request demands a tool call (``tool_choice`` ``{"type": "any"}`` or
    ``{"type": "tool", "name": ...}``); ``auto``, ``none`` and anything odd
    force nothing."""
    choice = body.get("tool_choice")
    return isinstance(choice, Mapping) and choice.get("type") in FORCING_TOOL_CHOICES


def _stop(refusal: bool, text: str) -> dict[str, Any]:
    """How the answer stops: ``end_turn``, or for a forced tool call the
    Messages API's own ``stop_reason: "refusal"`` with its ``stop_details``
    (no policy ``category``; the reply as the ``explanation``)."""
    if refusal:
        details = {"type": "refusal", "category": None, "explanation": text}
        return {"stop_reason": "refusal", "stop_sequence": None, "stop_details": details}
    return {"stop_reason": "end_turn", "stop_sequence": None}


def _message(model: Any, text: str, *, id: str, refusal: bool) -> dict[str, Any]:
    """A complete ``message``. Declining a forced tool call, it has no content
    at all and the reply is the refusal's ``explanation``, as OpenAI's refusal
    has ``content: null``: a text block would be read as the model's answer
    by an agent that demanded a tool (pydantic-ai asks again, then fails with
    an error that never names the curfew), while an empty refusal is what it
    reports at once, with the explanation (``ContentFilterError``)."""
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [] if refusal else [{"type": "text", "text": text}],
        **_stop(refusal, text),
        "usage": zero_usage(),
    }


def _events(model: Any, text: str, *, id: str, refusal: bool) -> list[tuple[str, dict[str, Any]]]:
    start = {
        **_message(model, text, id=id, refusal=False),
        "content": [],
        "stop_reason": None,
    }
    blocks: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
    ]
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        *([] if refusal else blocks),
        {
            "type": "message_delta",
            # stop_details rides here with the stop_reason, as the API streams it.
            "delta": _stop(refusal, text),
            # Cumulative counts, as the API sends them: all zero here too.
            "usage": {"output_tokens": 0},
        },
        {"type": "message_stop"},
    ]
    return [(event["type"], event) for event in events]


def answer(body: Mapping[str, Any], text: str, *, id: str | None = None) -> dict[str, Any]:
    """The non-streaming answer: a complete ``message``, zero usage; a refusal
    when the request forced a tool (:func:`forces_tool`, see ``_stop``)."""
    return _message(_model(body), text, id=id or message_id(), refusal=forces_tool(body))


def answer_events(
    body: Mapping[str, Any], text: str, *, id: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The streaming answer as ``(event name, data)`` pairs, in the order the
    Messages API sends them; each data object carries its name as ``type``."""
    return _events(_model(body), text, id=id or message_id(), refusal=forces_tool(body))


@functools.cache
def _template(stream: bool, refusal: bool) -> sse.Template:
    """The answer's body (``answer_events``' stream, or ``answer``'s JSON) with
    a hole for every value a request changes."""
    holes = {"model": sse.hole("model"), "text": sse.hole("reply"), "id": sse.hole("id")}
    if not stream:
        return sse.Template.of_json(_message(**holes, refusal=refusal))
    return sse.Template.of_stream(_events(**holes, refusal=refusal), done=False)


def short_circuit_body(body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
    """The answer to ``body`` with ``text``, streamed or not as it asked:
    ``(payload, content_type)``. Streamed, the events are named (SDKs skip an
    event without a name) and there is no ``[DONE]``: ``message_stop`` is the end.

    The very bytes of ``sse.stream(answer_events(...))`` or ``json.dumps(answer(...))``,
    from a template: only the request's values are encoded."""
    stream = body.get("stream") is True
    values = {
        "reply": sse.value(text),
        "model": sse.value(_model(body)),
        "id": sse.value(message_id()),
    }
    template = _template(stream, forces_tool(body))
    return template.fill(values), sse.CONTENT_TYPE if stream else "application/json"


def error_body(message: str, *, type: str) -> dict[str, Any]:
    """Anthropic's error shape, so its SDK raises the usual exception with our
    message (the exception class follows the HTTP status; ``type`` names it
    for the client: ``invalid_request_error``, ``authentication_error``,
    ``rate_limit_error``, ``api_error``, ...)."""
    return {"type": "error", "error": {"type": type, "message": message}}


#: The ``error.type`` the Messages API gives each HTTP status.
ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    """``error.type`` for ``status``: its own name, else ``invalid_request_error``
    for a client error and ``api_error`` for a server one."""
    return ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
