"""The control group for ``/v1/messages``: the real ``anthropic`` SDK through the
served proxy, in front of a recording fake Anthropic provider. The recorder
must see zero requests off duty and at lights out, a clamped body when winding,
and the very bytes the client sent when on duty or exempt.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from curfew_testkit.fake_anthropic import INPUT_TOKENS, REPLY_TEXT, USAGE, FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import ANTHROPIC_KEY, EXEMPT_SESSION, UPSTREAM_KEY, Proxy
from tests.proxy.test_proxy_gates import (
    LIGHTS_OUT,
    OFF_DUTY,
    ON_DUTY,
    WINDING,
    WINDING_LATE,
    expected,
)

SYSTEM = "You are a careful assistant."
MESSAGES = [{"role": "user", "content": "Explain the moon landing."}]
TOOLS = [
    {
        "name": "now",
        "description": "The time.",
        "input_schema": {"type": "object", "properties": {}},
    }
]


def sdk(proxy: Proxy, session: str = "s-1", **headers: str) -> anthropic.Anthropic:
    # The SDK adds ``/v1/messages`` to the base URL itself: the server's root.
    return anthropic.Anthropic(
        base_url=proxy.app.base_url,
        api_key=proxy.token,
        max_retries=0,
        timeout=20,
        default_headers={"X-Curfew-Session": session, **headers},
    )


def text_of(message: anthropic.types.Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def assert_zero_usage(usage: anthropic.types.Usage) -> None:
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


# -- off duty and lights out: the canned reply, and nothing upstream ---------------


@pytest.mark.parametrize(
    ("moment", "state", "reply"),
    [(OFF_DUTY, "off-duty", "。"), (LIGHTS_OUT, "lights-out", "明天再说。")],
)
def test_short_circuit_answers_a_message_without_calling_upstream(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    assert expected(moment).reply == reply  # the control: the engine agrees

    raw = sdk(proxy).messages.with_raw_response.create(
        model="deepseek-chat", max_tokens=4096, system=SYSTEM, messages=MESSAGES, tools=TOOLS
    )
    message = raw.parse()

    assert raw.headers["X-Curfew-State"] == state
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    assert raw.headers["content-type"] == "application/json"
    assert message.type == "message"
    assert message.id.startswith("msg_curfew_")
    assert message.role == "assistant"
    assert message.model == "deepseek-chat"
    assert text_of(message) == reply
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert_zero_usage(message.usage)
    assert anthropic_upstream.requests == []


def test_the_short_circuit_message_parses_strictly(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    """Every field the SDK's model declares, with its type: validated, not just constructed."""
    proxy.travel(LIGHTS_OUT)
    response = httpx.post(
        f"{proxy.app.base_url}/v1/messages",
        json={"model": "m", "max_tokens": 10, "messages": MESSAGES},
        headers={"x-api-key": proxy.token},
        timeout=10,
    )
    assert response.status_code == 200
    message = anthropic.types.Message.model_validate(response.json(), strict=True)
    assert text_of(message) == "明天再说。"
    assert anthropic_upstream.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_forced_tool_choice_off_duty_is_a_refusal(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, stream: bool
) -> None:
    """``tool_choice`` ``any`` or a named tool: ``stop_reason: "refusal"``
    with its ``stop_details`` (the reply as its explanation, no content), not
    an ``end_turn`` an agent answers by asking for its tool again; zero usage."""
    proxy.travel(OFF_DUTY)
    client = sdk(proxy)
    for tool_choice in ({"type": "any"}, {"type": "tool", "name": "now"}):
        request: Any = {
            "model": "m",
            "max_tokens": 1024,
            "messages": MESSAGES,
            "tools": TOOLS,
            "tool_choice": tool_choice,
        }
        if stream:
            with client.messages.stream(**request) as helper:
                message = helper.get_final_message()
        else:
            message = client.messages.create(**request)
        assert message.stop_reason == "refusal"
        assert message.stop_details is not None
        assert message.stop_details.explanation == "。"
        assert message.content == []  # no text taken for an answer, no tool_use invented
        assert_zero_usage(message.usage)
    assert anthropic_upstream.requests == []

    proxy.travel(ON_DUTY)  # the control: sent as asked
    client.messages.create(
        model="m", max_tokens=10, messages=MESSAGES, tools=TOOLS, tool_choice={"type": "any"}
    )
    [sent] = anthropic_upstream.message_requests
    assert sent.json["tool_choice"] == {"type": "any"}


# -- winding: the clamp and the persona reach the upstream -----------------------


