"""Structured outputs, ``n`` and forced tools through the served proxy, with the
clients people run: the real ``openai`` SDK's ``parse``/``stream`` helpers and
langchain-openai's ``ChatOpenAI``.

Off duty the recorder must see nothing and each client must take its own
documented path: a refusal for structured output (``parsed is None`` in the
SDK, ``OpenAIRefusalError`` in langchain), ``n`` choices, a refusal where a
tool was forced. The control group is the same call on duty, which reaches the
recorder (byte for byte), and winding, which reaches it clamped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import OpenAIRefusalError
from pydantic import BaseModel

from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ServedApp
from tests.proxy.conftest import UPSTREAM_KEY, Proxy
from tests.proxy.test_proxy_gates import MESSAGES, OFF_DUTY, ON_DUTY, WINDING, expected, sdk

OFF_DUTY_REPLY = "。"


class Plan(BaseModel):
    steps: list[str]


def choices_by_index(chunks: list[Any]) -> dict[int, str]:
    texts: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
    return texts


# -- the openai SDK ------------------------------------------------------------------


def test_parse_off_duty_is_a_refusal_the_sdk_understands(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(OFF_DUTY)
    client = sdk(proxy)
    for parse in (client.chat.completions.parse, client.beta.chat.completions.parse):
        completion = parse(model="m", messages=MESSAGES, response_format=Plan)
        message = completion.choices[0].message
        assert message.parsed is None
        assert message.refusal == OFF_DUTY_REPLY
        assert message.content is None
        assert completion.usage is not None
        assert completion.usage.total_tokens == 0
    assert upstream.requests == []


def test_parse_on_duty_reaches_the_upstream(proxy: Proxy, upstream: FakeUpstream) -> None:
    """The control: the same call on duty is sent, and the fake's prose (not
    JSON) fails the SDK's validation, so a refusal above was no accident."""
    proxy.travel(ON_DUTY)
    with pytest.raises(ValueError, match="Invalid JSON"):
        sdk(proxy).chat.completions.parse(model="m", messages=MESSAGES, response_format=Plan)
    [sent] = upstream.chat_requests
    assert sent.json["response_format"]["type"] == "json_schema"


