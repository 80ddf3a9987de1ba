"""The operator's key never reaches a client through a stream either (issue
23, "not yet tried": key scrubbing on the Anthropic streaming path and in
streamed upstream errors).

A non-200 error body was scrubbed, but a 200 stream was relayed byte for
byte: an upstream that put the key (or an echo of the request's headers)
into an error event mid-stream handed it on. The fake upstreams here send
such streams, with the key split across two chunks besides; the model's own
text is the control, relayed as it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import CHAT, SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)

OTHER_KEY = "sk-proj-Abc123def456ghi789JKL"
#: Text a model may well write: not a secret of ours, so it is relayed.
MODEL_TEXT = "Set OPENAI_API_KEY=sk-your-key-here and send Authorization: Bearer <token>."
LEAK = f"key {SECRET} over quota; org key {OTHER_KEY}; sent Authorization: Bearer {SECRET}x"
MESSAGES = {
    "model": "m",
    "max_tokens": 10,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}


def sse(event: str | None, payload: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


def split_in_the_key(events: list[bytes]) -> list[bytes]:
    """The same bytes, cut into chunks at the middle of the first key."""
    whole = b"".join(events)
    at = whole.index(SECRET.encode()) + len(SECRET) // 2
    return [whole[:at], whole[at:]]


@pytest.fixture
def anthropic(anthropic_upstream: FakeAnthropic) -> Iterator[FakeAnthropic]:
    with override_settings(
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{anthropic_upstream.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
    ):
        yield anthropic_upstream


@pytest.fixture
def openai(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield upstream


def assert_clean(text: str) -> None:
    assert SECRET not in text
    assert SECRET[: len(SECRET) // 2] not in text, "half a key is still a leak"
    assert OTHER_KEY not in text
    assert f"Bearer {SECRET}" not in text


async def messages(token: str) -> str:
    response = await AsyncClient().post(
        "/v1/messages", MESSAGES, content_type="application/json", headers={"x-api-key": token}
    )
    assert response.status_code == 200
    return (await body_of(response)).decode()


ANTHROPIC_START = sse("message_start", {"type": "message_start", "message": {"id": "msg_1"}})


@pytest.mark.parametrize("split", [False, True])
async def test_an_anthropic_error_event_mid_stream_loses_every_key(
    token: str, anthropic: FakeAnthropic, split: bool
) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": LEAK}}
    events = [ANTHROPIC_START, sse("error", error)]
    anthropic.stream = split_in_the_key(events) if split else events
    text = await messages(token)
    assert_clean(text)
    assert "[redacted]" in text
    assert "overloaded_error" in text  # the rest is relayed
    assert "over quota" in text
    assert '"msg_1"' in text


async def test_an_anthropic_answer_keeps_the_models_text_but_not_the_operators_key(
    token: str, anthropic: FakeAnthropic
) -> None:
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    events = [
        ANTHROPIC_START,
        sse("content_block_delta", {**delta, "delta": {"type": "text_delta", "text": MODEL_TEXT}}),
        sse(
            "content_block_delta",
            {**delta, "delta": {"type": "text_delta", "text": f"your key is {SECRET}"}},
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    anthropic.stream = split_in_the_key(events)
    text = await messages(token)
    assert json.dumps(MODEL_TEXT) in text, "the model's own words are relayed as sent"
    assert_clean(text)
    assert "message_stop" in text


async def test_an_openai_error_chunk_mid_stream_loses_every_key(
    token: str, openai: FakeUpstream
) -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "choices": []}
    events = [
        f"data: {json.dumps(chunk)}\n\n".encode(),
        f"data: {json.dumps({'error': {'message': LEAK, 'type': 'server_error'}})}\n\n".encode(),
        b"data: [DONE]\n\n",
    ]
    openai.stream = split_in_the_key(events)
    response = await client(token).post("/v1/chat/completions", {**CHAT, "stream": True})
    assert response.status_code == 200
    text = (await body_of(response)).decode()
    assert_clean(text)
    assert "server_error" in text
    assert "over quota" in text
    assert "[DONE]" in text


async def test_a_last_event_without_its_blank_line_loses_the_key_too(
    token: str, openai: FakeUpstream
) -> None:
    # Held back as a partial event until the stream ends, then cut and sent.
    body = json.dumps({"id": "c1", "choices": [{"message": {"content": f"echo {SECRET}"}}]})
    openai.stream = split_in_the_key([body.encode()])
    response = await client(token).post("/v1/chat/completions", {**CHAT, "stream": True})
    text = (await body_of(response)).decode()
    assert SECRET not in text
    assert "[redacted]" in text