@pytest.mark.parametrize("moment", [WINDING, WINDING_LATE])
def test_winding_clamps_max_tokens_and_appends_the_persona(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str
) -> None:
    proxy.travel(moment)
    want = expected(moment, session_id="s-1")
    assert want.max_tokens is not None
    assert want.persona

    raw = sdk(proxy).messages.with_raw_response.create(
        model="m", max_tokens=8000, system=SYSTEM, messages=MESSAGES, stop_sequences=["END"]
    )
    message = raw.parse()

    assert raw.headers["X-Curfew-State"] == "winding"
    assert raw.headers["X-Curfew-Action"] == "clamp"
    assert raw.headers["X-Curfew-Max-Tokens"] == str(want.max_tokens)
    assert text_of(message) == REPLY_TEXT  # the upstream's answer
    assert message.usage.output_tokens == USAGE["output_tokens"]
    [sent] = anthropic_upstream.message_requests
    assert sent.path == "/anthropic/v1/messages"
    assert sent.json == {
        "model": "m",
        "max_tokens": want.max_tokens,
        "system": f"{SYSTEM}\n\n{want.persona}",
        "messages": MESSAGES,
        "stop_sequences": ["END"],
    }


def test_winding_clamp_is_a_min_never_a_raise(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)
    client = sdk(proxy)
    client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    client.messages.create(model="m", max_tokens=5000, messages=MESSAGES)
    small, large = anthropic_upstream.message_requests
    assert small.json["max_tokens"] == 100
    assert large.json["max_tokens"] == expected(WINDING).max_tokens == 1824


def test_winding_appends_the_persona_as_a_block_after_cached_blocks(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)
    blocks: list[Any] = [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}},
    ]
    sdk(proxy).messages.create(model="m", max_tokens=50, system=blocks, messages=MESSAGES)
    [sent] = anthropic_upstream.message_requests
    persona = expected(WINDING, session_id="s-1").persona
    assert sent.json["system"] == [*blocks, {"type": "text", "text": persona}]


def test_winding_without_a_system_prompt_gets_the_persona_as_one(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)
    sdk(proxy).messages.create(model="m", max_tokens=50, messages=MESSAGES)
    [sent] = anthropic_upstream.message_requests
    assert sent.json["system"] == expected(WINDING, session_id="s-1").persona


def test_winding_keeps_the_thinking_budget_below_the_clamp(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)  # budget 1824: room for a thinking budget of 1024..1823
    client = sdk(proxy)
    client.messages.create(
        model="m",
        max_tokens=16000,
        thinking={"type": "enabled", "budget_tokens": 10000},
        messages=MESSAGES,
    )
    client.messages.create(
        model="m",
        max_tokens=16000,
        thinking={"type": "enabled", "budget_tokens": 1200},
        messages=MESSAGES,
    )
    lowered, kept = anthropic_upstream.message_requests
    assert lowered.json["max_tokens"] == 1824
    assert lowered.json["thinking"] == {"type": "enabled", "budget_tokens": 1823}
    assert kept.json["thinking"] == {"type": "enabled", "budget_tokens": 1200}


def test_winding_turns_thinking_off_when_the_clamp_leaves_no_room(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING_LATE)  # budget 560: no thinking budget can be >= 1024 and < 560
    sdk(proxy).messages.create(
        model="m",
        max_tokens=16000,
        thinking={"type": "enabled", "budget_tokens": 10000},
        messages=MESSAGES,
    )
    [sent] = anthropic_upstream.message_requests
    assert sent.json["max_tokens"] == 560
    assert sent.json["thinking"] == {"type": "disabled"}


