"""Applying a verdict to an Anthropic Messages body, and the short-circuit
answer's shapes, checked against the ``anthropic`` SDK's own models."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic._streaming import SSEDecoder
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from curfew_client import anthropic_shapes
from curfew_client.anthropic_shapes import (
    answer,
    answer_events,
    apply_verdict,
    error_body,
    short_circuit_body,
)


@dataclass(frozen=True)
class V:
    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 4096,
    "system": "Be precise.",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.2,
}
TOOLS = [{"name": "now", "input_schema": {"type": "object", "properties": {}}}]
EVENTS = TypeAdapter(RawMessageStreamEvent)


# -- apply_verdict -------------------------------------------------------------------


def test_a_verdict_that_sets_nothing_leaves_the_body_equal() -> None:
    body = {
        **BODY,
        "tools": TOOLS,
        "tool_choice": {"type": "any"},
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "stream": True,
    }
    assert apply_verdict(body, V()) == body


def test_the_input_body_is_never_modified() -> None:
    body = copy.deepcopy(
        {**BODY, "tools": TOOLS, "thinking": {"type": "enabled", "budget_tokens": 3000}}
    )
    before = copy.deepcopy(body)
    apply_verdict(body, V(max_tokens=900, persona="sleepy", tools="deny"))
    apply_verdict({**body, "system": [{"type": "text", "text": "x"}]}, V(persona="sleepy"))
    assert body == before


def test_max_tokens_is_clamped_with_min() -> None:
    assert apply_verdict(BODY, V(max_tokens=800))["max_tokens"] == 800
    assert apply_verdict({**BODY, "max_tokens": 100}, V(max_tokens=800))["max_tokens"] == 100


@pytest.mark.parametrize("bad", [None, 0, -5, True, "lots", 12.5])
def test_an_absent_or_odd_max_tokens_gets_the_verdicts(bad: object) -> None:
    body = {key: value for key, value in BODY.items() if key != "max_tokens"}
    assert apply_verdict(body, V(max_tokens=800))["max_tokens"] == 800
    assert apply_verdict({**body, "max_tokens": bad}, V(max_tokens=800))["max_tokens"] == 800


def test_the_persona_is_appended_to_a_text_system_prompt() -> None:
    out = apply_verdict(BODY, V(persona="I am sleepy."))
    assert out["system"] == "Be precise.\n\nI am sleepy."
    assert out["messages"] == BODY["messages"]


def test_the_persona_is_a_last_block_after_the_clients_blocks() -> None:
    blocks = [{"type": "text", "text": "Be precise.", "cache_control": {"type": "ephemeral"}}]
    out = apply_verdict({**BODY, "system": blocks}, V(persona="I am sleepy."))
    assert out["system"] == [*blocks, {"type": "text", "text": "I am sleepy."}]


@pytest.mark.parametrize("system", [None, "", "   "])
def test_the_persona_is_the_system_prompt_when_there_is_none(system: str | None) -> None:
    body = {key: value for key, value in BODY.items() if key != "system"}
    if system is not None:
        body["system"] = system
    assert apply_verdict(body, V(persona="I am sleepy."))["system"] == "I am sleepy."


def test_a_thinking_budget_over_the_clamp_is_lowered_below_it() -> None:
    body = {**BODY, "thinking": {"type": "enabled", "budget_tokens": 10000, "display": "omitted"}}
    out = apply_verdict(body, V(max_tokens=1824))
    assert out["max_tokens"] == 1824
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 1823, "display": "omitted"}


def test_a_thinking_budget_under_the_clamp_is_kept() -> None:
    body = {**BODY, "max_tokens": 16000, "thinking": {"type": "enabled", "budget_tokens": 1500}}
    assert apply_verdict(body, V(max_tokens=1824))["thinking"] == body["thinking"]


def test_the_client_max_tokens_counts_for_the_thinking_budget_too() -> None:
    # The client's own 2000 is the tighter one: the budget must fit under it.
    body = {**BODY, "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000}}
    out = apply_verdict(body, V(max_tokens=8000))
    assert out["max_tokens"] == 2000
    assert out["thinking"]["budget_tokens"] == 1999


@pytest.mark.parametrize("clamp", [560, 1024])
def test_thinking_is_disabled_when_the_clamp_leaves_no_valid_budget(clamp: int) -> None:
    body = {**BODY, "thinking": {"type": "enabled", "budget_tokens": 10000}}
    out = apply_verdict(body, V(max_tokens=clamp))
    assert out["max_tokens"] == clamp
    assert out["thinking"] == {"type": "disabled"}


def test_the_smallest_clamp_with_room_keeps_the_smallest_budget() -> None:
    body = {**BODY, "thinking": {"type": "enabled", "budget_tokens": 10000}}
    assert apply_verdict(body, V(max_tokens=1025))["thinking"]["budget_tokens"] == 1024


@pytest.mark.parametrize(
    "thinking", [{"type": "adaptive"}, {"type": "disabled"}, {"type": "between_tools"}, "odd"]
)
def test_thinking_without_a_budget_is_left_alone(thinking: object) -> None:
    body = {**BODY, "thinking": thinking}
    assert apply_verdict(body, V(max_tokens=500))["thinking"] == thinking


def test_thinking_is_untouched_without_a_clamp() -> None:
    body = {**BODY, "thinking": {"type": "enabled", "budget_tokens": 99999}}
    assert apply_verdict(body, V(persona="sleepy"))["thinking"] == body["thinking"]


def test_denied_tools_drop_tools_and_tool_choice_only() -> None:
    body = {**BODY, "tools": TOOLS, "tool_choice": {"type": "auto"}}
    out = apply_verdict(body, V(tools="deny"))
    assert "tools" not in out
    assert "tool_choice" not in out
    assert out == BODY
    assert apply_verdict(body, V(tools="allow")) == body


@given(
    client=st.one_of(st.none(), st.integers(min_value=1, max_value=10**6)),
    clamp=st.integers(min_value=1, max_value=10**5),
    budget=st.one_of(st.none(), st.integers(min_value=1024, max_value=10**6)),
)
def test_the_clamp_never_raises_and_thinking_always_fits(
    client: int | None, clamp: int, budget: int | None
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": []}
    if client is not None:
        body["max_tokens"] = client
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    out = apply_verdict(body, V(max_tokens=clamp))
    assert out["max_tokens"] == min(clamp, client or clamp)
    if budget is not None:
        thinking = out["thinking"]
        if thinking["type"] == "enabled":
            assert 1024 <= thinking["budget_tokens"] < out["max_tokens"]
            assert thinking["budget_tokens"] <= budget
        else:
            assert thinking == {"type": "disabled"}
            assert out["max_tokens"] <= 1024


# -- the short-circuit answer ---------------------------------------------------------


def test_answer_is_a_complete_message_with_zero_usage() -> None:
    payload = answer(BODY, "明天再说。")
    message = Message.model_validate(payload, strict=True)
    assert message.id.startswith("msg_curfew_")
    assert message.model == "claude-sonnet-4-5"
    assert message.content[0].type == "text"
    assert message.content[0].text == "明天再说。"
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert payload["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


@pytest.mark.parametrize("model", [None, "", 42])
def test_answer_names_the_curfew_when_the_client_named_no_model(model: object) -> None:
    assert answer({"model": model}, "。")["model"] == "curfew"
    assert answer({}, "。")["model"] == "curfew"


def test_each_answer_has_its_own_id() -> None:
    assert answer(BODY, "。")["id"] != answer(BODY, "。")["id"]


def test_answer_events_are_the_full_sequence_and_accumulate_to_the_message() -> None:
    events = answer_events(BODY, "。")
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    snapshot = None
    for _, data in events:
        event = EVENTS.validate_python(data, strict=True)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    assert snapshot is not None
    assert snapshot.content[0].type == "text"
    assert snapshot.content[0].text == "。"
    assert snapshot.stop_reason == "end_turn"
    assert snapshot.model == "claude-sonnet-4-5"
    usage = snapshot.usage
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    start = events[0][1]["message"]
    assert (start["content"], start["stop_reason"]) == ([], None)


@pytest.mark.parametrize("tool_choice", [{"type": "any"}, {"type": "tool", "name": "now"}])
def test_a_forced_tool_choice_is_answered_with_a_refusal(tool_choice: dict[str, Any]) -> None:
    """``stop_reason: "refusal"`` (the Messages API's "declined" stop, with its
    ``stop_details``) instead of an ``end_turn`` text the agent would answer by
    asking for its tool again: no content (as OpenAI's refusal has none), the
    reply as the refusal's explanation, zero usage."""
    body = {**BODY, "tools": TOOLS, "tool_choice": tool_choice}
    message = Message.model_validate(answer(body, "明天再说。"), strict=True)
    assert message.stop_reason == "refusal"
    assert message.stop_details is not None
    assert (message.stop_details.type, message.stop_details.explanation) == (
        "refusal",
        "明天再说。",
    )
    assert message.content == []  # no text to take for an answer, no tool_use invented
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)
    payload, _ = short_circuit_body({**body, "stream": True}, "明天再说。")
    snapshot = None
    for sse in SSEDecoder().iter_bytes(iter([payload])):
        event = EVENTS.validate_python(sse.json(), strict=True)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    assert snapshot is not None
    assert snapshot.stop_reason == "refusal"
    assert snapshot.stop_details is not None
    assert snapshot.stop_details.explanation == "明天再说。"
    assert snapshot.content == []
    assert (snapshot.usage.input_tokens, snapshot.usage.output_tokens) == (0, 0)


