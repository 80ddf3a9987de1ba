"""What the callback's Gemini handling rests on, pinned against LiteLLM itself
(in process, in front of a local fake Gemini): its ``generateContent`` takes a
string mock and sends nothing upstream; its stream does not (it would call
upstream), so the callback answers an off-duty stream through the HTTP client
LiteLLM's Gemini handler takes, handed over in ``async_pre_call_deployment_hook``,
and sends the call nowhere should that client ever be dropped; and its proxy
routes hand the pre-call hook the call types the callback checks."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


import litellm.google_genai as google_genai
from curfew_client import gemini_shapes, litellm_hook
from litellm.types.utils import CallTypes

from curfew_testkit.fake_gemini import FakeGemini

MODEL = "gemini/gemini-2.5-flash"
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]


@pytest.fixture(scope="module")
def google() -> Iterator[FakeGemini]:
    fake = FakeGemini().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(google: FakeGemini) -> FakeGemini:
    google.requests.clear()
    return google


def call(fake: FakeGemini, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "contents": CONTENTS,
        "api_base": fake.base_url,
        "api_key": "k",
        **extra,
    }


async def test_litellms_generate_content_mock_sends_nothing_upstream(fake: FakeGemini) -> None:
    answer = await google_genai.agenerate_content(**call(fake, mock_response="。"))
    assert answer["candidates"][0]["content"]["parts"] == [{"text": "。"}]
    assert fake.model_posts() == []
    # The control: without the mock the same call goes upstream.
    await google_genai.agenerate_content(**call(fake))
    assert len(fake.model_posts()) == 1


async def test_litellms_gemini_stream_ignores_a_mock_so_the_hook_cannot_mock_it(
    fake: FakeGemini,
) -> None:
    # Were the callback to mock an off-duty stream, the call would still go
    # upstream: this is why it answers one through the call's own HTTP client
    # (below) instead (and why this test must keep passing until LiteLLM mocks
    # streams too; then the callback may mock them as it mocks the rest).
    stream = await google_genai.agenerate_content_stream(
        **call(fake, mock_response="。", stream=True)
    )
    chunks = [chunk async for chunk in stream]
    assert chunks
    assert [post.path.partition("?")[0] for post in fake.model_posts()] == [
        "/models/gemini-2.5-flash:streamGenerateContent"
    ]


def test_litellms_gemini_routes_hand_the_hook_call_types_it_checks() -> None:
    from litellm.types.utils import API_ROUTE_TO_CALL_TYPES

    for route in (
        "/v1beta/models/{model}:generateContent",
        "/v1beta/models/{model}:streamGenerateContent",
        "/models/{model}:generateContent",
        "/models/{model}:streamGenerateContent",
    ):
        for call_type in API_ROUTE_TO_CALL_TYPES[route]:
            assert litellm_hook.CALL_KINDS[call_type.value] == "gemini", route
    streams = {kind.value for kind in CallTypes if kind.value.endswith("generate_content_stream")}
    assert streams == set(litellm_hook.GEMINI_STREAMS)


async def test_litellm_logs_an_answered_generate_content_as_a_zero_usage_success(
    fake: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    # LiteLLM's success logging of a generate_content reads the call's httpx
    # response, which its string mock never sets: without the callback's, it
    # logged "httpx_response is None" as an ERROR and recorded nothing.
    from datetime import UTC, datetime

    from litellm.litellm_core_utils.rules import Rules
    from litellm.types.utils import ModelResponse
    from litellm.utils import function_setup

    from tests.litellm.test_litellm_hook import Curfew, verdict

    hook = Curfew(verdict("off-duty")).hook()
    data = call(fake, litellm_call_id="call-log")
    # As the proxy does before its pre-call hooks.
    logging_obj, data = function_setup(
        original_function="agenerate_content",
        rules_obj=Rules(),
        start_time=datetime.now(UTC),
        **data,
    )
    data["litellm_logging_obj"] = logging_obj
    checked = await hook.async_pre_call_hook(None, None, data, "agenerate_content")
    assert checked is not None
    answer = await google_genai.agenerate_content(**checked)
    assert fake.model_posts() == []
    with caplog.at_level(logging.DEBUG):
        _, _, logged = logging_obj._success_handler_helper_fn(result=answer)
    assert isinstance(logged, ModelResponse)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    usage: Any = getattr(logged, "usage", None)  # set on the response, not a declared field
    assert (usage.prompt_tokens, usage.completion_tokens) == (0, 0)
    assert logged.choices[0].message.content == "。"
    payload = logging_obj.model_call_details["standard_logging_object"]
    assert payload["total_tokens"] == 0
    assert payload["status"] == "success"


# -- an off-duty stream, answered in process ---------------------------------------
#
# LiteLLM's proxy sends a Gemini stream through its router, whose deployment
# names Google's address and key; the callback's pre-call hook has the call's
# ``data``, its deployment hook the router's ``kwargs`` just before the send.


STREAM_CALL = "agenerate_content_stream"


def router(fake: FakeGemini) -> Any:
    """LiteLLM's router with one Gemini deployment in front of the fake, as
    the proxy's ``config.yaml`` makes it."""
    from litellm import Router

    deployment = {"model": MODEL, "api_base": fake.base_url, "api_key": "AIza-real-key"}
    return Router(model_list=[{"model_name": "gemini-2.5-flash", "litellm_params": deployment}])