def test_winding_keeps_tools_the_verdict_allows(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    # Tools are denied only with a short-circuit (nothing is sent at all); the
    # dropping itself is unit-tested in client/tests/test_anthropic_shapes.py.
    proxy.travel(WINDING)
    assert expected(WINDING).tools == "allow"
    sdk(proxy).messages.create(
        model="m", max_tokens=50, messages=MESSAGES, tools=TOOLS, tool_choice={"type": "auto"}
    )
    [sent] = anthropic_upstream.message_requests
    assert sent.json["tools"] == TOOLS
    assert sent.json["tool_choice"] == {"type": "auto"}


def test_an_exempt_session_at_the_same_instant_passes_untouched(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)
    request: dict[str, Any] = {"model": "m", "max_tokens": 4000, "messages": MESSAGES}
    normal = sdk(proxy, session="ordinary").messages.with_raw_response.create(**request)
    exempt = sdk(proxy, session=EXEMPT_SESSION).messages.with_raw_response.create(**request)
    assert normal.headers["X-Curfew-Action"] == "clamp"
    assert exempt.headers["X-Curfew-Action"] == "pass"
    clamped, untouched = anthropic_upstream.message_requests
    assert clamped.json["max_tokens"] == 1824
    assert untouched.json == request


# -- on duty: nothing touched --------------------------------------------------------


def test_on_duty_forwards_the_very_bytes_and_relays_the_answer(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    # Odd spacing and key order: a re-serialised body would not match.
    raw = (
        '{"messages": [{"role": "user", "content": "hi \\u00e9"}],   "model":"m",'
        '"max_tokens": 9000, "tools": ' + json.dumps(TOOLS) + ', "temperature": 0.70}'
    ).encode()
    response = httpx.post(
        f"{proxy.app.base_url}/v1/messages",
        content=raw,
        headers={
            "x-api-key": proxy.token,
            "content-type": "application/json",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "prompt-caching-2024-07-31, token-efficient-tools-2025-02-19",
        },
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.headers["X-Curfew-State"] == "on-duty"
    assert response.headers["X-Curfew-Action"] == "pass"
    assert response.headers["request-id"] == "req_fake_anthropic_1"  # upstream ids are relayed
    assert response.headers["anthropic-ratelimit-requests-remaining"] == "49"
    assert "anthropic-organization-id" not in response.headers  # not on the list
    message = anthropic.types.Message.model_validate(response.json())
    assert text_of(message) == REPLY_TEXT
    assert message.usage.input_tokens == USAGE["input_tokens"]
    [sent] = anthropic_upstream.message_requests
    assert sent.body == raw
    assert sent.path == "/anthropic/v1/messages"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["anthropic-beta"] == (
        "prompt-caching-2024-07-31, token-efficient-tools-2025-02-19"
    )


def test_protocol_headers_go_as_sent_and_a_value_stays_one_header(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    """Passed on as sent, like every header (tests/proxy/test_proxy_passthrough.py):
    an odd value is the client's to send, and text that looks like a header in
    it stays inside that value; without a version the default is sent."""
    proxy.travel(ON_DUTY)
    body = {"model": "m", "max_tokens": 10, "messages": MESSAGES}
    for version, beta in (("2023-06-01; X-Evil: 1", "a b"), ("", "")):
        response = httpx.post(
            f"{proxy.app.base_url}/v1/messages",
            json=body,
            headers={"x-api-key": proxy.token, "anthropic-version": version, "anthropic-beta": beta}
            if version
            else {"x-api-key": proxy.token},
            timeout=10,
        )
        assert response.status_code == 200, response.text
    odd, plain = anthropic_upstream.message_requests
    assert odd.headers["anthropic-version"] == "2023-06-01; X-Evil: 1"
    assert odd.headers["anthropic-beta"] == "a b"
    assert plain.headers["anthropic-version"] == "2023-06-01"  # the default
    assert "anthropic-beta" not in plain.headers
    for sent in (odd, plain):
        assert "X-Evil" not in sent.headers


def test_the_sdk_version_header_is_passed_on(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    raw = sdk(proxy).messages.with_raw_response.create(model="m", max_tokens=10, messages=MESSAGES)
    [sent] = anthropic_upstream.message_requests
    assert sent.headers["anthropic-version"] == raw.http_request.headers["anthropic-version"]


# -- count_tokens: not a model call -------------------------------------------------


@pytest.mark.parametrize("moment", [OFF_DUTY, LIGHTS_OUT, ON_DUTY])
def test_count_tokens_is_forwarded_even_off_duty(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str
) -> None:
    proxy.travel(moment)
    raw = sdk(proxy).messages.with_raw_response.count_tokens(model="m", messages=MESSAGES)
    assert raw.parse().input_tokens == INPUT_TOKENS
    assert raw.headers["X-Curfew-Action"] == "pass"
    assert raw.headers["X-Curfew-State"] == expected(moment).state.value
    [sent] = anthropic_upstream.requests
    assert (sent.method, sent.path) == ("POST", "/anthropic/v1/messages/count_tokens")
    assert sent.json == {"model": "m", "messages": MESSAGES}
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY


def test_count_tokens_still_needs_a_live_token(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    client = anthropic.Anthropic(base_url=proxy.app.base_url, api_key="nope", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        client.messages.count_tokens(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert anthropic_upstream.requests == []


# -- auth, errors and the upstream key ---------------------------------------------


@pytest.mark.parametrize("scheme", ["x-api-key", "bearer"])
def test_the_token_is_accepted_as_x_api_key_or_bearer(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, scheme: str
) -> None:
    proxy.travel(ON_DUTY)
    headers = (
        {"x-api-key": proxy.token}
        if scheme == "x-api-key"
        else {"Authorization": f"Bearer {proxy.token}"}
    )
    response = httpx.post(
        f"{proxy.app.base_url}/v1/messages",
        json={"model": "m", "max_tokens": 10, "messages": MESSAGES},
        headers=headers,
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.headers["X-Curfew-State"] == "on-duty"
    assert len(anthropic_upstream.message_requests) == 1


@pytest.mark.parametrize("token", ["not-a-token", None])
def test_a_wrong_or_missing_token_is_an_authentication_error(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, token: str | None
) -> None:
    proxy.travel(ON_DUTY)
    if token is None:
        response = httpx.post(
            f"{proxy.app.base_url}/v1/messages",
            json={"model": "m", "max_tokens": 10, "messages": MESSAGES},
            timeout=10,
        )
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "authentication_error"
        assert response.headers["X-Curfew-State"] == "unknown"
        assert anthropic_upstream.requests == []
        return
    client = anthropic.Anthropic(base_url=proxy.app.base_url, api_key=token, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=MESSAGES)  # type: ignore[arg-type]
    response = caught.value.response
    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "unknown or revoked curfew API token"},
    }
    assert response.headers["X-Curfew-State"] == "unknown"
    assert response.headers["X-Curfew-Action"] == "none"
    assert anthropic_upstream.requests == []


def test_bad_input_and_methods_are_anthropic_errors(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    auth = {"x-api-key": proxy.token}
    bad = httpx.post(
        f"{proxy.app.base_url}/v1/messages",
        content=b"[1, 2]",
        headers={**auth, "content-type": "application/json"},
        timeout=10,
    )
    assert bad.status_code == 400
    assert bad.json()["type"] == "error"
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert "JSON object" in bad.json()["error"]["message"]
    assert bad.headers["X-Curfew-State"] == "on-duty"
    assert bad.headers["X-Curfew-Action"] == "none"
    for path in ("messages", "messages/count_tokens"):
        wrong = httpx.get(f"{proxy.app.base_url}/v1/{path}", headers=auth, timeout=10)
        assert wrong.status_code == 405
        assert wrong.headers["Allow"] == "POST"
        assert wrong.json()["error"]["type"] == "invalid_request_error"
    assert anthropic_upstream.requests == []


def test_the_upstream_key_is_used_upstream_and_never_shown(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, upstream: FakeUpstream
) -> None:
    proxy.travel(ON_DUTY)
    raw = sdk(proxy).messages.with_raw_response.create(model="m", max_tokens=10, messages=MESSAGES)
    [sent] = anthropic_upstream.message_requests
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    assert "Authorization" not in sent.headers  # neither the curfew token nor another key
    assert proxy.token not in str(sent.headers)
    assert "X-Curfew-Session" not in sent.headers
    assert ANTHROPIC_KEY not in raw.text()
    assert ANTHROPIC_KEY not in str(dict(raw.headers))
    assert upstream.requests == []  # the OpenAI upstream is not this door's

    # A provider that echoes the key in its refusal: the client never sees it.
    anthropic_upstream.fail = (
        401,
        json.dumps(
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"bad key {ANTHROPIC_KEY}"},
            }
        ).encode(),
    )
    for stream in (False, True):
        with pytest.raises(anthropic.AuthenticationError) as caught:
            sdk(proxy).messages.create(model="m", max_tokens=10, messages=MESSAGES, stream=stream)
        refused = caught.value.response
        assert ANTHROPIC_KEY not in refused.text
        assert "CURFEW_ANTHROPIC_UPSTREAM_API_KEY" in refused.text
        assert refused.json()["type"] == "error"
        assert refused.headers["X-Curfew-Action"] == "pass"

    # Any other error echoing it (or the OpenAI key) is scrubbed, its shape kept.
    anthropic_upstream.fail = (
        400,
        json.dumps(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"no: {ANTHROPIC_KEY} {UPSTREAM_KEY}",
                },
            }
        ).encode(),
    )
    with pytest.raises(anthropic.BadRequestError) as bad:
        sdk(proxy).messages.create(model="m", max_tokens=10, messages=MESSAGES)
    assert bad.value.response.json()["error"]["type"] == "invalid_request_error"
    assert ANTHROPIC_KEY not in bad.value.response.text
    assert UPSTREAM_KEY not in bad.value.response.text
    assert ANTHROPIC_KEY not in proxy.app.log_path.read_text()


def test_upstream_errors_are_relayed_in_anthropics_shape(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    anthropic_upstream.fail = (529, json.dumps(error).encode())
    with pytest.raises(anthropic.OverloadedError) as caught:
        sdk(proxy).messages.create(model="m", max_tokens=10, messages=MESSAGES)
    assert caught.value.response.json() == error
    anthropic_upstream.fail = (
        429,
        b'{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}',
    )
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk(proxy).messages.create(model="m", max_tokens=10, messages=MESSAGES)
    assert limited.value.response.json()["error"]["message"] == "slow down"
    assert limited.value.response.headers["X-Curfew-State"] == "on-duty"
    assert len(anthropic_upstream.message_requests) == 2
