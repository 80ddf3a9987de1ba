"""pydantic-ai's structured output off duty (issue 24, item 2).

Its default output mode forces a tool call (``tool_choice: "required"``;
Anthropic ``{"type": "any"}``). Answered with text, an agent asks again and
fails with ``UnexpectedModelBehavior: Exceeded maximum output retries``, which
says nothing about a curfew. Answered with the protocol's refusal, it stops
after one request with ``ContentFilterError`` carrying the reply.

The control: on duty the recording upstream answers with prose, and the same
agent asks twice and fails with the retry error, so the refusal above is what
stops it.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.exceptions import ContentFilterError, UnexpectedModelBehavior
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import Proxy
from tests.proxy.test_proxy_gates import OFF_DUTY, ON_DUTY


class Plan(BaseModel):
    steps: list[str]


def _model(proxy: Proxy, kind: str) -> Model:
    if kind == "anthropic":
        client = anthropic.AsyncAnthropic(
            base_url=proxy.app.base_url, api_key=proxy.token, max_retries=0, timeout=20
        )
        return AnthropicModel("m", provider=AnthropicProvider(anthropic_client=client))
    openai_client = openai.AsyncOpenAI(
        base_url=proxy.base_url, api_key=proxy.token, max_retries=0, timeout=20
    )
    provider = OpenAIProvider(openai_client=openai_client)
    if kind == "responses":
        return OpenAIResponsesModel("m", provider=provider)
    return OpenAIChatModel("m", provider=provider)


def _run(proxy: Proxy, kind: str) -> tuple[Exception, list[Any]]:
    """The agent's error, and the model responses it got before it."""
    agent = Agent(_model(proxy, kind), output_type=Plan, retries={"output": 1})
    with capture_run_messages() as messages, pytest.raises(UnexpectedModelBehavior) as raised:
        agent.run_sync("Plan the moon landing.")
    return raised.value, [m for m in messages if isinstance(m, ModelResponse)]


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_an_agent_stops_after_one_request_with_the_refusal(
    proxy: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic, kind: str
) -> None:
    proxy.travel(OFF_DUTY)
    error, responses = _run(proxy, kind)
    assert isinstance(error, ContentFilterError)
    assert "。" in str(error)  # the curfew's reply, carried to the caller
    assert len(responses) == 1
    assert upstream.requests == []
    assert anthropic_upstream.requests == []


@pytest.mark.parametrize("kind", ["chat", "anthropic"])
def test_the_control_a_text_answer_makes_the_agent_retry_and_fail(
    proxy: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic, kind: str
) -> None:
    proxy.travel(ON_DUTY)
    error, responses = _run(proxy, kind)
    assert not isinstance(error, ContentFilterError)
    assert "retries" in str(error)
    assert len(responses) == 2
    sent = upstream.chat_requests if kind == "chat" else anthropic_upstream.message_requests
    assert len(sent) == 2
    assert sent[0].json["tool_choice"] in ("required", {"type": "any"})