@pytest.mark.parametrize("tool_choice", [None, {"type": "auto"}, {"type": "none"}, "any"])
def test_a_tool_choice_that_forces_nothing_ends_the_turn(tool_choice: object) -> None:
    """The control: a free choice (or an odd value) gets the plain answer."""
    body = {**BODY, "tools": TOOLS}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    payload = answer(body, "。")
    assert payload["stop_reason"] == "end_turn"
    assert "stop_details" not in payload


def test_short_circuit_body_is_json_unless_a_stream_was_asked_for() -> None:
    for stream in (None, False, "true"):
        payload, content_type = short_circuit_body({**BODY, "stream": stream}, "。")
        assert content_type == "application/json"
        assert json.loads(payload)["content"] == [{"type": "text", "text": "。"}]


def test_short_circuit_body_streams_named_events_the_sdk_decodes() -> None:
    payload, content_type = short_circuit_body({**BODY, "stream": True}, "明天再说。")
    assert content_type.startswith("text/event-stream")
    decoded = list(SSEDecoder().iter_bytes(iter([payload])))
    assert [sse.event for sse in decoded] == [name for name, _ in answer_events(BODY, "。")]
    texts = [sse.json()["delta"]["text"] for sse in decoded if sse.event == "content_block_delta"]
    assert texts == ["明天再说。"]
    assert payload.endswith(b"\n\n")


def test_error_body_is_anthropics_shape() -> None:
    assert error_body("no", type="rate_limit_error") == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "no"},
    }


@pytest.mark.parametrize(
    ("status", "type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (422, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (503, "api_error"),
        (529, "overloaded_error"),
    ],
)
def test_error_types_follow_the_status(status: int, type: str) -> None:
    assert anthropic_shapes.error_type(status) == type


def test_the_package_exports_the_module() -> None:
    import curfew_client

    assert curfew_client.anthropic_shapes is anthropic_shapes
    assert "anthropic_shapes" in curfew_client.__all__
