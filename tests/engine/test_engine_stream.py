"""The synthetic stream of a canned reply: exact events, exact order, real zero usage."""

from __future__ import annotations

import json

from engine_support import cn_schedule, local

from curfew_core.engine import RequestContext, decide, synthetic_stream


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


def test_off_duty_verdict_carries_the_stream() -> None:
    verdict = decide(local(2026, 9, 29, 10, 0), cn_schedule())
    assert verdict.stream == expected_stream("。")
    payload = verdict.as_dict()
    assert payload["stream"] == expected_stream("。")
    json.dumps(payload)  # JSON-ready


def test_lights_out_verdict_carries_the_stream() -> None:
    verdict = decide(local(2026, 9, 30, 3, 10), cn_schedule(lights_out_reply="Zzz"))
    assert verdict.stream == expected_stream("Zzz")


def test_no_stream_without_a_reply() -> None:
    assert decide(local(2026, 9, 29, 20, 0), cn_schedule()).stream is None
    assert decide(local(2026, 9, 29, 23, 30), cn_schedule()).stream is None
    exempt = decide(local(2026, 9, 29, 10, 0), cn_schedule(), RequestContext(purpose="title"))
    assert exempt.stream is None
    assert exempt.as_dict()["stream"] is None


def test_stream_is_fresh_each_time() -> None:
    verdict = decide(local(2026, 9, 29, 10, 0), cn_schedule())
    first = verdict.stream
    assert first is not None
    first[1]["text"] = "tampered"
    assert verdict.stream == expected_stream("。")
