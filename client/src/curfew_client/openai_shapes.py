"""OpenAI chat-completions shapes: apply a verdict to a request body, and the
short-circuit answer (a ``chat.completion`` or its SSE ``chat.completion.chunk``
stream) shaped for the request: ``answer`` / ``answer_events``.

Shared by the gateway client (any Python gateway) and the proxy, so both act on
a verdict in exactly one way. Standard library only and no Django: the client
must be importable in a gateway that has never heard of Django.
"""

from __future__ import annotations

import functools
import math
import secrets
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, get_args

from curfew_client import sse

#: The two names a chat request's reply budget goes by.
BUDGET_KEYS = ("max_tokens", "max_completion_tokens")
#: Older function-calling keys are tools too: drop them all when tools are denied.
TOOL_KEYS = ("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls")
#: Roles that carry the system prompt (``developer`` is its name for newer OpenAI models).
SYSTEM_ROLES = ("system", "developer")
#: Cheapest first: a winding effort only ever lowers the client's choice.
REASONING_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh")

BudgetKey = Literal["max_tokens", "max_completion_tokens"]

#: When the client set no budget the clamp has to be set explicitly, under one
#: name. ``max_completion_tokens`` is the modern chat-completions name (OpenAI's
#: reasoning models refuse ``max_tokens``), but the proxy's upstream is "any
#: OpenAI-compatible API": DeepSeek, vLLM, llama.cpp, Ollama and most others
#: know only ``max_tokens`` and silently ignore the other name, which would make
#: the clamp a no-op exactly where it matters. A clamp that is ignored is worse
#: than one that is refused loudly, so the default is ``max_tokens``; a gateway
#: in front of OpenAI's reasoning models passes ``default_budget_key``.
DEFAULT_BUDGET_KEY: BudgetKey = "max_tokens"

#: The name(s) an operator can force on the upstream's budget
#: (``CURFEW_UPSTREAM_BUDGET_KEY``): one of the two names, or ``both``.
UpstreamBudgetKey = Literal["max_tokens", "max_completion_tokens", "both"]
#: Declared once, here; the setting's start-up check reads its choices from this.
UPSTREAM_BUDGET_KEYS: tuple[UpstreamBudgetKey, ...] = get_args(UpstreamBudgetKey)

#: ``response_format`` types whose client parses the reply as JSON: a canned
#: sentence in ``content`` would be a validation error there, so it goes in
#: ``refusal`` (the documented "the model declined" channel) instead.
STRUCTURED_FORMATS = ("json_schema", "json_object")
#: The most choices a short-circuit answer carries. ``n`` is not validated (the
#: upstream would judge it, by its own rules, on duty); off duty it is clamped
#: into ``1..MAX_CHOICES`` so a typo or a hostile ``n`` cannot make a huge answer.
MAX_CHOICES = 128


class VerdictLike(Protocol):
    """What acting on a verdict reads: the engine's ``Verdict`` and the client's
    ``CurfewVerdict`` both fit."""

    @property
    def max_tokens(self) -> int | None: ...
    @property
    def persona(self) -> str | None: ...
    @property
    def tools(self) -> str: ...
    @property
    def reasoning_effort(self) -> str | None: ...


def zero_usage() -> dict[str, Any]:
    """A fresh all-zero ``usage``: explicit zeros, with the detail objects cost
    ledgers read, because a ledger must see a real zero, not a missing turn."""
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


# -- the request --------------------------------------------------------------


def requested_budget(body: Mapping[str, Any]) -> int | None:
    """The tightest budget the client asked for under either name, if any."""
    values = [
        value
        for key in BUDGET_KEYS
        if isinstance(value := body.get(key), int) and not isinstance(value, bool) and value > 0
    ]
    return min(values) if values else None


