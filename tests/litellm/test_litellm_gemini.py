"""What the callback's Gemini handling rests on, pinned against LiteLLM itself
(in process, in front of a local fake Gemini): its ``generateContent`` takes a
string mock and sends nothing upstream, its stream does not (so the callback
refuses an off-duty stream rather than mocking it), and its proxy routes hand
the pre-call hook the call types the callback checks."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


import litellm.google_genai as google_genai
from curfew_client import litellm_hook
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


async def test_litellms_gemini_stream_ignores_a_mock_so_the_hook_must_refuse_it(
    fake: FakeGemini,
) -> None:
    # Were the callback to mock an off-duty stream, the call would still go
    # upstream: this is why it refuses one (and why this test must keep passing
    # until LiteLLM mocks streams too; then the callback may answer them).
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
