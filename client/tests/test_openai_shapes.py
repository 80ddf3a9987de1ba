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
    MAX_CHOICES,
    UPSTREAM_BUDGET_KEYS,
    UpstreamBudgetKey,
    answer,
    answer_events,
    apply_verdict,
    choice_count,
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


# -- the budget key the upstream reads (CURFEW_UPSTREAM_BUDGET_KEY) -----------------------

#: What the client sent: neither name, one, the other, both (with different values).
SENT: dict[str, dict[str, Any]] = {
    "neither": {},
    "max_tokens": {"max_tokens": 5000},
    "max_completion_tokens": {"max_completion_tokens": 5000},
    "both": {"max_tokens": 4000, "max_completion_tokens": 300},
}


def test_the_budget_key_choices_are_the_two_names_and_both() -> None:
    assert UPSTREAM_BUDGET_KEYS == ("max_tokens", "max_completion_tokens", "both")


@pytest.mark.parametrize("sent", SENT)
@pytest.mark.parametrize(
    ("key", "names"),
    [
        ("max_tokens", {"max_tokens"}),
        ("max_completion_tokens", {"max_completion_tokens"}),
        ("both", {"max_tokens", "max_completion_tokens"}),
    ],
)
def test_a_forced_budget_key_is_exactly_the_budget_the_upstream_sees(
    sent: str, key: UpstreamBudgetKey, names: set[str]
) -> None:
    body = {**BODY, **SENT[sent]}
    out = apply_verdict(body, V(max_tokens=800), budget_key=key)
    # The tightest of the client's budgets and the verdict's: 300 when it sent
    # 300 under either name, else the verdict's 800 (a min, never a raise).
    want = 300 if sent == "both" else 800
    assert {name: out.get(name) for name in names} == dict.fromkeys(names, want)
    assert {"max_tokens", "max_completion_tokens"} & set(out) == names
    assert {k: v for k, v in out.items() if k not in SENT["both"]} == BODY


@pytest.mark.parametrize("key", UPSTREAM_BUDGET_KEYS)
def test_a_forced_budget_key_keeps_a_smaller_client_budget(key: UpstreamBudgetKey) -> None:
    out = apply_verdict({**BODY, "max_completion_tokens": 120}, V(max_tokens=800), budget_key=key)
    assert requested_budget(out) == 120
    out = apply_verdict({**BODY, "max_tokens": "lots"}, V(max_tokens=800), budget_key=key)
    assert requested_budget(out) == 800


@pytest.mark.parametrize("key", UPSTREAM_BUDGET_KEYS)
def test_a_forced_budget_key_leaves_an_unclamped_body_alone(key: UpstreamBudgetKey) -> None:
    """On duty (no budget in the verdict) nothing is renamed: byte for byte."""
    body = {**BODY, "max_completion_tokens": 9000}
    assert apply_verdict(body, V(), budget_key=key) == body


@pytest.mark.parametrize("sent", SENT)
def test_no_budget_key_keeps_the_clients_own_names(sent: str) -> None:
    """The default: today's rule (each name clamped, max_tokens when neither)."""
    out = apply_verdict({**BODY, **SENT[sent]}, V(max_tokens=800), budget_key=None)
    want = {
        "neither": {"max_tokens": 800},
        "max_tokens": {"max_tokens": 800},
        "max_completion_tokens": {"max_completion_tokens": 800},
        "both": {"max_tokens": 800, "max_completion_tokens": 300},
    }[sent]
    assert {k: out[k] for k in ("max_tokens", "max_completion_tokens") if k in out} == want


@given(
    client=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
    modern=st.one_of(st.none(), st.integers(min_value=1, max_value=10**7)),
    budget=st.integers(min_value=1, max_value=10**6),
    key=st.sampled_from(UPSTREAM_BUDGET_KEYS),
)
def test_a_forced_budget_key_never_raises_a_budget(
    client: int | None, modern: int | None, budget: int, key: UpstreamBudgetKey
) -> None:
    body: dict[str, Any] = dict(BODY)
    if client is not None:
        body["max_tokens"] = client
    if modern is not None:
        body["max_completion_tokens"] = modern
    out = apply_verdict(body, V(max_tokens=budget), budget_key=key)
    tightest = min(x for x in (client, modern, budget) if x is not None)
    sent = [out[name] for name in ("max_tokens", "max_completion_tokens") if name in out]
    assert sent
    assert all(value == tightest for value in sent)


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


# -- answer / answer_events: shaped for the request ------------------------------------

SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "Plan", "schema": {"type": "object"}, "strict": True},
}


@pytest.mark.parametrize("response_format", [SCHEMA_FORMAT, {"type": "json_object"}])
def test_structured_output_gets_the_reply_as_a_refusal(response_format: dict[str, Any]) -> None:
    completion = ChatCompletion.model_validate(
        answer({"model": "m", "response_format": response_format}, "。")
    )
    message = completion.choices[0].message
    assert (message.content, message.refusal) == (None, "。")
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0