def wants_stream(body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


def wants_usage_chunk(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, Mapping) and options.get("include_usage") is True


def wants_structured(body: Mapping[str, Any]) -> bool:
    """The client will parse the reply as JSON (``response_format`` of type
    ``json_schema`` or ``json_object``)."""
    response_format = body.get("response_format")
    return (
        isinstance(response_format, Mapping) and response_format.get("type") in STRUCTURED_FORMATS
    )


def forces_tool(body: Mapping[str, Any]) -> bool:
    """The client demands a tool call: ``tool_choice`` ``"required"``, a named
    function or custom tool, ``allowed_tools`` in ``required`` mode, or the
    older ``function_call`` naming a function. ``"auto"``, ``"none"`` and
    anything odd force nothing."""
    choice = body.get("tool_choice")
    if choice == "required":
        return True
    if isinstance(choice, Mapping):
        kind = choice.get("type")
        if kind == "allowed_tools":
            allowed = choice.get("allowed_tools")
            return isinstance(allowed, Mapping) and allowed.get("mode") == "required"
        return kind in ("function", "custom")
    legacy = body.get("function_call")
    return isinstance(legacy, Mapping) and "name" in legacy


def wants_refusal(body: Mapping[str, Any]) -> bool:
    """The canned sentence must go in ``refusal``, not ``content``: the client
    parses the reply as JSON (:func:`wants_structured`) or demands a tool call
    (:func:`forces_tool`), so a sentence in ``content`` is an answer it cannot
    use, and agents (pydantic-ai, the Agents SDK) ask again and fail with an
    error that never names the curfew. A refusal is the documented "the model
    declined" answer each of them reports as such, at once."""
    return wants_structured(body) or forces_tool(body)


def positive_budget(value: Any) -> int | None:
    """``value`` when it is a budget we can compare with (a positive int, not a bool)."""
    valid = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if valid else None


def choice_count(body: Mapping[str, Any]) -> int:
    """How many choices the answer has: the client's ``n`` clamped into
    ``1..MAX_CHOICES``; 1 when it is missing or not a whole number."""
    n = body.get("n")
    if not isinstance(n, int) or isinstance(n, bool):
        return 1
    return max(1, min(n, MAX_CHOICES))


def _with_persona(messages: list[Any], persona: str) -> list[Any]:
    """The messages with ``persona`` appended to the (first) system message,
    or a system message of its own in front when there is none."""
    out = list(messages)
    for index, message in enumerate(out):
        if not isinstance(message, Mapping) or message.get("role") not in SYSTEM_ROLES:
            continue
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            new_content: Any = f"{content}\n\n{persona}"
        elif isinstance(content, list):
            new_content = [*content, {"type": "text", "text": persona}]
        else:
            new_content = persona
        out[index] = {**message, "content": new_content}
        return out
    return [{"role": "system", "content": persona}, *out]


def _clamp_budget(
    out: dict[str, Any],
    limit: int,
    budget_key: UpstreamBudgetKey | None,
    default_budget_key: BudgetKey,
) -> None:
    if budget_key is not None:
        # The upstream reads one name (or both, by the operator's choice): the
        # tightest of everything the client gave and the verdict, under exactly
        # the configured name(s); a name the upstream would ignore is removed.
        asked = requested_budget(out)
        value = limit if asked is None else min(asked, limit)
        for key in BUDGET_KEYS:
            out.pop(key, None)
        for key in BUDGET_KEYS if budget_key == "both" else (budget_key,):
            out[key] = value
        return
    present = [key for key in BUDGET_KEYS if key in out and out[key] is not None]
    for key in present:
        current = out[key]
        if isinstance(current, int) and not isinstance(current, bool) and current > 0:
            out[key] = min(current, limit)
        else:
            # Not a budget we can compare with: ours is the only sane one.
            out[key] = limit
    if not present:
        out[default_budget_key] = limit


def apply_verdict(
    body: Mapping[str, Any],
    verdict: VerdictLike,
    *,
    default_budget_key: BudgetKey = DEFAULT_BUDGET_KEY,
    budget_key: UpstreamBudgetKey | None = None,
) -> dict[str, Any]:
    """A new request body that obeys ``verdict`` (``body`` is not modified).

    Acts only on what the verdict sets, so an on-duty, exempt or dry-run verdict
    (every field null, tools allowed) gives back an equal body.

    - budget: ``min``, never a raise. With ``budget_key`` unset (the default),
      each budget name the client gave is clamped on its own, and when it gave
      neither the verdict's is set explicitly under ``default_budget_key``.
      With ``budget_key`` set (the operator knows which name its upstream
      reads: many OpenAI-compatible providers ignore ``max_completion_tokens``,
      the only name langchain-openai sends), the upstream sees exactly that
      name, or both names with ``"both"``, carrying the tightest of the
      client's budgets (either name) and the verdict's; the other name is removed;
    - persona: appended to the system message (one is added when there is none);
    - tools denied: every tool and function-calling key dropped;
    - reasoning effort: lowered to the verdict's, never raised.
    """
    out = dict(body)
    if verdict.max_tokens is not None:
        _clamp_budget(out, verdict.max_tokens, budget_key, default_budget_key)
    messages = out.get("messages")
    if verdict.persona and isinstance(messages, list):
        # No messages list at all is the upstream's error to report, not ours to invent.
        out["messages"] = _with_persona(messages, verdict.persona)
    if verdict.tools == "deny":
        for key in TOOL_KEYS:
            out.pop(key, None)
    if verdict.reasoning_effort is not None:
        current = out.get("reasoning_effort")
        if current not in REASONING_ORDER or verdict.reasoning_effort not in REASONING_ORDER:
            out["reasoning_effort"] = verdict.reasoning_effort
        else:
            out["reasoning_effort"] = min(
                current, verdict.reasoning_effort, key=REASONING_ORDER.index
            )
    return out


# -- the short-circuit answer -------------------------------------------------


def completion_id() -> str:
    return f"chatcmpl-curfew-{secrets.token_hex(12)}"


def _model(model: Any) -> str:
    return model if isinstance(model, str) and model else "curfew"


def _message(text: str, refusal: bool) -> dict[str, Any]:
    if refusal:
        return {"role": "assistant", "content": None, "refusal": text}
    return {"role": "assistant", "content": text, "refusal": None}


def short_circuit_completion(
    text: str,
    *,
    model: Any = None,
    created: int | None = None,
    id: str | None = None,
    n: int = 1,
    refusal: bool = False,
) -> dict[str, Any]:
    """The non-streaming answer: a complete ``chat.completion``, zero usage,
    ``n`` identical choices; with ``refusal`` the text is ``message.refusal``
    and ``content`` is null (see ``answer``)."""
    return {
        "id": id or completion_id(),
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": _model(model),
        "system_fingerprint": None,
        "choices": [
            {
                "index": index,
                "message": _message(text, refusal),
                "logprobs": None,
                "finish_reason": "stop",
            }
            for index in range(max(1, n))
        ],
        "usage": zero_usage(),
    }


def short_circuit_chunks(
    text: str,
    *,
    model: Any = None,
    include_usage: bool = False,
    created: int | None = None,
    id: str | None = None,
    n: int = 1,
    refusal: bool = False,
) -> list[dict[str, Any]]:
    """The streaming answer as ``chat.completion.chunk`` objects, in order.

    Each chunk carries one choice, as OpenAI streams ``n > 1``: the role chunks
    of every choice, then their text, then their ``finish_reason``. With
    ``refusal`` the text streams as ``delta.refusal`` (``content`` null).

    Usage is never absent. When the client asked for it
    (``stream_options.include_usage``) it gets OpenAI's exact protocol: ``usage:
    null`` on every chunk, then a last chunk with no choices and the zero usage.
    When it did not ask, a chunk with empty ``choices`` could trip a client that
    reads ``choices[0]`` of every chunk, so the zero usage rides on the final
    (``finish_reason``) chunk instead, as DeepSeek sends it: present, and
    harmless to every client.
    """
    base = {
        "id": id or completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()) if created is None else created,
        "model": _model(model),
        "system_fingerprint": None,
    }

    def chunk(index: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        out = {
            **base,
            "choices": [
                {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
            ],
        }
        if include_usage:
            out["usage"] = None
        return out

    first: dict[str, Any] = (
        {"role": "assistant", "content": None, "refusal": ""}
        if refusal
        else {"role": "assistant", "content": ""}
    )
    said = {"refusal": text} if refusal else {"content": text}
    indexes = range(max(1, n))
    chunks = [chunk(index, dict(first), None) for index in indexes]
    chunks += [chunk(index, dict(said), None) for index in indexes]
    chunks += [chunk(index, {}, "stop") for index in indexes]
    if include_usage:
        chunks.append({**base, "choices": [], "usage": zero_usage()})
    else:
        chunks[-1]["usage"] = zero_usage()
    return chunks


def answer(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The non-streamed short-circuit ``chat.completion`` for the request ``body``.

    - ``response_format`` ``json_schema`` / ``json_object``: the text is the
      message's ``refusal`` and ``content`` is null. A structured client then
      takes its own refusal path (the openai SDK's ``parse`` gives
      ``parsed=None`` with ``refusal`` set; langchain-openai's
      ``with_structured_output`` raises ``OpenAIRefusalError``) instead of
      failing to validate a sentence as JSON
      (tests/proxy/test_proxy_chat_clients.py);
    - a forced ``tool_choice`` (``"required"``, a named function; see
      ``forces_tool``): the same refusal. No tool call is invented off duty
      (``finish_reason: "stop"``, no ``tool_calls``), and a text ``content``
      would make an agent ask again: pydantic-ai then raises its
      ``ContentFilterError`` carrying the refusal, after one request, and
      langchain's ``method="function_calling"`` its ``OpenAIRefusalError``;
    - ``n``: that many identical choices (see ``choice_count``).
    """
    return short_circuit_completion(
        text, model=body.get("model"), n=choice_count(body), refusal=wants_refusal(body)
    )


def answer_events(body: Mapping[str, Any], text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """The streamed short-circuit answer for ``body`` as ``(event name, chunk)``
    pairs; chat completions name no events, so every name is ``None``. The same
    rules as ``answer``, and the usage protocol of ``short_circuit_chunks``
    (``stream_options.include_usage`` honoured)."""
    chunks = short_circuit_chunks(
        text,
        model=body.get("model"),
        include_usage=wants_usage_chunk(body),
        n=choice_count(body),
        refusal=wants_refusal(body),
    )
    return [(None, chunk) for chunk in chunks]


#: One unnamed event (an OpenAI chunk), and the stream's end: ``sse``'s.
sse_event = sse.event
SSE_DONE = sse.DONE


@functools.lru_cache(maxsize=32)
def _template(stream: bool, include_usage: bool, n: int, refusal: bool) -> sse.Template:
    """The answer's body (``answer_events``' stream, or ``answer``'s JSON) with
    a hole for every value a request changes."""
    holes: dict[str, Any] = {
        "model": sse.hole("model"),
        "created": sse.hole("created"),  # filled with an int
        "id": sse.hole("id"),
        "n": n,
        "refusal": refusal,
    }
    if not stream:
        return sse.Template.of_json(short_circuit_completion(sse.hole("reply"), **holes))
    chunks = short_circuit_chunks(sse.hole("reply"), include_usage=include_usage, **holes)
    return sse.Template.of_stream([(None, chunk) for chunk in chunks], done=True)


def short_circuit_body(request_body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
    """The answer to ``request_body`` with ``text``, streamed or not as it asked:
    ``(payload, content_type)``.

    The very bytes of ``sse.stream(answer_events(...), done=True)`` or
    ``json.dumps(answer(...))``, from a template: only the request's values are
    encoded."""
    stream = wants_stream(request_body)
    template = _template(
        stream,
        stream and wants_usage_chunk(request_body),
        choice_count(request_body),
        wants_refusal(request_body),
    )
    payload = template.fill(
        {
            "reply": sse.value(text),
            "model": sse.value(_model(request_body.get("model"))),
            "created": str(int(time.time())),
            "id": sse.value(completion_id()),
        }
    )
    return payload, sse.CONTENT_TYPE if stream else "application/json"


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """OpenAI's error shape, so SDKs raise their usual exception with our message."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


# -- embeddings off duty ----------------------------------------------------------

#: The HTTP status of a refused embedding, and its error ``code`` and ``type``.
EMBEDDINGS_REFUSAL_STATUS = 503
EMBEDDINGS_REFUSAL_CODE = "curfew_off_duty"


def retry_after_seconds(valid_until: datetime, now: datetime) -> int:
    """Whole seconds from ``now`` until a verdict valid until ``valid_until``
    may change: at least 1, as ``Retry-After: 0`` would invite a busy loop."""
    return max(1, math.ceil((valid_until - now).total_seconds()))


def embeddings_refusal(state: str, retry_after: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The embeddings answer off duty (``state`` off-duty or lights-out): the
    JSON body and the headers of an HTTP ``EMBEDDINGS_REFUSAL_STATUS`` (503).

    There is no canned embedding: a vector made up by the curfew would be
    silently wrong data in someone's index, so the call is refused.

    Why 503 and not 429: nothing was over a rate limit; the service is not
    available *for this caller until a known time*, which is what 503 with
    ``Retry-After`` means to gateways, load balancers and HTTP caches alike. A
    429 would make gateways (LiteLLM, Portkey) put the deployment in a
    rate-limit cooldown and report quota trouble that does not exist.

    ``Retry-After`` is ``retry_after`` (seconds until the verdict may change,
    see ``retry_after_seconds``); ``X-Should-Retry: false`` tells the Stainless
    SDKs (openai, anthropic) to raise at once (``openai.InternalServerError``,
    ``code`` ``curfew_off_duty``) instead of retrying a refusal that will stand
    for hours. The proxy and the LiteLLM hook both answer with this.
    """
    body = error_body(
        f"the curfew is {state}: embeddings are not served until it lifts; "
        "retry after the Retry-After seconds",
        code=EMBEDDINGS_REFUSAL_CODE,
        type=EMBEDDINGS_REFUSAL_CODE,
    )
    headers = {
        "Retry-After": str(max(1, retry_after)),
        "X-Should-Retry": "false",
        "Cache-Control": "no-store",
    }
    return body, headers
