"""The synthetic stream of a canned reply: exact events, exact order, real zero usage."""

from __future__ import annotations

from curfew_client.wire import synthetic_stream


def expected_stream(text: str) -> list[dict[str, object]]:
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def test_synthetic_stream_exact_shape() -> None:
    stream = synthetic_stream("明天再说。")
    assert stream == expected_stream("明天再说。")
    # Order matters (a list compares in order); spell it out anyway.
    assert [event["type"] for event in stream] == [
        "block-start",
        "text-delta",
        "block-end",
        "usage",
        "finish",
    ]
    usage = stream[3]
    assert usage["inputTokens"] == usage["outputTokens"] == usage["totalTokens"] == 0
    assert all("type" in event for event in stream)


def test_stream_is_fresh_each_time() -> None:
    first = synthetic_stream("。")
    first[1]["text"] = "tampered"
    assert synthetic_stream("。") == expected_stream("。")