@pytest.mark.parametrize("response_format", [None, {"type": "text"}, "json_object", []])
def test_plain_text_formats_get_the_reply_as_content(response_format: object) -> None:
    body = {"model": "m"} if response_format is None else {"response_format": response_format}
    message = answer(body, "。")["choices"][0]["message"]
    assert (message["content"], message["refusal"]) == ("。", None)


@pytest.mark.parametrize("include_usage", [False, True])
def test_structured_output_streams_the_refusal(include_usage: bool) -> None:
    body = {"response_format": SCHEMA_FORMAT, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    events = answer_events(body, "明天再说。")
    assert {name for name, _ in events} == {None}
    chunks = [ChatCompletionChunk.model_validate(chunk) for _, chunk in events]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.refusal or "" for d in deltas) == "明天再说。"
    assert all(d.content is None for d in deltas)
    assert [c.usage.total_tokens for c in chunks if c.usage is not None] == [0]
    assert (chunks[-1].choices == []) is include_usage


@pytest.mark.parametrize(("n", "count"), [(3, 3), (1, 1), (0, 1), (-2, 1), (10**6, MAX_CHOICES)])
def test_n_choices_are_clamped_into_a_sane_range(n: int, count: int) -> None:
    assert choice_count({"n": n}) == count
    completion = ChatCompletion.model_validate(answer({"n": n}, "。"))
    assert [c.index for c in completion.choices] == list(range(count))
    assert {c.message.content for c in completion.choices} == {"。"}


@pytest.mark.parametrize("n", [None, "3", 2.0, True, [3]])
def test_an_n_that_is_not_a_whole_number_means_one_choice(n: object) -> None:
    assert choice_count({} if n is None else {"n": n}) == 1


@pytest.mark.parametrize("include_usage", [False, True])
def test_n_choices_stream_each_to_the_end(include_usage: bool) -> None:
    body: dict[str, Any] = {"n": 3, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    chunks = [ChatCompletionChunk.model_validate(chunk) for _, chunk in answer_events(body, "。")]
    assert len({c.id for c in chunks}) == 1
    for index in range(3):
        mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
        assert mine[0].delta.role == "assistant"
        assert "".join(c.delta.content or "" for c in mine) == "。"
        assert [c.finish_reason for c in mine] == [None, None, "stop"]
    assert all(len(c.choices) <= 1 for c in chunks)
    assert [c.usage.total_tokens for c in chunks if c.usage is not None] == [0]
    assert chunks[-1].usage is not None


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
#: Every way a chat request forces a tool call (the Agents SDK and pydantic-ai
#: send ``"required"``; ``parse`` with a tool, a named function).
FORCED_TOOL_CHOICES: list[Any] = [
    "required",
    {"type": "function", "function": {"name": "f"}},
    {"type": "custom", "custom": {"name": "f"}},
    {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": []}},
]


@pytest.mark.parametrize("tool_choice", FORCED_TOOL_CHOICES)
def test_a_forced_tool_choice_gets_a_refusal_and_no_invented_call(tool_choice: Any) -> None:
    """A text answer to a forced tool call is what an agent cannot use: it asks
    again and fails (pydantic-ai's "Exceeded maximum output retries"). The
    refusal is the documented "the model declined" channel it reports."""
    body = {"tools": TOOLS, "tool_choice": tool_choice}
    completion = ChatCompletion.model_validate(answer(body, "。"))
    message = completion.choices[0].message
    assert (message.content, message.refusal) == (None, "。")
    assert message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"
    chunks = [
        ChatCompletionChunk.model_validate(chunk)
        for _, chunk in answer_events({**body, "stream": True}, "。")
    ]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.refusal or "" for d in deltas) == "。"
    assert all(d.content is None and d.tool_calls is None for d in deltas)
    assert [c.usage.total_tokens for c in chunks if c.usage is not None] == [0]


@pytest.mark.parametrize(
    "tool_choice",
    [None, "auto", "none", {"type": "allowed_tools", "allowed_tools": {"mode": "auto"}}, 3],
)
def test_a_tool_choice_that_forces_nothing_gets_the_text_answer(tool_choice: Any) -> None:
    """The control: a free choice (or none at all) is answered in ``content``."""
    body: dict[str, Any] = {"tools": TOOLS}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    message = ChatCompletion.model_validate(answer(body, "。")).choices[0].message
    assert (message.content, message.refusal) == ("。", None)


def test_the_body_is_answer_and_answer_events_as_sent() -> None:
    """``short_circuit_body`` is the two interface functions, serialised."""
    body = {"model": "m", "n": 2, "response_format": {"type": "json_object"}}
    payload, _ = short_circuit_body(body, "。")
    sent = json.loads(payload)
    want = answer(body, "。")
    assert {**sent, "id": "", "created": 0} == {**want, "id": "", "created": 0}
    streamed, _ = short_circuit_body({**body, "stream": True}, "。")
    data = [json.loads(e.removeprefix("data: ")) for e in streamed.decode().split("\n\n")[:-2]]
    events = answer_events({**body, "stream": True}, "。")
    assert [d["choices"] for d in data] == [chunk["choices"] for _, chunk in events]
