"""Applying a verdict to an OpenAI chat body, and the short-circuit answer's shapes."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from curfew_client.openai_shapes import (
    apply_verdict,
    requested_budget,
    short_circuit_body,
    short_circuit_chunks,
    short_circuit_completion,
)


@dataclass(frozen=True)
class V:
    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


BODY: dict[str, Any] = {
    "model": "deepseek-chat",
    "messages": [
        {"role": "system", "content": "Be precise."},
        {"role": "user", "content": "hi"},
    ],
    "temperature": 0.2,
}


def test_a_verdict_that_sets_nothing_leaves_the_body_equal() -> None:
    body = {**BODY, "max_tokens": 50, "tools": [{"type": "function"}], "reasoning_effort": "high"}
    assert apply_verdict(body, V()) == body


def test_the_input_body_is_never_modified() -> None:
    body = copy.deepcopy({**BODY, "max_tokens": 5000, "tools": []})
    before = copy.deepcopy(body)
    apply_verdict(body, V(max_tokens=100, persona="sleepy", tools="deny", reasoning_effort="low"))
    assert body == before


def test_the_budget_is_set_explicitly_as_max_tokens_when_the_client_set_none() -> None:
    out = apply_verdict(BODY, V(max_tokens=800))
    assert out["max_tokens"] == 800
    assert "max_completion_tokens" not in out


def test_the_default_budget_key_can_be_the_modern_name() -> None:
    out = apply_verdict(BODY, V(max_tokens=800), default_budget_key="max_completion_tokens")
    assert out["max_completion_tokens"] == 800
    assert "max_tokens" not in out


def test_each_budget_the_client_gave_is_clamped_under_its_own_name() -> None:
    out = apply_verdict({**BODY, "max_tokens": 4000, "max_completion_tokens": 300}, V(800))
    assert (out["max_tokens"], out["max_completion_tokens"]) == (800, 300)


def test_a_budget_that_is_not_a_positive_number_is_replaced() -> None:
    assert apply_verdict({**BODY, "max_tokens": "lots"}, V(800))["max_tokens"] == 800


@given(
    client=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
    modern=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
    budget=st.integers(min_value=1, max_value=10**6),
)
def test_the_clamp_never_raises_a_budget(
    client: int | None, modern: int | None, budget: int
) -> None:
    body: dict[str, Any] = dict(BODY)
    if client is not None:
        body["max_tokens"] = client
    if modern is not None:
        body["max_completion_tokens"] = modern
    out = apply_verdict(body, V(max_tokens=budget))
    for key, asked in (("max_tokens", client), ("max_completion_tokens", modern)):
        if asked is not None:
            assert out[key] == min(asked, budget)
    assert requested_budget(out) == min(x for x in (client, modern, budget) if x is not None)


def test_the_persona_is_appended_to_a_string_system_message() -> None:
    out = apply_verdict(BODY, V(persona="You are sleepy."))
    assert out["messages"][0] == {"role": "system", "content": "Be precise.\n\nYou are sleepy."}
    assert out["messages"][1:] == BODY["messages"][1:]


def test_the_persona_is_appended_to_a_list_of_parts() -> None:
    body = {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Be precise."}]},
            {"role": "user", "content": "hi"},
        ]
    }
    out = apply_verdict(body, V(persona="You are sleepy."))
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "Be precise."},
        {"type": "text", "text": "You are sleepy."},
    ]


def test_a_developer_message_counts_as_the_system_message() -> None:
    body = {
        "messages": [{"role": "developer", "content": "Rules."}, {"role": "user", "content": "x"}]
    }
    out = apply_verdict(body, V(persona="Sleepy."))
    assert out["messages"][0] == {"role": "developer", "content": "Rules.\n\nSleepy."}
    assert len(out["messages"]) == 2


def test_a_system_message_is_added_in_front_when_there_is_none() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    out = apply_verdict(body, V(persona="Sleepy."))
    assert out["messages"] == [{"role": "system", "content": "Sleepy."}, *body["messages"]]


def test_denied_tools_drop_every_tool_key() -> None:
    body = {
        **BODY,
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "functions": [{"name": "f"}],
        "function_call": "auto",
    }
    out = apply_verdict(body, V(tools="deny"))
    assert out == BODY


@pytest.mark.parametrize(
    ("asked", "verdict", "sent"),
    [
        (None, "low", "low"),
        ("high", "low", "low"),
        ("minimal", "low", "minimal"),
        ("odd", "low", "low"),
    ],
)
def test_reasoning_effort_is_lowered_never_raised(
    asked: str | None, verdict: str, sent: str
) -> None:
    body = dict(BODY) if asked is None else {**BODY, "reasoning_effort": asked}
    assert apply_verdict(body, V(reasoning_effort=verdict))["reasoning_effort"] == sent


# -- the short-circuit answer ---------------------------------------------------------


def test_the_completion_is_a_complete_chat_completion_with_zero_usage() -> None:
    body = short_circuit_completion("明天再说。", model="deepseek-chat")
    parsed = ChatCompletion.model_validate(body)
    assert parsed.object == "chat.completion"
    assert parsed.id.startswith("chatcmpl-")
    assert parsed.model == "deepseek-chat"
    assert parsed.choices[0].message.role == "assistant"
    assert parsed.choices[0].message.content == "明天再说。"
    assert parsed.choices[0].finish_reason == "stop"
    assert body["usage"]["prompt_tokens"] == 0
    assert body["usage"]["completion_tokens"] == 0
    assert body["usage"]["total_tokens"] == 0


def test_a_missing_model_still_gives_a_model_name() -> None:
    assert short_circuit_completion("。")["model"] == "curfew"


@pytest.mark.parametrize("include_usage", [False, True])
def test_the_chunks_are_valid_and_carry_the_zero_usage_once(include_usage: bool) -> None:
    chunks = [
        ChatCompletionChunk.model_validate(c)
        for c in short_circuit_chunks("。", model="m", include_usage=include_usage)
    ]
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "。"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes == [None, None, "stop"]
    with_usage = [c for c in chunks if c.usage is not None]
    assert len(with_usage) == 1
    assert with_usage[0].usage is not None
    assert with_usage[0].usage.total_tokens == 0
    assert with_usage[0] is chunks[-1]
    assert (chunks[-1].choices == []) is include_usage


def test_the_sse_body_is_the_chunks_then_done() -> None:
    payload, content_type = short_circuit_body({"model": "m", "stream": True}, "明天再说。")
    assert content_type.startswith("text/event-stream")
    events = payload.decode().split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    data = [json.loads(event.removeprefix("data: ")) for event in events[:-2]]
    assert [d["object"] for d in data] == ["chat.completion.chunk"] * 3
    assert data[1]["choices"][0]["delta"]["content"] == "明天再说。"
    assert data[-1]["usage"]["total_tokens"] == 0


def test_a_non_streaming_request_gets_json() -> None:
    payload, content_type = short_circuit_body({"model": "m"}, "。")
    assert content_type == "application/json"
    assert json.loads(payload)["choices"][0]["message"]["content"] == "。"
