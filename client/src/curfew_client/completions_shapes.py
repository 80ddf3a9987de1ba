"""OpenAI legacy completions shapes (``POST /v1/completions``): apply a verdict
to a request body, and the short-circuit answer (a ``text_completion`` or its
SSE stream).

Standard library only and no Django, like :mod:`curfew_client.openai_shapes`.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Mapping
from typing import Any

from curfew_client import sse
from curfew_client.openai_shapes import (
    MAX_CHOICES,
    VerdictLike,
    positive_budget,
    wants_stream,
    zero_usage,
)

#: The legacy API's ``max_tokens`` default: a request that names no budget gets
#: 16 tokens. A clamp is ``min``, never a raise, so when the client set none the
#: budget is set explicitly to ``min(16, verdict)``: the curfew never lets a
#: winding request write more than the client would have had by default.
DEFAULT_MAX_TOKENS = 16


def apply_verdict(body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
    """A new legacy completions body with ``max_tokens`` clamped (``min``, set
    explicitly when absent, from :data:`DEFAULT_MAX_TOKENS`).

    The budget is all a verdict acts on here: the legacy API has no system
    prompt (a persona written into ``prompt`` would become text to continue,
    not an instruction), no tools and no reasoning effort. A verdict with no
    budget gives back an equal body."""
    out = dict(body)
    verdict_max_tokens = verdict.max_tokens
    if verdict_max_tokens is not None:
        asked = positive_budget(out.get("max_tokens"))
        out["max_tokens"] = min(DEFAULT_MAX_TOKENS if asked is None else asked, verdict_max_tokens)
    return out


def completion_id() -> str:
    return f"cmpl-curfew-{secrets.token_hex(12)}"


def choice_count(body: Mapping[str, Any]) -> int:
    """How many choices OpenAI would answer with: ``n`` per prompt (a list of
    strings or of token lists is one prompt each)."""
    n = body.get("n")
    per_prompt = (
        n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_CHOICES else 1
    )
    prompt = body.get("prompt")
    prompts = 1
    if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        prompts = len(prompt)
    return max(1, min(per_prompt * prompts, MAX_CHOICES))


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    return model if isinstance(model, str) and model else "curfew"


def _choice(index: int, text: str, finish: str | None) -> dict[str, Any]:
    return {"text": text, "index": index, "logprobs": None, "finish_reason": finish}


def answer(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The non-streaming answer: a ``text_completion``, one choice per expected
    choice, each ``text``, and zero usage."""
    return _answer(
        text,
        id=completion_id(),
        created=int(time.time()),
        model=_model(body),
        count=choice_count(body),
    )


def _answer(text: str, *, id: str, created: Any, model: str, count: int) -> dict[str, Any]:
    """``answer`` for these values (the real ones, or a template's holes)."""
    return {
        "id": id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": [_choice(index, text, "stop") for index in range(count)],
        "usage": zero_usage(),
    }


def answer_chunks(body: Mapping[str, Any], text: str) -> list[dict[str, Any]]:
    """The streaming answer as ``text_completion`` chunks: the text, then the
    ``stop`` chunk (per choice); the zero usage rides on the last chunk, as it
    does in the chat stream when no usage chunk was asked for."""
    return _chunks(
        text,
        id=completion_id(),
        created=int(time.time()),
        model=_model(body),
        count=choice_count(body),
    )


def _chunks(text: str, *, id: str, created: Any, model: str, count: int) -> list[dict[str, Any]]:
    """``answer_chunks`` for these values (the real ones, or a template's holes)."""
    base = {
        "id": id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "system_fingerprint": None,
    }
    chunks: list[dict[str, Any]] = []
    for index in range(count):
        chunks.append({**base, "choices": [_choice(index, text, None)]})
        chunks.append({**base, "choices": [_choice(index, "", "stop")]})
    chunks[-1]["usage"] = zero_usage()
    return chunks


def answer_events(body: Mapping[str, Any], text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """``answer_chunks`` as ``(event name, chunk)`` pairs (the names are ``None``:
    the legacy stream names no events), as every shape module gives them."""
    return [(None, chunk) for chunk in answer_chunks(body, text)]


@functools.lru_cache(maxsize=32)
def _template(stream: bool, count: int) -> sse.Template:
    """The answer's body (``answer_events``' stream, or ``answer``'s JSON) with
    a hole for every value a request changes."""
    holes = {"id": sse.hole("id"), "created": sse.hole("created"), "model": sse.hole("model")}
    if not stream:
        return sse.Template.of_json(_answer(sse.hole("reply"), **holes, count=count))
    chunks = _chunks(sse.hole("reply"), **holes, count=count)
    return sse.Template.of_stream([(None, chunk) for chunk in chunks], done=True)


def short_circuit_body(body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
    """``(payload, content_type)``: JSON, or an SSE stream ending ``[DONE]``.

    The very bytes of ``sse.stream(answer_events(...), done=True)`` or
    ``json.dumps(answer(...))``, from a template: only the request's values are
    encoded."""
    stream = wants_stream(body)
    payload = _template(stream, choice_count(body)).fill(
        {
            "reply": sse.value(text),
            "id": sse.value(completion_id()),
            "created": str(int(time.time())),
            "model": sse.value(_model(body)),
        }
    )
    return payload, sse.CONTENT_TYPE if stream else "application/json"
