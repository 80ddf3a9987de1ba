"""The fake upstream's answers past chat completions: the Responses API (a
``response`` or its named event stream, and one stored response to read or
delete), embeddings, and legacy completions.

Plain functions of the request, so :class:`~curfew_testkit.fake_upstream.FakeUpstream`
records, fails, gates and streams them exactly as it does chat (its gate holds a
stream after the first event).
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from curfew_testkit.fake_reply import REPLY_TEXT, REPLY_WORDS

RESPONSES_USAGE = {
    "input_tokens": 11,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 16,
}
COMPLETIONS_USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
#: The one response the fake has stored, for ``GET``/``DELETE /responses/<id>``.
STORED_RESPONSE_ID = "resp_fake_stored"
EMBEDDING = [0.25, -0.5, 1.0]
RESPONSE_ID = "resp_fake_1"
ITEM_ID = "msg_fake_1"

#: ``(SSE events to stream when asked, the JSON answer otherwise)``.
Answer = tuple[list[bytes], dict[str, Any]]


def more_answers(path: str, request: dict[str, Any]) -> Answer | None:
    """The answer for a POST to ``path``, or None when it is not one of these."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/responses"):
        return responses_events(request), response(request, status="completed")
    if path.endswith("/embeddings"):
        return [], embeddings(request)
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        return completion_events(request), text_completion(request)
    return None


def stored_response(path: str) -> dict[str, Any] | None:
    """The stored response when ``path`` names it (``…/responses/<id>``)."""
    if path.split("?", 1)[0].rstrip("/").endswith(f"/responses/{STORED_RESPONSE_ID}"):
        return {**response({"model": "fake-model"}, status="completed"), "id": STORED_RESPONSE_ID}
    return None


def _message(text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "id": ITEM_ID,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content if text or status == "completed" else [],
    }


def response(request: dict[str, Any], *, status: str) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": request.get("model", "fake-model"),
        "output": [_message(REPLY_TEXT, "completed")] if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": None,
        "top_p": None,
        "usage": RESPONSES_USAGE if done else None,
        "metadata": {},
    }


def _named(name: str, number: int, data: dict[str, Any]) -> bytes:
    payload = {"type": name, "sequence_number": number, **data}
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def responses_events(request: dict[str, Any]) -> list[bytes]:
    where = {"item_id": ITEM_ID, "output_index": 0, "content_index": 0}
    empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    full = {**empty, "text": REPLY_TEXT}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response(request, status="in_progress")}),
        ("response.in_progress", {"response": response(request, status="in_progress")}),
        ("response.output_item.added", {"output_index": 0, "item": _message("", "in_progress")}),
        ("response.content_part.added", {**where, "part": empty}),
    ]
    steps += [
        ("response.output_text.delta", {**where, "delta": word, "logprobs": []})
        for word in REPLY_WORDS
    ]
    steps += [
        ("response.output_text.done", {**where, "text": REPLY_TEXT, "logprobs": []}),
        ("response.content_part.done", {**where, "part": full}),
        (
            "response.output_item.done",
            {"output_index": 0, "item": _message(REPLY_TEXT, "completed")},
        ),
        ("response.completed", {"response": response(request, status="completed")}),
    ]
    return [_named(name, number, data) for number, (name, data) in enumerate(steps)]


def embeddings(request: dict[str, Any]) -> dict[str, Any]:
    """One vector per input, as floats or (the SDK's default) base64 float32."""
    given = request.get("input")
    count = len(given) if isinstance(given, list) and given and not isinstance(given[0], int) else 1
    vector: Any = EMBEDDING
    if request.get("encoding_format") == "base64":
        vector = base64.b64encode(struct.pack(f"<{len(EMBEDDING)}f", *EMBEDDING)).decode()
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vector} for i in range(count)],
        "model": request.get("model", "fake-embedding"),
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    }


def _text_completion(request: dict[str, Any], choices: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 1_700_000_000,
        "model": request.get("model", "fake-model"),
        "choices": choices,
        **extra,
    }


def text_completion(request: dict[str, Any]) -> dict[str, Any]:
    choice = {"text": REPLY_TEXT, "index": 0, "logprobs": None, "finish_reason": "stop"}
    return _text_completion(request, [choice], usage=COMPLETIONS_USAGE)


def completion_events(request: dict[str, Any]) -> list[bytes]:
    def event(text: str, finish: str | None) -> bytes:
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": finish}
        return b"data: " + json.dumps(_text_completion(request, [choice])).encode() + b"\n\n"

    return [*(event(word, None) for word in REPLY_WORDS), event("", "stop"), b"data: [DONE]\n\n"]
