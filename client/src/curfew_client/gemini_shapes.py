"""Google Gemini API shapes (``generateContent`` / ``streamGenerateContent``):
apply a verdict to a request body, the short-circuit answer, and the error.

The Gemini counterpart of :mod:`curfew_client.openai_shapes`, shared by the
proxy's ``/v1beta/models/{model}:generateContent`` door and any gateway in
front of Gemini clients. Standard library only and no Django, like the rest of
the client.

Unlike OpenAI's and Anthropic's, a Gemini request says whether it streams by
its path (``:streamGenerateContent``) and how by its query (``alt=sse``: an
event stream; without it a JSON array of the same objects), never by its body.
So :func:`curfew_client.shapes.module` does not list it: a gateway takes the
answer's shape from the call (:class:`GeminiCall`, or :func:`call_at` for the
path and query it was called on), which then acts as a shape module does.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard
from urllib.parse import parse_qs, unquote

from curfew_client import sse
from curfew_client.openai_shapes import REASONING_ORDER, VerdictLike

#: Where a request names its reply budget.
GENERATION_CONFIG = "generationConfig"
BUDGET_KEY = "maxOutputTokens"
#: How much it may think, in ``generationConfig``: a budget in tokens (Gemini
#: 2.5: ``-1`` dynamic, ``0`` off) or a level (Gemini 3).
THINKING_CONFIG = "thinkingConfig"
THINKING_BUDGET_KEY = "thinkingBudget"
THINKING_LEVEL_KEY = "thinkingLevel"
#: A thinking budget that means "as much as the model likes": under a clamp,
#: the clamp.
DYNAMIC_THINKING = -1
#: Gemini 3's thinking levels, cheapest first (the API takes them in either
#: case: ``"low"`` in Google's REST examples, ``"LOW"`` from the google-genai SDK).
THINKING_LEVELS = ("minimal", "low", "medium", "high")
#: What a level above the verdict's reasoning effort is lowered to: the least
#: level every Gemini 3 model takes (3 Pro takes only ``low`` and ``high``;
#: ``minimal`` and ``medium`` are refused by some), so a lowered request is
#: never one its model refuses.
LOWERED_LEVEL = "low"
#: What a denied request may not use.
TOOL_KEYS = ("tools", "toolConfig")
#: Its two methods, the last part of a call's path (``models/<model>:<method>``).
GENERATE = "generateContent"
STREAM = "streamGenerateContent"


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


def thinking_budget_within(budget: Any, ceiling: int) -> Any:
    """A ``thinkingBudget`` at most ``ceiling`` (the verdict's reply budget,
    which thinking is counted in): a ``min``, never a raise. Dynamic
    (:data:`DYNAMIC_THINKING`) becomes ``ceiling``; ``0`` (off), a smaller
    budget and anything that is not a number stay as sent (the upstream's
    to refuse)."""
    if isinstance(budget, bool) or not isinstance(budget, int | float):
        return budget
    return ceiling if budget == DYNAMIC_THINKING or budget > ceiling else budget


def thinking_level_within(level: Any, effort: str | None) -> Any:
    """A ``thinkingLevel`` no higher than the verdict's reasoning ``effort``
    (OpenAI's names, cheapest first: ``openai_shapes.REASONING_ORDER``),
    never raised: a level above it becomes :data:`LOWERED_LEVEL` in the case
    it was sent in; ``low`` and ``minimal`` stay. An unknown level or effort,
    or none, leaves it as sent."""
    if not isinstance(level, str) or effort not in REASONING_ORDER:
        return level
    asked = level.lower()
    if asked not in THINKING_LEVELS:
        return level
    rank = REASONING_ORDER.index
    if rank(asked) <= rank(LOWERED_LEVEL) or rank(effort) >= rank(asked):
        return level
    return LOWERED_LEVEL.upper() if level.isupper() else LOWERED_LEVEL


def thinking_within(thinking: Mapping[str, Any], verdict: VerdictLike) -> Mapping[str, Any]:
    """A ``thinkingConfig`` that obeys ``verdict``: its budget at most the
    verdict's reply budget (:func:`thinking_budget_within`), its level at most
    the verdict's reasoning effort (:func:`thinking_level_within`). Neither is
    ever added (a model that cannot think, or has no levels, refuses them);
    ``thinking`` itself comes back when nothing changes."""
    out = dict(thinking)
    if verdict.max_tokens is not None and THINKING_BUDGET_KEY in out:
        out[THINKING_BUDGET_KEY] = thinking_budget_within(
            out[THINKING_BUDGET_KEY], verdict.max_tokens
        )
    if THINKING_LEVEL_KEY in out:
        out[THINKING_LEVEL_KEY] = thinking_level_within(
            out[THINKING_LEVEL_KEY], verdict.reasoning_effort
        )
    return thinking if out == thinking else out


def apply_verdict(body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
    """A new ``generateContent`` body that obeys ``verdict`` (``body`` is not
    modified); an on-duty, exempt or dry-run verdict gives back an equal body.

    - ``generationConfig.maxOutputTokens``: ``min`` of the client's and the
      verdict's, never a raise; the verdict's when the client named none;
    - ``generationConfig.thinkingConfig.thinkingBudget``: at most the
      verdict's reply budget (``min``; ``-1``, dynamic, becomes it; ``0``
      stays off; never added);
    - ``generationConfig.thinkingConfig.thinkingLevel`` (Gemini 3): lowered
      to ``low`` when above the verdict's reasoning effort, never raised,
      never added;
    - persona: appended to ``systemInstruction`` as a last part;
    - tools denied: ``tools`` and ``toolConfig`` dropped.
    """
    out = dict(body)
    given = out.get(GENERATION_CONFIG)
    config = dict(given) if isinstance(given, Mapping) else None
    if verdict.max_tokens is not None:
        config = {} if config is None else config
        asked = config.get(BUDGET_KEY)
        config[BUDGET_KEY] = (
            min(asked, verdict.max_tokens) if _positive_int(asked) else verdict.max_tokens
        )
    thinking = config.get(THINKING_CONFIG) if config is not None else None
    if config is not None and isinstance(thinking, Mapping):
        config[THINKING_CONFIG] = thinking_within(thinking, verdict)
    if config is not None and config != given:
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


def wants_sse(query: str | bytes) -> bool:
    """Whether a call's query asks for an event stream (``alt=sse``)."""
    if not query:
        return False
    text = query.decode("latin-1") if isinstance(query, bytes) else query
    return parse_qs(text).get("alt", [""])[-1] == "sse"


