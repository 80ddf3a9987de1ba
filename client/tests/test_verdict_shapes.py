"""One verdict, every protocol: ``CurfewVerdict.apply`` / ``answer`` /
``answer_object`` / ``answer_events`` with ``shape=``, checked against the
providers' own SDK models (what a gateway's client will parse)."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import ANY

import pytest
from anthropic.types import Message
from openai.types import Completion
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from pydantic import BaseModel

from curfew_client import CurfewVerdict, gemini_shapes, shapes
from curfew_client.shapes import SHAPES, Shape
from wire_samples import WINDING

OFF_DUTY: dict[str, Any] = {
    **WINDING,
    "state": "off-duty",
    "schedule_state": "off-duty",
    "action": "short-circuit",
    "reply": "。",
    "max_tokens": None,
    "persona": None,
    "tools": "deny",
    "reasoning_effort": None,
    "progress": None,
    "budget": None,
}
ON_DUTY: dict[str, Any] = {
    **OFF_DUTY,
    "state": "on-duty",
    "schedule_state": "on-duty",
    "action": "pass",
    "reply": None,
    "tools": "allow",
}
MESSAGES = [{"role": "user", "content": "hi"}]
#: A request in each shape, with a budget above the winding clamp (1000).
BODIES: dict[Shape, dict[str, Any]] = {
    "chat": {"model": "m", "messages": MESSAGES, "max_tokens": 4000},
    "responses": {"model": "m", "input": "hi", "max_output_tokens": 4000},
    "messages": {"model": "m", "max_tokens": 4000, "messages": MESSAGES},
    "completions": {"model": "m", "prompt": "hi", "max_tokens": 4000},
}
#: Where each shape keeps its budget, and the SDK model of its answer.
BUDGET: dict[Shape, str] = {
    "chat": "max_tokens",
    "responses": "max_output_tokens",
    "messages": "max_tokens",
    "completions": "max_tokens",
}
MODELS: dict[Shape, type[BaseModel]] = {
    "chat": ChatCompletion,
    "responses": Response,
    "messages": Message,
    "completions": Completion,
}


def verdict(payload: dict[str, Any]) -> CurfewVerdict:
    return CurfewVerdict.from_payload(payload)


@pytest.mark.parametrize("shape", SHAPES)
def test_winding_clamps_each_shapes_own_budget(shape: Shape) -> None:
    applied = verdict(WINDING).apply(BODIES[shape], shape=shape)
    assert applied[BUDGET[shape]] == 1000
    assert applied == shapes.module(shape).apply_verdict(BODIES[shape], verdict(WINDING))


@pytest.mark.parametrize("shape", SHAPES)
def test_on_duty_leaves_every_shape_equal(shape: Shape) -> None:
    assert verdict(ON_DUTY).apply(BODIES[shape], shape=shape) == BODIES[shape]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_answer_object_is_what_the_providers_sdk_parses_with_zero_usage(shape: Shape) -> None:
    answer = verdict(OFF_DUTY).answer_object(BODIES[shape], shape=shape)
    parsed = MODELS[shape].model_validate(answer)
    usage = json.loads(parsed.model_dump_json())["usage"]
    assert usage is not None
    assert all(value == 0 for value in usage.values() if isinstance(value, int))
    assert "。" in json.dumps(answer, ensure_ascii=False)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_answer_bytes_are_the_object_or_its_events(shape: Shape) -> None:
    off = verdict(OFF_DUTY)
    payload, content_type = off.answer(BODIES[shape], shape=shape)
    assert content_type == "application/json"
    assert json.loads(payload)["model"] == "m"
    streamed, stream_type = off.answer({**BODIES[shape], "stream": True}, shape=shape)
    assert stream_type.startswith("text/event-stream")
    events = off.answer_events({**BODIES[shape], "stream": True}, shape=shape)
    assert events
    # Named protocols (Responses, Messages) name every event; OpenAI's name none.
    named = shape in ("responses", "messages")
    assert all((name is not None) == named for name, _ in events)
    assert streamed.count(b"data: ") == len(events) + (0 if named else 1)  # + [DONE]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_passing_verdict_has_no_answer(shape: Shape) -> None:
    with pytest.raises(ValueError, match="does not short-circuit"):
        verdict(ON_DUTY).answer_object(BODIES[shape], shape=shape)


def test_an_unknown_shape_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="chat, responses, messages, completions"):
        shapes.module("bard")  # type: ignore[arg-type]
    # Gemini's shape comes from its call, not its body: the refusal says where.
    with pytest.raises(ValueError, match=r"gemini_shapes\.call_at"):
        shapes.module("gemini")  # type: ignore[arg-type]


def test_a_gemini_call_is_a_shape_too() -> None:
    """A Gemini gateway passes the call's shape (its path and query), not a name."""
    shape = gemini_shapes.call_at("/v1beta/models/gemini-3-pro-preview:streamGenerateContent")
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 4000, "thinkingConfig": {"thinkingBudget": -1}},
    }
    config = verdict(WINDING).apply(body, shape=shape)["generationConfig"]
    assert config == {"maxOutputTokens": 1000, "thinkingConfig": {"thinkingBudget": 1000}}
    assert verdict(ON_DUTY).apply(body, shape=shape) == body
    payload, content_type = verdict(OFF_DUTY).answer(body, shape=shape)
    assert content_type == "application/json"  # streamed without alt=sse: a JSON array
    [answer] = json.loads(payload)
    assert answer == {**verdict(OFF_DUTY).answer_object(body, shape=shape), "responseId": ANY}
    assert answer["candidates"][0]["content"]["parts"] == [{"text": "。"}]
    assert [name for name, _ in verdict(OFF_DUTY).answer_events(body, shape=shape)] == [None]
