"""The curfew callback inside the real LiteLLM proxy, through the clients people run.

Off duty the recorder upstream sees nothing and the client gets a complete
answer with zero usage; on duty it sees the body as sent (the control group);
winding it sees the clamp and the persona. Each test names its own session
(``X-Curfew-Session``) so the callback's verdict cache never serves another
test's instant.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

import anthropic
import litellm
import openai

from curfew_testkit.fake_openai_more import EMBEDDING
from curfew_testkit.fake_reply import REPLY_TEXT
from tests.litellm.conftest import (
    EMBEDDING_MODEL,
    LIGHTS_OUT,
    MASTER_KEY,
    MODEL,
    OFF_DUTY,
    ON_DUTY,
    WINDING,
    LiteLLMProxy,
)

MESSAGES = [{"role": "user", "content": "hi"}]


def session() -> dict[str, str]:
    return {"X-Curfew-Session": f"litellm-{uuid.uuid4().hex[:12]}"}


def openai_client(proxy: LiteLLMProxy, scope: dict[str, str] | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{proxy.base_url}/v1",
        api_key=MASTER_KEY,
        default_headers=scope or session(),
        max_retries=0,
        timeout=30,
    )


def texts(value: object) -> Iterator[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def assert_ledger_zero(proxy: LiteLLMProxy, scope: dict[str, str], calls: int) -> None:
    """LiteLLM's own ledger recorded each call of ``scope`` as zero."""
    entries = proxy.ledger(scope["X-Curfew-Session"], calls)
    assert len(entries) == calls, entries
    for entry in entries:
        assert entry["tokens"] == [0, 0], entry
        assert not entry["cost"], entry


def model_posts(proxy: LiteLLMProxy) -> list[str]:
    """The model calls the upstream saw (LiteLLM's own GET /models aside)."""
    return [r.path for r in proxy.upstream.requests if r.method == "POST"]


# -- chat completions ----------------------------------------------------------


