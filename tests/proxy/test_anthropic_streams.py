"""Streams at ``/v1/messages``, through the real ``anthropic`` SDK (sync and
async): the short-circuit's full event sequence with nothing sent upstream, and
the upstream's events relayed as they come (a gate proves nothing is buffered).
"""

from __future__ import annotations

import threading
from typing import Any

import anthropic
import httpx
import pytest

from curfew_testkit.fake_anthropic import REPLY_TEXT, REPLY_WORDS, USAGE, FakeAnthropic
from tests.proxy.conftest import Proxy
from tests.proxy.test_anthropic_gates import MESSAGES, assert_zero_usage, sdk, text_of
from tests.proxy.test_proxy_gates import LIGHTS_OUT, OFF_DUTY, ON_DUTY, WINDING, expected

SEQUENCE = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
]
SHORT_CIRCUITS = [(OFF_DUTY, "。"), (LIGHTS_OUT, "明天再说。")]


def async_sdk(proxy: Proxy) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=proxy.app.base_url,
        api_key=proxy.token,
        max_retries=0,
        timeout=20,
        default_headers={"X-Curfew-Session": "s-1"},
    )


# -- off duty and lights out: a complete stream, nothing upstream -----------------


@pytest.mark.parametrize(("moment", "reply"), SHORT_CIRCUITS)
def test_create_stream_short_circuit_sends_the_full_sequence(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str, reply: str
) -> None:
    proxy.travel(moment)
    raw = sdk(proxy).messages.with_raw_response.create(
        model="m", max_tokens=4096, messages=MESSAGES, stream=True
    )
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    events: list[Any] = list(raw.parse())

    assert [event.type for event in events] == SEQUENCE
    start = events[0].message
    assert start.content == []
    assert start.stop_reason is None
    assert start.model == "m"
    assert_zero_usage(start.usage)
    assert events[2].delta.type == "text_delta"
    assert events[2].delta.text == reply
    assert events[4].delta.stop_reason == "end_turn"
    assert events[4].usage.output_tokens == 0
    assert anthropic_upstream.requests == []


@pytest.mark.parametrize(("moment", "reply"), SHORT_CIRCUITS)
def test_stream_helper_short_circuit_gives_a_final_message(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str, reply: str
) -> None:
    proxy.travel(moment)
    with sdk(proxy).messages.stream(model="m", max_tokens=4096, messages=MESSAGES) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == reply
    assert text_of(final) == reply
    assert final.stop_reason == "end_turn"
    assert final.id.startswith("msg_curfew_")
    assert_zero_usage(final.usage)
    assert anthropic_upstream.requests == []


def test_the_short_circuit_stream_names_every_event(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(LIGHTS_OUT)
    response = httpx.post(
        f"{proxy.app.base_url}/v1/messages",
        json={"model": "m", "max_tokens": 10, "messages": MESSAGES, "stream": True},
        headers={"x-api-key": proxy.token},
        timeout=10,
    )
    events = [event for event in response.text.split("\n\n") if event]
    assert [event.split("\n")[0] for event in events] == [f"event: {name}" for name in SEQUENCE]
    assert all(event.split("\n")[1].startswith("data: {") for event in events)
    assert anthropic_upstream.requests == []


@pytest.mark.parametrize(("moment", "reply"), SHORT_CIRCUITS)
async def test_async_short_circuit_message_and_stream(
    proxy: Proxy, anthropic_upstream: FakeAnthropic, moment: str, reply: str
) -> None:
    proxy.travel(moment)
    client = async_sdk(proxy)
    message = await client.messages.create(model="m", max_tokens=4096, messages=MESSAGES)
    assert text_of(message) == reply
    assert_zero_usage(message.usage)
    async with client.messages.stream(model="m", max_tokens=4096, messages=MESSAGES) as stream:
        texts = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert "".join(texts) == reply
    assert text_of(final) == reply
    assert_zero_usage(final.usage)
    await client.close()
    assert anthropic_upstream.requests == []


# -- winding and on duty: the upstream's events, relayed --------------------------


def test_winding_stream_is_clamped_and_relayed(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(WINDING)
    with sdk(proxy).messages.stream(model="m", max_tokens=9000, messages=MESSAGES) as stream:
        final = stream.get_final_message()
    assert text_of(final) == REPLY_TEXT
    assert final.usage.output_tokens == USAGE["output_tokens"]
    [sent] = anthropic_upstream.message_requests
    want = expected(WINDING, session_id="s-1")
    assert sent.json["max_tokens"] == want.max_tokens
    assert sent.json["system"] == want.persona
    assert sent.json["stream"] is True


def test_on_duty_stream_is_relayed_event_for_event(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    request: dict[str, Any] = {
        "model": "m",
        "max_tokens": 9000,
        "messages": MESSAGES,
        "stream": True,
    }
    events: list[Any] = list(sdk(proxy).messages.create(**request))
    deltas = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert deltas == REPLY_WORDS
    assert events[-1].type == "message_stop"
    [sent] = anthropic_upstream.message_requests
    assert sent.json == request


def test_the_first_event_arrives_before_the_upstream_has_finished(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    """No buffering: the upstream holds its stream after the first event until
    the SDK has seen that event. A buffering proxy would hold it back until the
    gate's 10s timeout, and the first assertion fails."""
    proxy.travel(ON_DUTY)
    anthropic_upstream.gate = threading.Event()
    stream = sdk(proxy).messages.create(model="m", max_tokens=10, messages=MESSAGES, stream=True)
    first = next(iter(stream))
    assert not anthropic_upstream.finished.is_set(), (
        "the first event arrived only after the upstream finished"
    )
    assert first.type == "message_start"
    anthropic_upstream.gate.set()
    rest = list(stream)
    assert rest[-1].type == "message_stop"
    assert anthropic_upstream.finished.wait(5)


async def test_async_on_duty_stream_is_relayed(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    client = async_sdk(proxy)
    async with client.messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream:
        texts = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    await client.close()
    assert texts == REPLY_WORDS
    assert final.usage.input_tokens == USAGE["input_tokens"]
    assert len(anthropic_upstream.message_requests) == 1


def test_a_stream_error_from_upstream_is_relayed_in_anthropics_shape(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    anthropic_upstream.fail = (
        529,
        b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}',
    )
    with (
        pytest.raises(anthropic.OverloadedError),
        sdk(proxy).messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream,
    ):
        stream.get_final_message()
