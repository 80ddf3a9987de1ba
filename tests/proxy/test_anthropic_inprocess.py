"""``/v1/messages`` in-process (Django's async test client): the 429s a client
can meet are in Anthropic's shape (so its SDK raises RateLimitError and honours
``Retry-After``), the settings are read per request, and an upstream that
breaks off mid-stream ends the stream with Anthropic's ``error`` event."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from curfew_core import throttle
from curfew_core.edge import caller
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from tests.proxy.inprocess import SECRET, body_of

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


async def post(token: str, body: object = BODY, path: str = "/v1/messages") -> Any:
    return await AsyncClient().post(
        path, body, content_type="application/json", headers={"x-api-key": token}
    )


def _rate_limited(response: Any) -> None:
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    body = json.loads(response.content)
    assert body["type"] == "error"
    assert body["error"]["type"] == "rate_limit_error"


@pytest.fixture
def live(anthropic_upstream: FakeAnthropic) -> Iterator[FakeAnthropic]:
    with override_settings(
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{anthropic_upstream.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
    ):
        yield anthropic_upstream


async def test_a_token_over_its_upstream_share_is_a_429_in_anthropics_shape(
    token: str, live: FakeAnthropic, closing: None
) -> None:
    with override_settings(CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN=0):
        refused = await post(token)
        counted = await post(token, path="/v1/messages/count_tokens")
    for response in (refused, counted):
        _rate_limited(response)
        assert response["X-Curfew-State"] == "on-duty"
    assert live.requests == []
    served = await post(token)  # the control: with a share, it goes upstream
    assert served.status_code == 200
    assert len(live.message_requests) == 1


async def test_a_throttled_client_is_a_429_in_anthropics_shape(
    token: str, live: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def throttled(*args: object, **kwargs: object) -> None:
        raise throttle.Throttled(throttle.Refusal("api", 7, "too many requests"))

    monkeypatch.setattr(caller, "resolve", throttled)
    response = await post(token)
    _rate_limited(response)
    assert response["Retry-After"] == "7"
    assert live.requests == []


async def test_settings_are_read_per_request(
    token: str, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    from curfew_testkit.server import free_port

    with override_settings(
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"http://127.0.0.1:{free_port()}/anthropic"
    ):
        down = await post(token)
    assert down.status_code == 502
    assert json.loads(down.content)["error"]["type"] == "api_error"
    with override_settings(
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{anthropic_upstream.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
    ):
        up = await post(token)
    assert up.status_code == 200
    [sent] = anthropic_upstream.message_requests
    assert sent.headers["x-api-key"] == SECRET


async def test_a_stream_broken_off_upstream_ends_with_an_error_event(
    token: str, live: FakeAnthropic, closing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aiohttp

    original = aiohttp.StreamReader.readany
    # The upstream holds after its first event: the break comes mid-answer.
    live.gate = threading.Event()
    reads = 0

    async def breaks(self: aiohttp.StreamReader) -> bytes:
        nonlocal reads
        reads += 1
        if reads > 1:
            raise aiohttp.ClientPayloadError("connection reset")
        return await original(self)

    monkeypatch.setattr(aiohttp.StreamReader, "readany", breaks)
    response = await post(token, {**BODY, "stream": True})
    text = (await body_of(response)).decode()
    last = [event for event in text.split("\n\n") if event][-1]
    name, data = last.split("\n")
    assert name == "event: error"
    error = json.loads(data.removeprefix("data: "))
    assert error["type"] == "error"
    assert error["error"]["type"] == "api_error"
    assert text.startswith("event: message_start\n")
    assert "message_stop" not in text