def test_the_sdk_stream_helper_reports_the_refusal(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    with sdk(proxy).chat.completions.stream(
        model="m", messages=MESSAGES, response_format=Plan
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "refusal.done" in kinds
    assert "content.done" not in kinds
    assert final.choices[0].message.parsed is None
    assert final.choices[0].message.refusal == OFF_DUTY_REPLY
    assert upstream.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_json_object_off_duty_is_a_refusal_and_on_duty_is_sent(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    request: dict[str, Any] = {
        "model": "m",
        "messages": MESSAGES,
        "response_format": {"type": "json_object"},
    }
    proxy.travel(OFF_DUTY)
    if stream:
        chunks = list(sdk(proxy).chat.completions.create(**request, stream=True))
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        assert "".join(d.refusal or "" for d in deltas) == OFF_DUTY_REPLY
        assert all(d.content is None for d in deltas)
    else:
        message = sdk(proxy).chat.completions.create(**request).choices[0].message
        assert (message.content, message.refusal) == (None, OFF_DUTY_REPLY)
    assert upstream.requests == []

    proxy.travel(ON_DUTY)
    sdk(proxy).chat.completions.create(**request)
    [sent] = upstream.chat_requests
    assert sent.json == request


def test_n_choices_off_duty_streamed_or_not(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    completion = sdk(proxy).chat.completions.create(model="m", messages=MESSAGES, n=3)
    assert [c.index for c in completion.choices] == [0, 1, 2]
    assert {c.message.content for c in completion.choices} == {OFF_DUTY_REPLY}
    chunks = list(
        sdk(proxy).chat.completions.create(
            model="m",
            messages=MESSAGES,
            n=3,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert choices_by_index(chunks) == dict.fromkeys(range(3), OFF_DUTY_REPLY)
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 0
    with sdk(proxy).chat.completions.stream(model="m", messages=MESSAGES, n=3) as helper:
        final = helper.get_final_completion()
    assert [c.message.content for c in final.choices] == [OFF_DUTY_REPLY] * 3
    assert upstream.requests == []

    proxy.travel(ON_DUTY)  # the control: on duty ``n`` is the upstream's to honour
    sdk(proxy).chat.completions.create(model="m", messages=MESSAGES, n=3)
    [sent] = upstream.chat_requests
    assert sent.json["n"] == 3


@pytest.mark.parametrize("stream", [False, True])
def test_a_forced_tool_choice_off_duty_gets_a_refusal(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    """pydantic-ai's default output (``tool_choice: "required"``) and a named
    function: a text answer would make the agent ask again and fail, so the
    reply is the refusal the SDK reports; no tool call is invented."""
    proxy.travel(OFF_DUTY)
    client = sdk(proxy)
    tool = openai.pydantic_function_tool(Plan)
    forced: list[Any] = ["required", {"type": "function", "function": {"name": "Plan"}}]
    for tool_choice in forced:
        if stream:
            with client.chat.completions.stream(
                model="m", messages=MESSAGES, tools=[tool], tool_choice=tool_choice
            ) as helper:
                kinds = [event.type for event in helper]
                completion = helper.get_final_completion()
            assert "refusal.done" in kinds
            assert "content.done" not in kinds
        else:
            completion = client.chat.completions.parse(
                model="m", messages=MESSAGES, tools=[tool], tool_choice=tool_choice
            )
            assert completion.usage is not None
            assert completion.usage.total_tokens == 0
        message = completion.choices[0].message
        assert (message.content, message.refusal) == (None, OFF_DUTY_REPLY)
        assert not message.tool_calls  # none invented
        assert completion.choices[0].finish_reason == "stop"
    assert upstream.requests == []

    proxy.travel(ON_DUTY)  # the control: on duty the choice is the upstream's
    client.chat.completions.create(
        model="m", messages=MESSAGES, tools=[tool], tool_choice="required"
    )
    [sent] = upstream.chat_requests
    assert sent.json["tool_choice"] == "required"


# -- langchain-openai ------------------------------------------------------------------


LC_MESSAGES = [SystemMessage("You are a careful assistant."), HumanMessage("Explain the moon.")]


class Captured:
    """The bytes langchain's client put on the wire (an httpx request hook)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            self.bodies.append(request.read())


def chat(
    proxy_base_url: str, token: str, captured: Captured | None = None, **kw: Any
) -> ChatOpenAI:
    hooks = {"request": [captured]} if captured is not None else {}
    return ChatOpenAI(
        model="deepseek-chat",
        base_url=proxy_base_url,
        api_key=token,
        max_retries=0,
        timeout=20,
        http_client=httpx.Client(event_hooks=hooks, timeout=20),
        **kw,
    )


def test_langchain_off_duty_invoke_and_stream(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    llm = chat(proxy.base_url, proxy.token)
    reply = llm.invoke(LC_MESSAGES)
    assert isinstance(reply, AIMessage)
    assert reply.content == OFF_DUTY_REPLY
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["total_tokens"] == 0
    for stream_usage in (False, True):
        chunks = list(
            chat(proxy.base_url, proxy.token, stream_usage=stream_usage).stream(LC_MESSAGES)
        )
        whole = chunks[0]
        for chunk in chunks[1:]:
            whole += chunk
        assert isinstance(whole, AIMessageChunk)
        assert whole.content == OFF_DUTY_REPLY
        # Zero usage whether or not langchain asked for it (stream_options).
        assert whole.usage_metadata is not None
        assert (whole.usage_metadata["input_tokens"], whole.usage_metadata["output_tokens"]) == (
            0,
            0,
        )
    assert upstream.requests == []


def test_langchain_on_duty_is_forwarded_byte_for_byte(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    captured = Captured()
    llm = chat(proxy.base_url, proxy.token, captured, max_tokens=4096)
    assert llm.invoke(LC_MESSAGES).content == REPLY_TEXT
    [sent] = upstream.chat_requests
    [wire] = captured.bodies
    assert sent.body == wire
    assert json.loads(wire)["max_completion_tokens"] == 4096  # langchain's only budget name
    assert "max_tokens" not in json.loads(wire)


def test_langchain_winding_default_keeps_its_max_completion_tokens(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """The default (CURFEW_UPSTREAM_BUDGET_KEY unset): the clamp goes under the
    name langchain sent, the one many providers ignore; see the ``both`` app below."""
    proxy.travel(WINDING)
    chat(proxy.base_url, proxy.token, max_tokens=9000).invoke(LC_MESSAGES)
    [sent] = upstream.chat_requests
    assert sent.json["max_completion_tokens"] == expected(WINDING).max_tokens
    assert "max_tokens" not in sent.json


def test_langchain_structured_output_off_duty_raises_its_refusal_error(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(OFF_DUTY)
    structured = chat(proxy.base_url, proxy.token).with_structured_output(Plan)
    with pytest.raises(OpenAIRefusalError, match=OFF_DUTY_REPLY):
        structured.invoke(LC_MESSAGES)
    with pytest.raises(OpenAIRefusalError, match=OFF_DUTY_REPLY):
        list(structured.stream(LC_MESSAGES))
    raw = chat(proxy.base_url, proxy.token).with_structured_output(Plan, include_raw=True)
    result = raw.invoke(LC_MESSAGES)
    assert isinstance(result, dict)
    assert result["parsed"] is None
    assert isinstance(result["parsing_error"], OpenAIRefusalError)
    assert result["raw"].additional_kwargs["refusal"] == OFF_DUTY_REPLY
    json_mode = chat(proxy.base_url, proxy.token).with_structured_output(Plan, method="json_mode")
    with pytest.raises(OpenAIRefusalError, match=OFF_DUTY_REPLY):
        json_mode.invoke(LC_MESSAGES)
    # Function calling forces the tool: the same refusal (a text answer left
    # it no tool call to parse, and it returned None as if the model had).
    tools = chat(proxy.base_url, proxy.token).with_structured_output(
        Plan, method="function_calling"
    )
    with pytest.raises(OpenAIRefusalError, match=OFF_DUTY_REPLY):
        tools.invoke(LC_MESSAGES)
    assert upstream.requests == []


# -- an app whose operator set CURFEW_UPSTREAM_BUDGET_KEY=both -------------------------------


@pytest.fixture(scope="module")
def both_app(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream) -> Iterator[Proxy]:
    app = ServedApp(
        Path(tmp_path_factory.mktemp("proxy-both")),
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": UPSTREAM_KEY,
            "CURFEW_UPSTREAM_BUDGET_KEY": "both",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield Proxy(app, app.create_user("proxy-both"))
    app.stop()


def test_langchain_winding_with_both_puts_max_tokens_too(
    both_app: Proxy, upstream: FakeUpstream
) -> None:
    both_app.travel(WINDING)
    chat(both_app.base_url, both_app.token, max_tokens=9000).invoke(LC_MESSAGES)
    chat(both_app.base_url, both_app.token).invoke(LC_MESSAGES)
    chat(both_app.base_url, both_app.token, max_tokens=100).invoke(LC_MESSAGES)
    budget = expected(WINDING).max_tokens
    sent = [
        (r.json.get("max_tokens"), r.json.get("max_completion_tokens"))
        for r in upstream.chat_requests
    ]
    assert sent == [(budget, budget), (budget, budget), (100, 100)]

    both_app.travel(ON_DUTY)  # the control: on duty nothing is renamed or added
    captured = Captured()
    chat(both_app.base_url, both_app.token, captured, max_tokens=9000).invoke(LC_MESSAGES)
    assert upstream.chat_requests[-1].body == captured.bodies[-1]
    assert "max_tokens" not in upstream.chat_requests[-1].json


def test_a_bad_budget_key_stops_the_start_naming_the_setting(both_app: Proxy) -> None:
    bad = ServedApp(both_app.app.workdir, env={"CURFEW_UPSTREAM_BUDGET_KEY": "max-tokens"})
    checked = bad.manage("check", check=False)
    assert checked.returncode != 0
    assert "CURFEW_UPSTREAM_BUDGET_KEY='max-tokens' is not one of" in checked.stderr
    assert "max_completion_tokens" in checked.stderr
