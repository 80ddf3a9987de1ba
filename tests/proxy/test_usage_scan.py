"""Reading the upstream's usage off its answer, whatever the protocol."""

from __future__ import annotations

import json

import pytest

from curfew_core.proxy.usage import UsageScan, asked_budget


def sse(*events: dict[str, object]) -> bytes:
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)


def fed(scan: UsageScan, data: bytes, size: int) -> tuple[int | None, int | None]:
    for start in range(0, len(data), size):
        scan.feed(data[start : start + size])
    return scan.tokens


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_anthropics_stream_in_any_chunking(size: int) -> None:
    stream = sse(
        {"type": "message_start", "message": {"usage": {"input_tokens": 11, "output_tokens": 1}}},
        {"type": "content_block_delta", "delta": {"text": 'say "usage": 99'}},
        {"type": "message_delta", "usage": {"output_tokens": 42}},
    )
    assert fed(UsageScan(sse=True), stream, size) == (11, 42)


def test_the_responses_apis_completed_event() -> None:
    stream = sse(
        {"type": "response.created", "response": {"usage": None}},
        {
            "type": "response.completed",
            "response": {"usage": {"input_tokens": 3, "output_tokens": 4}},
        },
    )
    assert fed(UsageScan(sse=True), stream, 50) == (3, 4)


def test_a_json_answer_whose_text_mentions_usage() -> None:
    body = json.dumps(
        {
            "choices": [{"message": {"content": 'the "usage": {"prompt_tokens": 9} field'}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5},
        }
    ).encode()
    assert fed(UsageScan(sse=False), body, 13) == (11, 5)


@pytest.mark.parametrize(
    "body", [b"", b"{}", b'{"usage": null}', b'{"usage": {"prompt_tokens": -1}}', b"not json"]
)
def test_no_usage_is_unknown(body: bytes) -> None:
    assert fed(UsageScan(sse=False), body, 5) == (None, None)


def test_a_stream_without_usage_is_unknown() -> None:
    stream = sse({"choices": [{"delta": {"content": "hi"}}]}) + b"data: [DONE]\n\n"
    assert fed(UsageScan(sse=True), stream, 9) == (None, None)


@pytest.mark.parametrize(
    ("body", "budget"),
    [
        ({"max_tokens": 100}, 100),
        ({"max_tokens": 100, "max_completion_tokens": 50}, 50),
        ({"max_output_tokens": 70}, 70),
        ({"max_tokens": True}, None),
        ({"max_tokens": "100"}, None),
        ({}, None),
    ],
)
def test_the_budget_asked(body: dict[str, object], budget: int | None) -> None:
    assert asked_budget(body) == budget
