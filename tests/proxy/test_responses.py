"""The Responses API door, through the real OpenAI SDK (sync and async) and the
served proxy, in front of a recording fake upstream: the control group is the
recorder, which must see zero requests off duty and the request on duty.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import openai
import pytest
from curfew_client.responses_shapes import MIN_OUTPUT_TOKENS
from pydantic import BaseModel

from curfew_testkit.fake_openai_more import RESPONSE_ID, RESPONSES_USAGE, STORED_RESPONSE_ID
from curfew_testkit.fake_reply import REPLY_TEXT, REPLY_WORDS
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy import rawhttp
from tests.proxy.conftest import UPSTREAM_KEY, Proxy
from tests.proxy.owners import own
from tests.proxy.test_proxy_gates import (
    LIGHTS_OUT,
    OFF_DUTY,
    ON_DUTY,
    WINDING,
    WINDING_LATE,
    expected,
    sdk,
)

INSTRUCTIONS = "You are a careful assistant."
SHORT_CIRCUITS = [(OFF_DUTY, "off-duty", "。"), (LIGHTS_OUT, "lights-out", "明天再说。")]


def async_sdk(proxy: Proxy) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=proxy.base_url,
        api_key=proxy.token,
        max_retries=0,
        timeout=20,
        default_headers={"X-Curfew-Session": "s-1"},
    )


def responses_sent(upstream: FakeUpstream) -> list[Any]:
    return [r for r in upstream.requests if r.path == "/v1/responses"]


def assert_zero_usage(usage: Any) -> None:
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (0, 0, 0)
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0


# -- off duty and lights out: the canned answer, nothing upstream ----------------


@pytest.mark.parametrize(("moment", "state", "reply"), SHORT_CIRCUITS)
def test_short_circuit_is_a_complete_response_and_nothing_goes_upstream(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    assert expected(moment).reply == reply  # the control: the engine agrees

    raw = sdk(proxy).responses.with_raw_response.create(
        model="gpt-4.1", input="Explain the moon landing.", instructions=INSTRUCTIONS
    )
    answer = raw.parse()

    assert raw.headers["X-Curfew-State"] == state
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    assert answer.object == "response"
    assert answer.status == "completed"
    assert answer.model == "gpt-4.1"
    assert answer.id.startswith("resp_")
    assert answer.output_text == reply  # computed by the SDK from the output item
    [message] = answer.output
    assert message.type == "message"
    assert message.role == "assistant"
    assert_zero_usage(answer.usage)
    assert "output_text" not in raw.http_response.json()  # not a wire field
    assert upstream.requests == []


@pytest.mark.parametrize(("moment", "state", "reply"), SHORT_CIRCUITS)
def test_short_circuit_streams_every_event_the_sdk_expects(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    events = list(sdk(proxy).responses.create(model="gpt-4.1", input="hi", stream=True))

    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == reply
    final = events[-1]
    assert final.type == "response.completed"
    assert final.response.output_text == reply
    assert_zero_usage(final.response.usage)
    assert upstream.requests == []


def test_the_stream_helper_accumulates_the_canned_answer(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(LIGHTS_OUT)
    with sdk(proxy).responses.stream(model="gpt-4.1", input="hi") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == final.output_text == "明天再说。"
    assert_zero_usage(final.usage)
    assert upstream.requests == []


def test_the_stream_is_named_sse_events_without_done(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    response = httpx.post(
        f"{proxy.base_url}/responses",
        json={"model": "m", "input": "hi", "stream": True},
        headers={"Authorization": f"Bearer {proxy.token}"},
        timeout=10,
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = [block for block in response.text.split("\n\n") if block]
    for block in blocks:
        name, data = block.split("\n")
        assert name.startswith("event: ")
        assert json.loads(data.removeprefix("data: "))["type"] == name.removeprefix("event: ")
    assert "[DONE]" not in response.text
    assert upstream.requests == []


#: A model name a template must echo exactly (quotes, braces, ``%``, non-ASCII).
ODD_MODEL = 'gpt-4.1 "nightly" {model} %s é 日本 😀'
#: Request settings the canned stream echoes (its response objects, thrice).
ECHOED: list[dict[str, Any]] = [
    {},
    {"instructions": 'Be "brief".\n{instructions}', "metadata": {"team": "moon", "{k}": "é"}},
    {"previous_response_id": "resp_abc", "max_output_tokens": 64, "temperature": 0.5, "top_p": 1},
    {
        "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
        ],
        "tool_choice": "required",
        "parallel_tool_calls": False,
    },
    {"reasoning": {"effort": "low"}, "text": {"format": {"type": "text"}}},
    {"text": {"format": {"type": "json_schema", "name": "Moon", "schema": {"type": "object"}}}},
]


@pytest.mark.parametrize("settings", ECHOED)
def test_the_canned_stream_echoes_the_request_and_the_sdk_parses_it(
    proxy: Proxy, upstream: FakeUpstream, settings: dict[str, Any]
) -> None:
    proxy.travel(OFF_DUTY)
    stream = sdk(proxy).responses.create(model=ODD_MODEL, input="hi", stream=True, **settings)
    events = list(stream)

    structured = "text" in settings and settings["text"]["format"]["type"] == "json_schema"
    refusal = structured or settings.get("tool_choice") == "required"
    kind = "refusal" if refusal else "output_text"
    assert [e.type for e in events][3:7] == [
        "response.content_part.added",
        f"response.{kind}.delta",
        f"response.{kind}.done",
        "response.content_part.done",
    ]
    assert events[4].delta == "。"  # type: ignore[union-attr]
    created, final = events[0].response, events[-1].response  # type: ignore[union-attr]
    assert created.id == final.id
    assert created.status == "in_progress"
    assert final.status == "completed"
    for response in (created, final):
        sent = response.to_dict(mode="json")
        assert sent["model"] == ODD_MODEL
        for key, value in settings.items():
            assert sent[key] == value, key
    assert_zero_usage(final.usage)
    assert upstream.requests == []


class Moon(BaseModel):
    year: int


def test_parse_with_a_pydantic_model_gets_a_refusal_off_duty(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """A canned sentence is not JSON: ``responses.parse`` must take its refusal
    path (``output_parsed`` None, the sentence as the refusal), not raise."""
    proxy.travel(OFF_DUTY)
    parsed = sdk(proxy).responses.parse(model="gpt-4.1", input="When?", text_format=Moon)
    assert parsed.output_parsed is None
    [message] = parsed.output
    assert message.type == "message"
    [part] = message.content
    assert part.type == "refusal"
    assert part.refusal == "。"
    assert_zero_usage(parsed.usage)
    assert upstream.requests == []


def test_a_streamed_parse_gets_a_refusal_off_duty(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(LIGHTS_OUT)
    with sdk(proxy).responses.stream(model="gpt-4.1", input="When?", text_format=Moon) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert "response.refusal.delta" in kinds
    assert "response.output_text.delta" not in kinds
    assert final.output_parsed is None
    assert final.output[0].content[0].refusal == "明天再说。"  # type: ignore[union-attr]
    assert upstream.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_forced_tool_choice_off_duty_gets_a_refusal(
    proxy: Proxy, upstream: FakeUpstream, stream: bool
) -> None:
    """``tool_choice`` ``"required"`` or a named function (an Agents SDK
    ``output_type``, pydantic-ai): a refusal part, not text the agent would
    answer by asking again."""
    proxy.travel(OFF_DUTY)
    tools: Any = [{"type": "function", "name": "plan", "parameters": {"type": "object"}}]
    for tool_choice in ("required", {"type": "function", "name": "plan"}):
        request: Any = {
            "model": "gpt-4.1",
            "input": "When?",
            "tools": tools,
            "tool_choice": tool_choice,
        }
        if stream:
            with sdk(proxy).responses.stream(**request) as helper:
                kinds = [e.type for e in helper]
                final = helper.get_final_response()
            assert "response.refusal.done" in kinds
            assert "response.output_text.delta" not in kinds
        else:
            final = sdk(proxy).responses.create(**request)
        [message] = final.output
        assert message.type == "message"
        [part] = message.content
        assert part.type == "refusal"
        assert part.refusal == "。"
        assert final.output_text == ""
        assert_zero_usage(final.usage)
    assert upstream.requests == []

    proxy.travel(ON_DUTY)  # the control: sent as asked
    sdk(proxy).responses.create(model="gpt-4.1", input="When?", tools=tools, tool_choice="required")
    [sent] = responses_sent(upstream)
    assert sent.json["tool_choice"] == "required"


async def test_async_sdk_gets_the_canned_answer(
    proxy: Proxy, upstream: FakeUpstream, closing: None
) -> None:
    proxy.travel(OFF_DUTY)
    client = async_sdk(proxy)
    answer = await client.responses.create(model="gpt-4.1", input="hi")
    assert answer.output_text == "。"
    assert_zero_usage(answer.usage)
    stream = await client.responses.create(model="gpt-4.1", input="hi", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "。"
    assert upstream.requests == []


# -- winding: the clamp and the persona reach the upstream -----------------------


@pytest.mark.parametrize("moment", [WINDING, WINDING_LATE])
def test_winding_sets_the_budget_and_appends_the_persona_to_instructions(
    proxy: Proxy, upstream: FakeUpstream, moment: str
) -> None:
    proxy.travel(moment)
    want = expected(moment, session_id="s-1")
    assert want.max_tokens is not None
    assert want.max_tokens >= MIN_OUTPUT_TOKENS
    assert want.persona

    raw = sdk(proxy).responses.with_raw_response.create(
        model="gpt-4.1", input="hi", instructions=INSTRUCTIONS
    )
    assert raw.headers["X-Curfew-State"] == "winding"
    assert raw.headers["X-Curfew-Action"] == "clamp"
    answer = raw.parse()
    assert answer.output_text == REPLY_TEXT  # the upstream's answer
    assert answer.usage is not None
    assert answer.usage.total_tokens == RESPONSES_USAGE["total_tokens"]
    [sent] = responses_sent(upstream)
    assert sent.json["max_output_tokens"] == want.max_tokens
    assert sent.json["instructions"] == f"{INSTRUCTIONS}\n\n{want.persona}"
    assert sent.json["input"] == "hi"


def test_winding_clamp_is_a_min_never_a_raise(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(WINDING)
    client = sdk(proxy)
    client.responses.create(model="m", input="hi", max_output_tokens=100)
    client.responses.create(model="m", input="hi", max_output_tokens=50_000)
    small, large = responses_sent(upstream)
    assert small.json["max_output_tokens"] == 100
    assert large.json["max_output_tokens"] == expected(WINDING).max_tokens


def test_winding_without_instructions_sends_the_persona_alone(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(WINDING)
    stream = sdk(proxy).responses.create(model="m", input="hi", stream=True)
    text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    assert text == REPLY_TEXT
    [sent] = responses_sent(upstream)
    assert sent.json["instructions"] == expected(WINDING, session_id="s-1").persona
    assert sent.json["stream"] is True


# -- on duty: nothing touched, streamed as it comes ------------------------------


def test_on_duty_forwards_the_very_bytes(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    # Odd spacing and key order: only a byte-for-byte relay keeps them.
    raw_body = b'{"input":"hi",  "model":"gpt-4.1","max_output_tokens":9000,"tools":[]}'
    response = httpx.post(
        f"{proxy.base_url}/responses",
        content=raw_body,
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.headers["X-Curfew-Action"] == "pass"
    assert response.json()["id"] == RESPONSE_ID  # the upstream's answer, relayed
    [sent] = responses_sent(upstream)
    assert sent.body == raw_body
    assert sent.headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_on_duty_sdk_gets_the_upstream_answer(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    answer = sdk(proxy).responses.create(model="gpt-4.1", input="hi", instructions=INSTRUCTIONS)
    assert answer.id == RESPONSE_ID
    assert answer.output_text == REPLY_TEXT
    [sent] = responses_sent(upstream)
    assert sent.json == {"model": "gpt-4.1", "input": "hi", "instructions": INSTRUCTIONS}


def test_on_duty_stream_reaches_the_client_before_the_upstream_has_finished(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """The upstream holds its stream after the first event until the SDK has
    seen it: a buffering proxy would deliver nothing until the gate timed out."""
    proxy.travel(ON_DUTY)
    upstream.gate = threading.Event()
    stream = sdk(proxy).responses.create(model="m", input="hi", stream=True)
    events = iter(stream)
    first = next(events)
    assert not upstream.finished.is_set(), "the first event arrived after the upstream finished"
    assert first.type == "response.created"
    upstream.gate.set()
    rest = list(events)
    deltas = [e.delta for e in rest if e.type == "response.output_text.delta"]
    assert deltas == REPLY_WORDS
    assert upstream.finished.wait(5)


async def test_async_on_duty_stream_is_relayed(
    proxy: Proxy, upstream: FakeUpstream, closing: None
) -> None:
    proxy.travel(ON_DUTY)
    async with async_sdk(proxy).responses.stream(model="m", input="hi") as stream:
        final = await stream.get_final_response()
    assert final.output_text == REPLY_TEXT
    assert len(responses_sent(upstream)) == 1


# -- stored responses, auth, bad input --------------------------------------------


def test_a_stored_response_is_read_and_deleted_whatever_the_hour(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    own(proxy.app, "proxy-ada", STORED_RESPONSE_ID)  # made through the proxy by its user
    proxy.travel(OFF_DUTY)  # reading one is not a model call
    client = sdk(proxy)
    raw = client.responses.with_raw_response.retrieve(STORED_RESPONSE_ID)
    assert raw.parse().id == STORED_RESPONSE_ID
    assert raw.headers["X-Curfew-Action"] == "pass"
    client.responses.delete(STORED_RESPONSE_ID)
    assert [(r.method, r.path) for r in upstream.requests] == [
        ("GET", f"/v1/responses/{STORED_RESPONSE_ID}"),
        ("DELETE", f"/v1/responses/{STORED_RESPONSE_ID}"),
    ]


RESPONSE_ID_TRAVERSALS = [
    "/v1/responses/..",
    "/v1/responses/%2e%2e",
    "/v1/responses/..%2f..%2fx",
    "/v1/responses/%2e%2e%2f%2e%2e%2fuser",
    "/v1/responses/..%5cx",
    "/v1/responses/a%00b",
    "/v1/responses/a%0d%0aHost:%20evil",
    "/v1/responses/-x",
    "/v1/responses/" + "a" * 300,
]


@pytest.mark.parametrize("raw_path", RESPONSE_ID_TRAVERSALS)
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_response_id_that_is_not_one_plain_segment_goes_nowhere(
    proxy: Proxy, upstream: FakeUpstream, raw_path: str, method: str
) -> None:
    """Sent as raw bytes (an HTTP client would normalise the path first); the
    control is the stored-response test above, whose plain id does arrive."""
    proxy.travel(ON_DUTY)
    response = rawhttp.request(
        proxy.app.base_url, method, raw_path, headers={"Authorization": f"Bearer {proxy.token}"}
    )
    assert response.status in (400, 404), (raw_path, response.status)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["message"]
    assert upstream.requests == [], f"{method} {raw_path} reached the upstream"


def test_the_response_subpaths_are_not_proxied(proxy: Proxy, upstream: FakeUpstream) -> None:
    response = httpx.post(
        f"{proxy.base_url}/responses/{STORED_RESPONSE_ID}/cancel",
        headers={"Authorization": f"Bearer {proxy.token}"},
        timeout=10,
    )
    assert response.status_code == 404
    assert "POST /v1/responses" in response.json()["error"]["message"]
    assert upstream.requests == []


def test_a_wrong_token_is_refused_in_openai_shape(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    client = openai.OpenAI(base_url=proxy.base_url, api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.responses.create(model="m", input="hi")
    response = caught.value.response
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert response.headers["X-Curfew-Action"] == "none"
    with pytest.raises(openai.AuthenticationError):
        client.responses.retrieve(STORED_RESPONSE_ID)
    assert upstream.requests == []


def test_a_bad_body_is_a_clear_openai_error(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    response = httpx.post(
        f"{proxy.base_url}/responses",
        content=b"[1, 2]",
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 400
    assert "Responses API JSON object" in response.json()["error"]["message"]
    assert response.headers["X-Curfew-Action"] == "none"
    assert upstream.requests == []
