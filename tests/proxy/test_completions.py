"""The legacy completions door (``/v1/completions``) through the real OpenAI
SDK: the canned ``text_completion`` off duty with nothing upstream, ``max_tokens``
clamped while winding (set to ``min(16, budget)`` when absent: the API's
default), the very bytes on duty.
"""

from __future__ import annotations

import threading

import httpx
import openai
import pytest
from curfew_client.completions_shapes import DEFAULT_MAX_TOKENS

from curfew_testkit.fake_openai_more import COMPLETIONS_USAGE
from curfew_testkit.fake_reply import REPLY_TEXT, REPLY_WORDS
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import Proxy
from tests.proxy.test_proxy_gates import LIGHTS_OUT, OFF_DUTY, ON_DUTY, WINDING, expected, sdk

SHORT_CIRCUITS = [(OFF_DUTY, "off-duty", "。"), (LIGHTS_OUT, "lights-out", "明天再说。")]


def completions_sent(upstream: FakeUpstream) -> list[dict[str, object]]:
    return [r.json for r in upstream.requests if r.path == "/v1/completions"]


@pytest.mark.parametrize(("moment", "state", "reply"), SHORT_CIRCUITS)
def test_short_circuit_is_a_text_completion_and_nothing_goes_upstream(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    raw = sdk(proxy).completions.with_raw_response.create(
        model="gpt-3.5-turbo-instruct", prompt="Once upon a time", max_tokens=500
    )
    completion = raw.parse()
    assert raw.headers["X-Curfew-State"] == state
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    assert completion.object == "text_completion"
    assert completion.model == "gpt-3.5-turbo-instruct"
    [choice] = completion.choices
    assert (choice.text, choice.index, choice.finish_reason) == (reply, 0, "stop")
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (0, 0)
    assert completion.usage.total_tokens == 0
    assert upstream.requests == []


@pytest.mark.parametrize(("moment", "state", "reply"), SHORT_CIRCUITS)
def test_short_circuit_streams_the_canned_text(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    chunks = list(sdk(proxy).completions.create(model="m", prompt="hi", stream=True))
    assert "".join(c.choices[0].text for c in chunks) == reply
    assert chunks[-1].choices[0].finish_reason == "stop"
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == 1
    assert usages[0].total_tokens == 0
    assert upstream.requests == []


def test_one_choice_per_prompt_and_n(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    completion = sdk(proxy).completions.create(model="m", prompt=["a", "b"], n=2)
    assert [c.index for c in completion.choices] == [0, 1, 2, 3]
    assert upstream.requests == []


async def test_async_sdk_gets_the_canned_text(
    proxy: Proxy, upstream: FakeUpstream, closing: None
) -> None:
    proxy.travel(LIGHTS_OUT)
    client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key=proxy.token, max_retries=0)
    completion = await client.completions.create(model="m", prompt="hi")
    assert completion.choices[0].text == "明天再说。"
    assert upstream.requests == []


def test_winding_clamps_with_min_and_sets_the_default_explicitly(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(WINDING)
    budget = expected(WINDING).max_tokens
    assert budget is not None
    assert budget > 100 > DEFAULT_MAX_TOKENS
    client = sdk(proxy)
    raw = client.completions.with_raw_response.create(model="m", prompt="hi", max_tokens=5000)
    assert raw.headers["X-Curfew-Action"] == "clamp"
    assert raw.parse().choices[0].text == REPLY_TEXT  # the upstream's answer
    client.completions.create(model="m", prompt="hi", max_tokens=100)
    client.completions.create(model="m", prompt="hi")
    large, small, absent = completions_sent(upstream)
    assert large["max_tokens"] == budget
    assert small["max_tokens"] == 100
    # Absent means the API's default of 16: a clamp never raises it to the curve.
    assert absent["max_tokens"] == DEFAULT_MAX_TOKENS


def test_on_duty_forwards_the_very_bytes(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    raw_body = b'{"prompt":"hi",   "model":"m","max_tokens":9000}'
    response = httpx.post(
        f"{proxy.base_url}/completions",
        content=raw_body,
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json()["usage"] == COMPLETIONS_USAGE
    [sent] = upstream.requests
    assert (sent.path, sent.body) == ("/v1/completions", raw_body)


def test_on_duty_stream_is_not_held_back(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    upstream.gate = threading.Event()
    stream = iter(sdk(proxy).completions.create(model="m", prompt="hi", stream=True))
    first = next(stream)
    assert not upstream.finished.is_set(), "the first chunk arrived after the upstream finished"
    assert first.choices[0].text == REPLY_WORDS[0]
    upstream.gate.set()
    assert "".join(c.choices[0].text for c in [first, *stream]) == REPLY_TEXT


def test_a_wrong_token_is_refused_in_openai_shape(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    client = openai.OpenAI(base_url=proxy.base_url, api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.completions.create(model="m", prompt="hi")
    assert caught.value.response.status_code == 401
    assert upstream.requests == []
