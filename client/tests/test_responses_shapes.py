"""Applying a verdict to a Responses API body, and the short-circuit answer's
shapes, checked against the real openai SDK's own models (strict validation)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._models import construct_type, validate_type
from openai.types import Completion
from openai.types.responses import Response, ResponseOutputMessage, ResponseStreamEvent

from curfew_client import completions_shapes
from curfew_client.responses_shapes import (
    MIN_OUTPUT_TOKENS,
    answer,
    answer_events,
    apply_verdict,
    short_circuit_body,
)


@dataclass(frozen=True)
class V:
    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


BODY: dict[str, Any] = {"model": "gpt-4.1", "input": "hi", "instructions": "Be precise."}
STRUCTURED = {
    **BODY,
    "text": {"format": {"type": "json_schema", "name": "Moon", "schema": {"type": "object"}}},
}
#: The SDK's union of stream events (an annotated union, not a class).
EVENT: Any = ResponseStreamEvent
EVENT_NAMES = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


# -- the request --------------------------------------------------------------------


def test_a_verdict_that_sets_nothing_leaves_the_body_equal() -> None:
    body = {
        **BODY,
        "max_output_tokens": 50,
        "tools": [{"type": "web_search"}],
        "reasoning": {"effort": "high"},
    }
    assert apply_verdict(body, V()) == body


def test_the_input_body_is_never_modified() -> None:
    body = copy.deepcopy({**BODY, "max_output_tokens": 5000, "reasoning": {"effort": "high"}})
    before = copy.deepcopy(body)
    apply_verdict(body, V(max_tokens=100, persona="sleepy", tools="deny", reasoning_effort="low"))
    assert body == before


def test_the_budget_is_set_explicitly_when_the_client_set_none() -> None:
    assert apply_verdict(BODY, V(max_tokens=800))["max_output_tokens"] == 800


@given(
    asked=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
    budget=st.integers(min_value=0, max_value=10**6),
)
def test_the_clamp_is_a_min_never_a_raise(asked: int | None, budget: int) -> None:
    body = dict(BODY) if asked is None else {**BODY, "max_output_tokens": asked}
    sent = apply_verdict(body, V(max_tokens=budget))["max_output_tokens"]
    ceiling = max(budget, MIN_OUTPUT_TOKENS)
    assert sent == (ceiling if asked is None else min(asked, ceiling))
    if asked is not None:
        assert sent <= asked


def test_the_clamp_never_goes_below_what_openai_accepts() -> None:
    """OpenAI answers 400 to ``max_output_tokens`` below 16."""
    assert apply_verdict(BODY, V(max_tokens=3))["max_output_tokens"] == MIN_OUTPUT_TOKENS
    # ...but a client's own smaller value is still never raised.
    assert apply_verdict({**BODY, "max_output_tokens": 8}, V(3))["max_output_tokens"] == 8


@pytest.mark.parametrize("bad", ["lots", 0, -5, True, None])
def test_a_budget_that_is_not_a_positive_number_is_replaced(bad: object) -> None:
    body = {**BODY, "max_output_tokens": bad}
    assert apply_verdict(body, V(max_tokens=800))["max_output_tokens"] == 800


@pytest.mark.parametrize(
    ("instructions", "sent"),
    [
        ("Be precise.", "Be precise.\n\nSleepy."),
        (None, "Sleepy."),
        ("  ", "Sleepy."),
        (
            [{"type": "message", "role": "system", "content": "Rules."}],
            [
                {"type": "message", "role": "system", "content": "Rules."},
                {"type": "message", "role": "developer", "content": "Sleepy."},
            ],
        ),
    ],
)
def test_the_persona_is_appended_to_instructions(instructions: Any, sent: Any) -> None:
    body = {**BODY, "instructions": instructions}
    assert apply_verdict(body, V(persona="Sleepy."))["instructions"] == sent


def test_absent_instructions_become_the_persona() -> None:
    body = {"model": "m", "input": "hi"}
    assert apply_verdict(body, V(persona="Sleepy."))["instructions"] == "Sleepy."


def test_denied_tools_drop_every_tool_key() -> None:
    body = {
        **BODY,
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
        "tool_choice": "required",
        "parallel_tool_calls": True,
    }
    assert apply_verdict(body, V(tools="deny")) == BODY


@pytest.mark.parametrize(
    ("reasoning", "verdict", "sent"),
    [
        (None, "low", {"effort": "low"}),
        ({"effort": "high", "summary": "auto"}, "low", {"effort": "low", "summary": "auto"}),
        ({"effort": "minimal"}, "low", {"effort": "minimal"}),
        ({"effort": "odd"}, "low", {"effort": "low"}),
        ({"summary": "auto"}, "medium", {"summary": "auto", "effort": "medium"}),
    ],
)
def test_reasoning_effort_is_lowered_never_raised(
    reasoning: dict[str, str] | None, verdict: str, sent: dict[str, str]
) -> None:
    body = dict(BODY) if reasoning is None else {**BODY, "reasoning": reasoning}
    assert apply_verdict(body, V(reasoning_effort=verdict))["reasoning"] == sent


# -- the short-circuit answer ---------------------------------------------------------


def test_the_answer_is_a_response_the_sdk_validates_with_zero_usage() -> None:
    payload = answer(BODY, "明天再说。")
    parsed = Response.model_validate(payload)  # strict: every required field is there
    assert parsed.object == "response"
    assert parsed.status == "completed"
    assert parsed.id.startswith("resp_")
    assert parsed.model == "gpt-4.1"
    assert parsed.instructions == "Be precise."
    assert parsed.output_text == "明天再说。"
    assert "output_text" not in payload
    [message] = parsed.output
    assert isinstance(message, ResponseOutputMessage)
    assert (message.role, message.status) == ("assistant", "completed")
    assert payload["output"][0]["content"] == [
        {"type": "output_text", "text": "明天再说。", "annotations": [], "logprobs": []}
    ]
    assert payload["usage"] == {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }


def test_a_missing_model_still_gives_a_model_name() -> None:
    assert answer({}, "。")["model"] == "curfew"


@pytest.mark.parametrize("fmt", [STRUCTURED["text"]["format"], {"type": "json_object"}])
def test_structured_output_gets_a_refusal(fmt: dict[str, Any]) -> None:
    payload = answer({**BODY, "text": {"format": fmt}}, "。")
    parsed = Response.model_validate(payload)
    assert payload["output"][0]["content"] == [{"type": "refusal", "refusal": "。"}]
    assert parsed.output_text == ""  # no output_text part: nothing to parse as JSON


#: Every way a Responses request forces a tool call.
FORCED_TOOL_CHOICES: list[Any] = [
    "required",
    {"type": "function", "name": "f"},
    {"type": "custom", "name": "f"},
    {"type": "file_search"},
    {"type": "allowed_tools", "mode": "required", "tools": []},
]
FUNCTION_TOOLS = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]


@pytest.mark.parametrize("tool_choice", FORCED_TOOL_CHOICES)
def test_a_forced_tool_choice_gets_a_refusal(tool_choice: Any) -> None:
    """An agent that forced a tool cannot use a sentence: it would ask again."""
    body = {**BODY, "tools": FUNCTION_TOOLS, "tool_choice": tool_choice}
    payload = answer(body, "。")
    Response.model_validate(payload)
    assert payload["output"][0]["content"] == [{"type": "refusal", "refusal": "。"}]
    assert payload["usage"]["total_tokens"] == 0
    events = answer_events({**body, "stream": True}, "。")
    assert [name for name, _ in events][4:6] == [
        "response.refusal.delta",
        "response.refusal.done",
    ]
    for _, data in events:
        validate_type(type_=EVENT, value=data)


@pytest.mark.parametrize(
    "tool_choice", ["auto", "none", {"type": "allowed_tools", "mode": "auto", "tools": []}, 3]
)
def test_a_tool_choice_that_forces_nothing_gets_the_text_answer(tool_choice: Any) -> None:
    """The control: a free choice is answered with ``output_text``."""
    payload = answer({**BODY, "tools": FUNCTION_TOOLS, "tool_choice": tool_choice}, "。")
    assert payload["output"][0]["content"][0]["type"] == "output_text"


def test_the_events_are_valid_ordered_and_numbered() -> None:
    events = answer_events(BODY, "。")
    parsed: list[Any] = [validate_type(type_=EVENT, value=data) for _, data in events]
    assert [name for name, _ in events] == EVENT_NAMES
    assert [e.type for e in parsed] == EVENT_NAMES
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    ids = {data["response"]["id"] for _, data in events if "response" in data}
    assert len(ids) == 1  # the SDK's stream helper refuses a changing identity
    items = {data["item_id"] for _, data in events if "item_id" in data}
    assert items == {events[2][1]["item"]["id"]}
    assert events[-1][1]["response"]["usage"]["total_tokens"] == 0
    assert events[-1][1]["response"]["output"][0]["content"][0]["text"] == "。"


def test_the_structured_event_stream_is_a_refusal() -> None:
    names = [name for name, data in answer_events(STRUCTURED, "。")]
    assert names[4:6] == ["response.refusal.delta", "response.refusal.done"]
    for _, data in answer_events(STRUCTURED, "。"):
        validate_type(type_=EVENT, value=data)


def test_the_body_is_json_or_named_sse_as_asked() -> None:
    payload, content_type = short_circuit_body(BODY, "。")
    assert content_type == "application/json"
    assert json.loads(payload)["object"] == "response"

    payload, content_type = short_circuit_body({**BODY, "stream": True}, "明天再说。")
    assert content_type.startswith("text/event-stream")
    blocks = payload.decode().split("\n\n")
    assert blocks[-1] == ""
    names = []
    for block in blocks[:-1]:
        event, data = block.split("\n")
        names.append(event.removeprefix("event: "))
        assert json.loads(data.removeprefix("data: "))["type"] == names[-1]
    assert names == EVENT_NAMES
    assert "明天再说。" in payload.decode()  # UTF-8, not \\u escapes


def test_stream_must_be_exactly_true() -> None:
    assert short_circuit_body({**BODY, "stream": "yes"}, "。")[1] == "application/json"


# -- legacy completions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "budget", "sent"),
    [(None, 800, 16), (None, 5, 5), (100, 800, 100), (5000, 800, 800), ("x", 800, 16)],
)
def test_legacy_max_tokens_is_min_of_the_default_or_asked_and_the_budget(
    asked: object, budget: int, sent: int
) -> None:
    body: dict[str, Any] = {"model": "m", "prompt": "hi"}
    if asked is not None:
        body["max_tokens"] = asked
    assert completions_shapes.apply_verdict(body, V(max_tokens=budget))["max_tokens"] == sent


def test_legacy_on_duty_body_is_equal() -> None:
    body = {"model": "m", "prompt": "hi", "max_tokens": 10}
    assert completions_shapes.apply_verdict(body, V(persona="p", tools="deny")) == body


def test_legacy_answer_is_a_text_completion_with_zero_usage() -> None:
    parsed = Completion.model_validate(completions_shapes.answer({"model": "m"}, "。"))
    assert parsed.object == "text_completion"
    assert [(c.text, c.index, c.finish_reason) for c in parsed.choices] == [("。", 0, "stop")]
    assert parsed.usage is not None
    assert parsed.usage.total_tokens == 0


def test_legacy_stream_chunks_end_with_stop_usage_and_done() -> None:
    payload, content_type = completions_shapes.short_circuit_body({"stream": True}, "。")
    assert content_type.startswith("text/event-stream")
    blocks = [b for b in payload.decode().split("\n\n") if b]
    assert blocks[-1] == "data: [DONE]"
    # Built as the SDK's stream does (``construct_type``): mid-stream chunks carry
    # ``finish_reason: null``, exactly like OpenAI's, which the strict model refuses.
    chunks = [
        cast(Completion, construct_type(type_=Completion, value=json.loads(b[6:])))
        for b in blocks[:-1]
    ]
    assert "".join(c.choices[0].text for c in chunks) == "。"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert [c.usage is not None for c in chunks] == [False, True]