def proxy_call(call_id: str) -> dict[str, Any]:
    """``data`` as the proxy's stream route hands it to the pre-call hook: with
    the call's own logging object, made as the proxy makes it before its
    pre-call hooks (``function_setup``), which the router then hands the
    deployment hook."""
    from datetime import UTC, datetime

    from litellm.litellm_core_utils.rules import Rules
    from litellm.utils import function_setup

    data: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "contents": CONTENTS,
        "stream": True,
        "litellm_call_id": call_id,
        "proxy_server_request": {"headers": {"x-curfew-session": call_id}},
    }
    logging_obj, _ = function_setup(
        original_function=STREAM_CALL, rules_obj=Rules(), start_time=datetime.now(UTC), **data
    )
    data["litellm_logging_obj"] = logging_obj
    return data


def off_duty_hook(reply: str = "睡吧。") -> litellm_hook.CurfewHook:
    from tests.litellm.test_litellm_hook import Curfew, verdict

    return Curfew(verdict("lights-out", reply=reply)).hook()


async def drained(call: Any) -> list[Any]:
    """A stream's chunks, the call awaited first."""
    stream = await call
    return [chunk async for chunk in stream]


def decoded_events(chunks: list[Any]) -> list[dict[str, Any]]:
    text = b"".join(c if isinstance(c, bytes) else str(c).encode() for c in chunks).decode()
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.strip()]


async def test_an_off_duty_stream_is_answered_by_the_callback_through_litellms_router(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    hook = off_duty_hook()
    # As the config's ``callbacks:`` installs it (the deployment hook is LiteLLM's
    # ``async_pre_call_deployment_hook``, called for ``litellm.callbacks``).
    monkeypatch.setattr(litellm, "callbacks", [hook])
    data = await hook.async_pre_call_hook(None, None, proxy_call("stream-1"), STREAM_CALL)
    assert data is not None
    stream = await router(fake).agenerate_content_stream(**data)
    found = decoded_events([chunk async for chunk in stream])
    assert fake.requests == []
    (event,) = found
    (candidate,) = event["candidates"]
    assert candidate["content"]["parts"] == [{"text": "睡吧。"}]
    assert candidate["finishReason"] == "STOP"
    assert event["usageMetadata"] == gemini_shapes.zero_usage()


async def test_an_on_duty_stream_through_the_same_router_reaches_upstream(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control: the same router and callback, on duty, send the stream.
    import litellm

    from tests.litellm.test_litellm_hook import Curfew, verdict

    hook = Curfew(verdict("on-duty")).hook()
    monkeypatch.setattr(litellm, "callbacks", [hook])
    data = await hook.async_pre_call_hook(None, None, proxy_call("stream-2"), STREAM_CALL)
    assert data is not None
    stream = await router(fake).agenerate_content_stream(**data)
    found = decoded_events([chunk async for chunk in stream])
    texts = [event["candidates"][0]["content"]["parts"][0]["text"] for event in found]
    assert "".join(texts) == "Hello there"
    (post,) = fake.model_posts()
    assert json.loads(post.body)["contents"] == CONTENTS
    assert post.headers.get("x-goog-api-key") == "AIza-real-key"


async def test_an_off_duty_stream_whose_client_litellm_dropped_fails_and_sends_nothing(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were a LiteLLM to stop calling the deployment hook (or to drop the client
    # it hands over), the call goes where the pre-call hook pointed it, an
    # address that resolves nowhere, with no key: an error, never upstream.
    import litellm

    hook = off_duty_hook()
    monkeypatch.setattr(litellm, "callbacks", [])  # the deployment hook is never called
    data = await hook.async_pre_call_hook(None, None, proxy_call("stream-3"), STREAM_CALL)
    assert data is not None
    assert data["api_base"] == litellm_hook.NOWHERE
    # LiteLLM maps the connect error its own way (an InternalServerError), naming the address.
    with pytest.raises(Exception, match=re.escape("curfew-answers.invalid")):
        await drained(router(fake).agenerate_content_stream(**data))
    assert fake.requests == []