@dataclass(frozen=True, slots=True)
class GeminiCall:
    """One Gemini call's shapes: its model, and how it streams (its path and
    query say it, never its body). A shape module as
    :class:`curfew_client.shapes.ShapeModule` describes it, so a gateway acts
    on a Gemini call as on the others::

        shape = gemini_shapes.call_at(request.path, request.query_string)
        body = shape.apply_verdict(body, verdict)
        payload, content_type = shape.short_circuit_body(body, verdict.reply)
    """

    model: str
    #: ``:streamGenerateContent``.
    stream: bool = False
    #: ``alt=sse``: an event stream; without it a stream is a JSON array.
    alt_sse: bool = False

    def apply_verdict(self, body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
        return apply_verdict(body, verdict)

    def answer(self, body: Mapping[str, Any], text: str) -> dict[str, Any]:
        return answer(self.model, text)

    def answer_events(
        self, body: Mapping[str, Any], text: str
    ) -> Sequence[tuple[str | None, dict[str, Any]]]:
        return [(None, answer(self.model, text))]

    def short_circuit_body(self, body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
        return short_circuit_body(self.model, text, stream=self.stream, alt_sse=self.alt_sse)


def call_at(path: str, query: str | bytes = "") -> GeminiCall:
    """The call a gateway was called on, from its path
    (``/v1beta/models/<model>:generateContent`` or ``:streamGenerateContent``;
    a query after ``?`` is read too) and its query; ``ValueError`` for a path
    that is neither method."""
    path, _, rest = path.partition("?")
    model, _, method = unquote(path.rsplit("/", 1)[-1]).rpartition(":")
    if method not in (GENERATE, STREAM) or not model:
        raise ValueError(f"not a Gemini generateContent path: {path!r}")
    return GeminiCall(model, stream=method == STREAM, alt_sse=wants_sse(query or rest))
