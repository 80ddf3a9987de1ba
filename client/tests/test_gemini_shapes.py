"""Applying a verdict to a Gemini ``generateContent`` body in the client, as
Curfew's Gemini door does (it calls this very function): the reply budget,
the thinking budget and Gemini 3's thinking level; and a Gemini call's shapes
for a gateway (its path and query say how it streams, never its body)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest

from curfew_client import gemini_shapes, shapes, sse
from curfew_client.gemini_shapes import GeminiCall, apply_verdict, call_at


@dataclass(frozen=True)
class V:
    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


BODY: dict[str, Any] = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 4096, "topK": 3},
}


def thinking(**config: Any) -> dict[str, Any]:
    return {
        **BODY,
        "generationConfig": {
            **BODY["generationConfig"],
            "thinkingConfig": {**config, "includeThoughts": True},
        },
    }


def sent_thinking(body: dict[str, Any], verdict: V) -> Any:
    before = copy.deepcopy(body)
    out = apply_verdict(body, verdict)
    assert body == before  # never changed in place
    return out["generationConfig"].get("thinkingConfig")


@pytest.mark.parametrize(
    ("asked", "sent"),
    [
        (24576, 100),  # over the clamp: lowered to it
        (-1, 100),  # dynamic: as much as it likes, so the clamp
        (100, 100),
        (60, 60),  # below the clamp: never raised
        (0, 0),  # thinking off stays off
        (2048.0, 100),  # a number all the same
        (-5, -5),  # not a budget Gemini knows: the upstream's to refuse
        ("lots", "lots"),
        (None, None),
        (True, True),
    ],
)
def test_the_thinking_budget_is_clamped_by_min_with_the_reply_budget(asked: Any, sent: Any) -> None:
    assert sent_thinking(thinking(thinkingBudget=asked), V(max_tokens=100)) == {
        "thinkingBudget": sent,
        "includeThoughts": True,
    }


def test_no_thinking_is_added_and_without_a_reply_budget_none_is_clamped() -> None:
    # A model that cannot think (2.0 Flash) refuses a thinkingConfig: none is added.
    out = apply_verdict(BODY, V(max_tokens=100, reasoning_effort="low"))
    assert out["generationConfig"] == {"maxOutputTokens": 100, "topK": 3}
    assert sent_thinking(thinking(includeThoughts=False), V(max_tokens=100)) == {
        "includeThoughts": True
    }
    # On duty (nothing set): the body as sent, thinking and all.
    for body in (thinking(thinkingBudget=-1), thinking(thinkingLevel="high")):
        assert apply_verdict(body, V()) == body
    # A persona alone clamps no budget.
    assert sent_thinking(thinking(thinkingBudget=24576), V(persona="late")) == {
        "thinkingBudget": 24576,
        "includeThoughts": True,
    }
    odd = {**BODY, "generationConfig": {"thinkingConfig": "high"}}
    assert apply_verdict(odd, V(max_tokens=100))["generationConfig"]["thinkingConfig"] == "high"


@pytest.mark.parametrize(
    ("level", "effort", "sent"),
    [
        ("high", "low", "low"),
        ("HIGH", "low", "LOW"),  # the google-genai SDK's spelling, kept
        ("high", "minimal", "low"),  # low: the least every Gemini 3 model takes
        ("high", "medium", "low"),  # 3 Pro refuses medium
        ("medium", "minimal", "low"),
        ("high", "high", "high"),
        ("high", "xhigh", "high"),  # never raised
        ("low", "medium", "low"),
        ("low", "minimal", "low"),  # low is as low as a lowered level goes
        ("minimal", "low", "minimal"),
        ("minimal", "none", "minimal"),
        ("medium", "high", "medium"),
        ("high", None, "high"),  # no effort in the verdict
        ("high", "lots", "high"),  # not an effort: nothing to lower to
        ("THINKING_LEVEL_UNSPECIFIED", "low", "THINKING_LEVEL_UNSPECIFIED"),
        ("ultra", "low", "ultra"),  # not a level: the upstream's to refuse
        (3, "low", 3),
    ],
)
def test_the_thinking_level_is_lowered_by_the_reasoning_effort(
    level: Any, effort: str | None, sent: Any
) -> None:
    verdict = V(reasoning_effort=effort)
    assert sent_thinking(thinking(thinkingLevel=level), verdict) == {
        "thinkingLevel": sent,
        "includeThoughts": True,
    }


def test_budget_and_level_together_each_by_its_own_rule() -> None:
    body = thinking(thinkingBudget=-1, thinkingLevel="high")
    assert sent_thinking(body, V(max_tokens=256, reasoning_effort="low")) == {
        "thinkingBudget": 256,
        "thinkingLevel": "low",
        "includeThoughts": True,
    }
    # The reasoning effort alone lowers the level and leaves every budget as sent.
    out = apply_verdict(body, V(reasoning_effort="minimal"))
    assert out["generationConfig"] == {
        "maxOutputTokens": 4096,
        "topK": 3,
        "thinkingConfig": {"thinkingBudget": -1, "thinkingLevel": "low", "includeThoughts": True},
    }


def test_a_gemini_calls_shapes_come_from_its_path_and_query() -> None:
    assert call_at("/v1beta/models/gemini-3-pro-preview:generateContent") == GeminiCall(
        "gemini-3-pro-preview"
    )
    assert call_at("/v1beta/models/gemini-2.5-flash:streamGenerateContent", b"alt=sse") == (
        GeminiCall("gemini-2.5-flash", stream=True, alt_sse=True)
    )
    assert call_at("/v1beta/models/m:streamGenerateContent?alt=sse&key=k") == GeminiCall(
        "m", stream=True, alt_sse=True
    )
    assert call_at("/v1beta/models/m:streamGenerateContent", "alt=json") == GeminiCall(
        "m", stream=True
    )
    for path in ("/v1beta/models/m:countTokens", "/v1/chat/completions", "/v1beta/models/:x"):
        with pytest.raises(ValueError, match="not a Gemini generateContent path"):
            call_at(path)


def test_a_gemini_call_is_a_shape_module_that_answers_as_the_door_does() -> None:
    shape: shapes.ShapeModule = call_at("/v1beta/models/m:streamGenerateContent", "alt=sse")
    verdict = V(max_tokens=100, persona="It is late.", tools="deny")
    assert shape.apply_verdict(BODY, verdict) == apply_verdict(BODY, verdict)
    payload, content_type = shape.short_circuit_body(BODY, "Good night.")
    assert content_type == sse.CONTENT_TYPE
    [event] = [line for line in payload.split(b"\n") if line.startswith(b"data: ")]
    data = json.loads(event[6:])
    assert data["candidates"][0]["content"]["parts"] == [{"text": "Good night."}]
    assert data["modelVersion"] == "m"
    assert [name for name, _ in shape.answer_events(BODY, "x")] == [None]
    whole, content_type = GeminiCall("m").short_circuit_body(BODY, "Good night.")
    assert content_type == "application/json"
    assert json.loads(whole)["candidates"][0]["content"]["parts"] == [{"text": "Good night."}]
    assert GeminiCall("m").answer(BODY, "x")["usageMetadata"] == gemini_shapes.zero_usage()


def test_shapes_module_says_where_a_gemini_shape_comes_from() -> None:
    """A gateway that picks its shape by name learns why Gemini is not one."""
    assert "gemini" not in shapes.SHAPES
    with pytest.raises(ValueError, match=r"gemini_shapes\.call_at\(path, query\)"):
        shapes.module("gemini")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape must be one of chat, responses"):
        shapes.module("bard")  # type: ignore[arg-type]