def test_off_duty_chat_is_answered_by_curfew_with_zero_usage(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    raw = openai_client(proxy, scope).chat.completions.with_raw_response.create(
        model=MODEL, messages=MESSAGES, max_tokens=500
    )
    completion = raw.parse()
    assert raw.http_response.status_code == 200
    assert completion.choices[0].message.content == "。"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (0, 0)
    assert completion.usage.total_tokens == 0
    assert raw.headers["x-curfew-state"] == "off-duty"
    assert raw.headers["x-curfew-action"] == "short-circuit"
    assert model_posts(proxy) == []
    assert_ledger_zero(proxy, scope, calls=1)


def test_on_duty_chat_goes_upstream_untouched(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(ON_DUTY)
    scope = session()
    raw = openai_client(proxy, scope).chat.completions.with_raw_response.create(
        model=MODEL, messages=MESSAGES, max_tokens=500
    )
    assert raw.parse().choices[0].message.content == "Hello from the fake upstream."
    assert raw.headers["x-curfew-state"] == "on-duty"
    assert raw.headers["x-curfew-action"] == "pass"
    (sent,) = proxy.upstream.chat_requests
    assert sent.json["max_tokens"] == 500
    assert sent.json["messages"] == MESSAGES
    # The ledger's control group: it does record the upstream's usage.
    (entry,) = proxy.ledger(scope["X-Curfew-Session"])
    assert entry["tokens"] == [11, 5]


def winding(proxy: LiteLLMProxy) -> tuple[int, str]:
    """Travel to winding; the clamp of a 100 000-token request and the persona."""
    proxy.curfew.travel(WINDING)
    verdict = proxy.curfew.verdict(max_tokens=100_000)
    assert verdict["action"] == "clamp"
    assert 0 < verdict["max_tokens"] < 100_000
    assert verdict["persona"]
    return verdict["max_tokens"], verdict["persona"]


def test_winding_chat_is_clamped_and_given_the_persona(proxy: LiteLLMProxy) -> None:
    clamp, persona = winding(proxy)
    raw = openai_client(proxy).chat.completions.with_raw_response.create(
        model=MODEL, messages=MESSAGES, max_tokens=100_000
    )
    assert raw.http_response.status_code == 200
    assert raw.headers["x-curfew-state"] == "winding"
    assert raw.headers["x-curfew-action"] == "clamp"
    (sent,) = proxy.upstream.chat_requests
    assert sent.json["max_tokens"] == clamp
    assert sent.json["messages"] == [{"role": "system", "content": persona}, *MESSAGES]


def test_lights_out_chat_streams_the_reply_with_zero_usage(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(LIGHTS_OUT)
    scope = session()
    stream = openai_client(proxy, scope).chat.completions.create(
        model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "明天再说。"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert "stop" in finishes
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == 1
    assert (usages[0].prompt_tokens, usages[0].completion_tokens, usages[0].total_tokens) == (
        0,
        0,
        0,
    )
    assert model_posts(proxy) == []
    assert_ledger_zero(proxy, scope, calls=1)


async def test_litellm_as_a_client_library_gets_the_same_answer(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    response = await litellm.acompletion(
        model=f"openai/{MODEL}",
        messages=MESSAGES,
        api_base=f"{proxy.base_url}/v1",
        api_key=MASTER_KEY,
        extra_headers=session(),
    )
    assert response.choices[0].message.content == "。"
    assert response.usage.total_tokens == 0
    assert model_posts(proxy) == []


def test_off_duty_legacy_completions_are_answered_with_zero_usage(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    client = openai_client(proxy, scope)
    completion = client.completions.create(model=MODEL, prompt="hi", max_tokens=500)
    assert completion.choices[0].text == "。"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0
    streamed = list(client.completions.create(model=MODEL, prompt="hi", stream=True))
    assert "".join(c.choices[0].text or "" for c in streamed if c.choices) == "。"
    assert model_posts(proxy) == []
    assert_ledger_zero(proxy, scope, calls=2)


def test_winding_legacy_completions_are_clamped(proxy: LiteLLMProxy) -> None:
    clamp, _ = winding(proxy)
    raw = openai_client(proxy).completions.with_raw_response.create(
        model=MODEL, prompt="hi", max_tokens=100_000
    )
    assert raw.parse().choices[0].text
    assert raw.headers["x-curfew-action"] == "clamp"
    (sent,) = [r.json for r in proxy.upstream.requests if r.path.endswith("/completions")]
    assert sent["max_tokens"] == clamp
    assert sent["prompt"] in ("hi", ["hi"])  # no persona: legacy completions have no system


# -- embeddings ----------------------------------------------------------------


def test_off_duty_embeddings_are_refused_cleanly(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    with pytest.raises(openai.APIStatusError) as raised:
        openai_client(proxy).embeddings.create(model=EMBEDDING_MODEL, input="hi")
    assert raised.value.status_code == 503
    assert raised.value.code == "curfew_off_duty"
    assert "off-duty" in raised.value.message
    assert raised.value.response.headers["content-type"].startswith("application/json")
    assert raised.value.response.headers["x-curfew-state"] == "off-duty"
    assert model_posts(proxy) == []


def test_on_duty_embeddings_go_upstream(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(ON_DUTY)
    raw = openai_client(proxy).embeddings.with_raw_response.create(
        model=EMBEDDING_MODEL, input="hi"
    )
    assert raw.parse().data[0].embedding == pytest.approx(EMBEDDING)
    assert raw.headers["x-curfew-state"] == "on-duty"
    assert model_posts(proxy) == ["/v1/embeddings"]
    assert proxy.upstream.requests[-1].json["input"] in ("hi", ["hi"])


# -- the Responses API -----------------------------------------------------------


def test_off_duty_responses_answer_with_zero_usage(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    client = openai_client(proxy, scope)
    response = client.responses.create(model=MODEL, input="hi", max_output_tokens=500)
    assert response.output_text == "。"
    assert response.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (0, 0)
    assert response.usage.total_tokens == 0
    # A follow-up turn, streamed, as agents send it (LiteLLM's bridge must not look it up).
    events = list(
        client.responses.create(
            model=MODEL, input="and?", stream=True, previous_response_id=response.id
        )
    )
    assert events[-1].type == "response.completed"
    done = events[-1].response
    assert done.output_text == "。"
    assert done.usage is not None
    assert done.usage.total_tokens == 0
    assert model_posts(proxy) == []
    assert_ledger_zero(proxy, scope, calls=2)


def test_winding_responses_are_clamped_with_instructions(proxy: LiteLLMProxy) -> None:
    clamp, persona = winding(proxy)
    raw = openai_client(proxy).responses.with_raw_response.create(
        model=MODEL, input="hi", max_output_tokens=100_000
    )
    assert raw.parse().output_text == REPLY_TEXT
    assert raw.headers["x-curfew-action"] == "clamp"
    sent = next(r for r in proxy.upstream.requests if r.path.endswith("/responses")).json
    assert sent["max_output_tokens"] == clamp
    assert persona in sent["instructions"]


# -- Anthropic messages ----------------------------------------------------------


def anthropic_client(
    proxy: LiteLLMProxy, scope: dict[str, str] | None = None
) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=proxy.base_url,
        api_key=MASTER_KEY,
        default_headers=scope or session(),
        max_retries=0,
        timeout=30,
    )


def test_off_duty_anthropic_messages_answer_with_zero_usage(proxy: LiteLLMProxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    client = anthropic_client(proxy, scope)
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=500, messages=MESSAGES)
    message = raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == "。"
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)
    assert raw.headers["x-curfew-state"] == "off-duty"
    with client.messages.stream(model=MODEL, max_tokens=500, messages=MESSAGES) as stream:
        streamed = stream.get_final_message()
        assert stream.response.headers["x-curfew-action"] == "short-circuit"
    assert streamed.content[0].type == "text"
    assert streamed.content[0].text == "。"
    assert (streamed.usage.input_tokens, streamed.usage.output_tokens) == (0, 0)
    assert model_posts(proxy) == []
    assert_ledger_zero(proxy, scope, calls=2)


def test_winding_anthropic_messages_are_clamped(proxy: LiteLLMProxy) -> None:
    clamp, persona = winding(proxy)
    # LiteLLM sends an OpenAI deployment's /v1/messages on through its Responses adapter.
    message = anthropic_client(proxy).messages.create(
        model=MODEL, max_tokens=100_000, system="Be brief.", messages=MESSAGES
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == REPLY_TEXT
    (sent,) = [r.json for r in proxy.upstream.requests if r.method == "POST"]
    assert sent["max_output_tokens"] == clamp
    instructions = "\n".join(texts(sent.get("instructions")))
    assert "Be brief." in instructions
    assert persona in instructions


def test_the_proxy_still_answers_its_health_check(proxy: LiteLLMProxy) -> None:
    assert httpx.get(f"{proxy.base_url}/health/liveliness", timeout=10).status_code == 200


# -- a change, pushed -------------------------------------------------------------

#: "About a second", with room for a loaded machine; a verdict cached without
#: push mode would stand for its whole horizon (asserted far longer below).
PUSH_DEADLINE = 3.0


def test_a_change_through_the_api_reaches_the_hook_within_about_a_second(
    proxy: LiteLLMProxy,
) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    client = openai_client(proxy, scope)

    def state() -> str:
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
        return raw.headers["x-curfew-state"]

    assert state() == "off-duty"  # now cached by the hook
    verdict = proxy.curfew.verdict(session_id=scope["X-Curfew-Session"])
    horizon = min(
        datetime.fromisoformat(verdict["valid_until"]).timestamp() - time.time(),
        verdict["max_age"],
    )
    assert horizon > 5 * PUSH_DEADLINE  # honest: only a push can make it this quick
    proxy.curfew.travel(ON_DUTY)
    changed = time.monotonic()
    while (seen := state()) != "on-duty":
        assert seen == "off-duty"
        assert time.monotonic() - changed < PUSH_DEADLINE, "the change did not reach the hook"
        time.sleep(0.05)
    assert proxy.upstream.chat_requests  # on duty at last: it went upstream
