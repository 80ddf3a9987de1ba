"""OpenAI Responses API shapes (``POST /v1/responses``): apply a verdict to a
request body, and the short-circuit answer (a ``response`` object or its SSE
event stream).

The sibling of :mod:`curfew_client.openai_shapes` for the newer API, shared by
the gateway client and the proxy so both act on a verdict in exactly one way.
Standard library only and no Django.

The answer is what the real SDK parses (``openai.types.responses.Response`` and
its stream events, read from the SDK itself): every field that model requires,
one completed assistant message, and an explicit zero ``usage``. ``output_text``
is not sent: it is not a wire field, the SDK computes it from ``output``.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from curfew_client import sse
from curfew_client.openai_shapes import REASONING_ORDER, VerdictLike, positive_budget

#: OpenAI refuses a Responses request whose ``max_output_tokens`` is below 16
#: (HTTP 400 ``integer_below_min_value``; the SDK does not check it, the API
#: does). A verdict's clamp below this floor would turn a winding turn into an
#: error, so the clamp never goes below it; a client's own smaller value is
#: still never raised (that error, if any, is the client's own).
MIN_OUTPUT_TOKENS = 16
#: Dropped when tools are denied: the tools and everything that steers them.
TOOL_KEYS = ("tools", "tool_choice", "parallel_tool_calls")
#: ``text.format.type`` values that ask for structured output: a canned sentence
#: is not valid JSON, so the answer is a refusal, which ``responses.parse``
#: reports as one instead of failing to parse it.
STRUCTURED_FORMATS = ("json_schema", "json_object")


def zero_usage() -> dict[str, Any]:
    """A fresh all-zero Responses ``usage``, detail objects included."""
    return {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }


# -- the request --------------------------------------------------------------


def _with_persona(instructions: Any, persona: str) -> Any:
    """``instructions`` with ``persona`` appended: after a non-empty string, as a
    developer message after a list of input items, or alone."""
    if isinstance(instructions, str) and instructions.strip():
        return f"{instructions}\n\n{persona}"
    if isinstance(instructions, list) and instructions:
        return [*instructions, {"type": "message", "role": "developer", "content": persona}]
    return persona


def apply_verdict(body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
    """A new Responses request body that obeys ``verdict`` (``body`` is not modified).

    Acts only on what the verdict sets, so an on-duty, exempt or dry-run verdict
    gives back an equal body.

    - budget: ``max_output_tokens`` is ``min`` of the client's and the verdict's,
      never a raise, and set explicitly when the client gave none. The verdict's
      side is floored at :data:`MIN_OUTPUT_TOKENS`, the least OpenAI accepts;
    - persona: appended to ``instructions`` (the Responses system prompt);
    - tools denied: ``tools``, ``tool_choice`` and ``parallel_tool_calls`` dropped;
    - reasoning effort: ``reasoning.effort`` lowered to the verdict's, never raised.
    """
    out = dict(body)
    if verdict.max_tokens is not None:
        ceiling = max(verdict.max_tokens, MIN_OUTPUT_TOKENS)
        current = positive_budget(out.get("max_output_tokens"))
        out["max_output_tokens"] = ceiling if current is None else min(current, ceiling)
    if verdict.persona:
        out["instructions"] = _with_persona(out.get("instructions"), verdict.persona)
    if verdict.tools == "deny":
        for key in TOOL_KEYS:
            out.pop(key, None)
    if verdict.reasoning_effort is not None:
        reasoning = out.get("reasoning")
        settings = dict(reasoning) if isinstance(reasoning, Mapping) else {}
        current = settings.get("effort")
        wanted = verdict.reasoning_effort
        if current in REASONING_ORDER and wanted in REASONING_ORDER:
            wanted = min(current, wanted, key=REASONING_ORDER.index)
        out["reasoning"] = {**settings, "effort": wanted}
    return out


def wants_stream(body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


def wants_structured(body: Mapping[str, Any]) -> bool:
    """Whether the request asks for JSON (``text.format.type``)."""
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    return isinstance(fmt, Mapping) and fmt.get("type") in STRUCTURED_FORMATS


def forces_tool(body: Mapping[str, Any]) -> bool:
    """The request demands a tool call: ``tool_choice`` ``"required"``, or an
    object naming one (a function, a custom or hosted tool), or
    ``allowed_tools`` in ``required`` mode."""
    choice = body.get("tool_choice")
    if choice == "required":
        return True
    if not isinstance(choice, Mapping):
        return False  # "auto", "none", or nothing we know
    if choice.get("type") == "allowed_tools":
        return choice.get("mode") == "required"
    return True


def wants_refusal(body: Mapping[str, Any]) -> bool:
    """A ``refusal`` part, not ``output_text``: the client parses JSON or
    demands a tool call, and would fail on (or ask again after) a sentence;
    see ``openai_shapes.wants_refusal``."""
    return wants_structured(body) or forces_tool(body)


# -- the short-circuit answer -------------------------------------------------


def response_id() -> str:
    return f"resp_curfew_{secrets.token_hex(12)}"


def _item_id() -> str:
    return f"msg_curfew_{secrets.token_hex(12)}"


def _part(refusal: bool, text: str) -> dict[str, Any]:
    if refusal:
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _integer(value: Any) -> Any:
    return value if isinstance(value, int) else None


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


#: What a response echoes of each request setting, in the response's order,
#: from the request's value of that key alone (``None`` when it has none):
#: the value when it is of the right kind, else the default (made fresh, as an
#: answer is the caller's to change).
_ECHO: dict[str, Callable[[Any], Any]] = {
    "instructions": lambda value: value if isinstance(value, (str, list)) else None,
    "max_output_tokens": lambda value: None if isinstance(value, bool) else _integer(value),
    "model": lambda value: value if isinstance(value, str) and value else "curfew",
    "parallel_tool_calls": lambda value: value if isinstance(value, bool) else True,
    "previous_response_id": lambda value: value if isinstance(value, str) else None,
    "reasoning": lambda value: value if isinstance(value, dict) else None,
    "temperature": _number,
    "text": lambda value: value if isinstance(value, Mapping) else {"format": {"type": "text"}},
    "tool_choice": lambda value: value if isinstance(value, (str, dict)) else "auto",
    "tools": lambda value: value if isinstance(value, list) else [],
    "top_p": _number,
    "metadata": lambda value: value if isinstance(value, dict) else {},
}


def _settings(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a response echoes of the request, by its key in the response."""
    return {key: echo(body.get(key)) for key, echo in _ECHO.items()}


def _response(
    settings: Mapping[str, Any],
    *,
    id: str,
    created_at: Any,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    """A ``response`` object echoing the request's ``settings``, as OpenAI's does."""
    return {
        "id": id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "completed_at": created_at if status == "completed" else None,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": settings["instructions"],
        "max_output_tokens": settings["max_output_tokens"],
        "max_tool_calls": None,
        "model": settings["model"],
        "output": output,
        "parallel_tool_calls": settings["parallel_tool_calls"],
        "previous_response_id": settings["previous_response_id"],
        "reasoning": settings["reasoning"],
        "store": False,
        "temperature": settings["temperature"],
        "text": settings["text"],
        "tool_choice": settings["tool_choice"],
        "tools": settings["tools"],
        "top_p": settings["top_p"],
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": settings["metadata"],
    }


def _message(item_id: str, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _answer(
    settings: Mapping[str, Any],
    text: str,
    *,
    refusal: bool,
    id: str,
    item_id: str,
    created_at: Any,
) -> dict[str, Any]:
    """``answer`` for these values (the real ones, or a template's holes)."""
    return _response(
        settings,
        id=id,
        created_at=created_at,
        status="completed",
        output=[_message(item_id, "completed", [_part(refusal, text)])],
        usage=zero_usage(),
    )


def answer(
    body: Mapping[str, Any], text: str, *, id: str | None = None, created_at: int | None = None
) -> dict[str, Any]:
    """The non-streaming answer: a completed ``response`` with one assistant
    message (a refusal when the request asked for structured output or forced
    a tool, see :func:`wants_refusal`), zero usage.

    ``store`` is false: nothing is stored upstream under this id, so a later
    ``previous_response_id`` pointing at it is the upstream's to refuse.
    """
    return _answer(
        _settings(body),
        text,
        refusal=wants_refusal(body),
        id=id or response_id(),
        item_id=_item_id(),
        created_at=int(time.time()) if created_at is None else created_at,
    )


def _events(
    settings: Mapping[str, Any],
    text: str,
    *,
    refusal: bool,
    id: str,
    item_id: str,
    created_at: Any,
) -> list[tuple[str, dict[str, Any]]]:
    """The stream's ``(event name, data)`` pairs for these values (the real
    ones, or a template's holes)."""
    done_part = _part(refusal, text)
    empty_part = {**done_part, "refusal": ""} if refusal else {**done_part, "text": ""}
    kind = "refusal" if refusal else "output_text"
    done_key = "refusal" if refusal else "text"
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    text_extra: dict[str, Any] = {} if refusal else {"logprobs": []}
    in_progress = _response(
        settings, id=id, created_at=created_at, status="in_progress", output=[], usage=None
    )
    done_item = _message(item_id, "completed", [done_part])
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": in_progress}),
        ("response.in_progress", {"response": in_progress}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": _message(item_id, "in_progress", [])},
        ),
        ("response.content_part.added", {**where, "part": empty_part}),
        (f"response.{kind}.delta", {**where, "delta": text, **text_extra}),
        (f"response.{kind}.done", {**where, done_key: text, **text_extra}),
        ("response.content_part.done", {**where, "part": done_part}),
        ("response.output_item.done", {"output_index": 0, "item": done_item}),
        (
            "response.completed",
            {
                "response": _response(
                    settings,
                    id=id,
                    created_at=created_at,
                    status="completed",
                    output=[done_item],
                    usage=zero_usage(),
                )
            },
        ),
    ]
    return [
        (name, {"type": name, "sequence_number": number, **data})
        for number, (name, data) in enumerate(events)
    ]


def answer_events(body: Mapping[str, Any], text: str) -> list[tuple[str, dict[str, Any]]]:
    """The streaming answer: ``(event name, data)`` in OpenAI's order, each with
    its ``sequence_number``; the lifecycle events carry the same response id."""
    return _events(
        _settings(body),
        text,
        refusal=wants_refusal(body),
        id=response_id(),
        item_id=_item_id(),
        created_at=int(time.time()),
    )


def _holes() -> dict[str, Any]:
    """A hole for every value a request changes in an answer, as ``_answer``
    and ``_events`` take them."""
    return {
        "settings": {key: sse.hole(key) for key in _settings({})},
        "text": sse.hole("reply"),
        "id": sse.hole("id"),
        "item_id": sse.hole("item_id"),
        "created_at": sse.hole("created_at"),
    }


@functools.cache
def _stream_template(refusal: bool) -> sse.Template:
    """``answer_events``' body with a hole for every value a request changes."""
    return sse.Template.of_stream(_events(**_holes(), refusal=refusal), done=False)


@functools.cache
def _answer_template(refusal: bool) -> sse.Template:
    """``answer``'s JSON with a hole for every value a request changes."""
    return sse.Template.of_json(_answer(**_holes(), refusal=refusal))


#: Each echoed setting's JSON when the request does not set it: a setting
#: depends on the request's key of its own name only (``_ECHO``), so only the
#: keys a request has are echoed and encoded per request (most set ``model`` only).
_UNSET = {key: sse.value(setting) for key, setting in _settings({}).items()}


def _values(body: Mapping[str, Any], text: str) -> dict[str, str]:
    """What fills the holes for ``body`` and ``text``: their JSON, fresh ids, now."""
    values = _UNSET.copy()
    for key in _ECHO.keys() & body.keys():
        values[key] = sse.value(_ECHO[key](body[key]))
    values["reply"] = sse.value(text)
    values["id"] = sse.value(response_id())
    values["item_id"] = sse.value(_item_id())
    values["created_at"] = str(int(time.time()))
    return values


def short_circuit_body(body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
    """The answer to ``body`` with ``text``, streamed or not as it asked:
    ``(payload, content_type)``. The Responses stream has no ``[DONE]``:
    ``response.completed`` is its end.

    The very bytes of ``sse.stream(answer_events(...))`` or ``json.dumps(answer(...))``,
    from a template: only the request's values are encoded."""
    refusal, values = wants_refusal(body), _values(body, text)
    if wants_stream(body):
        return _stream_template(refusal).fill(values), sse.CONTENT_TYPE
    return _answer_template(refusal).fill(values), "application/json"
