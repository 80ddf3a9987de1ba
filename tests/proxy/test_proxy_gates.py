"""The control group: the real OpenAI SDK through the served proxy, in front of
a recording fake upstream. A gate that never ran would fail these tests: the
recorder must see zero requests when off duty, a clamped body when winding and
the very body the client sent when on duty or exempt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import openai
import pytest

from curfew_core.engine import RequestContext, Verdict, decide
from curfew_core.schedules import config as schedule_config
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import USAGE, FakeUpstream
from tests.proxy.conftest import EXEMPT_SESSION, Proxy

SHANGHAI = ZoneInfo("Asia/Shanghai")
OFF_DUTY = "2026-09-29 10:00"  # Tuesday, peak hours
LIGHTS_OUT = "2026-09-30 03:10"
WINDING = "2026-09-29 23:30"
WINDING_LATE = "2026-09-30 01:30"
ON_DUTY = "2026-09-29 20:00"
MESSAGES = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "Explain the moon landing."},
]


def expected(moment: str, **request: Any) -> Verdict:
    """What the engine says for the served user's (default) schedule at ``moment``."""
    at = datetime.fromisoformat(moment).replace(tzinfo=SHANGHAI)
    schedule = schedule_config.build(schedule_config.default_config())
    return decide(at, schedule, RequestContext(**request))


def sdk(proxy: Proxy, session: str = "s-1", **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url,
        api_key=proxy.token,
        max_retries=0,
        timeout=20,
        default_headers={"X-Curfew-Session": session, **headers},
    )


def collect(stream: Any) -> tuple[str, list[Any]]:
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


# -- off duty and lights out: the canned reply, and nothing upstream ---------------


@pytest.mark.parametrize(
    ("moment", "state", "reply"),
    [(OFF_DUTY, "off-duty", "。"), (LIGHTS_OUT, "lights-out", "明天再说。")],
)
def test_short_circuit_answers_without_calling_upstream(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str, reply: str
) -> None:
    proxy.travel(moment)
    assert expected(moment).reply == reply  # the control: the engine agrees

    raw = sdk(proxy).chat.completions.with_raw_response.create(
        model="deepseek-chat", messages=MESSAGES, max_tokens=4096
    )
    completion = raw.parse()

    assert raw.headers["X-Curfew-State"] == state
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    assert completion.object == "chat.completion"
    assert completion.model == "deepseek-chat"
    assert completion.id
    assert completion.created > 0
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == reply
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (0, 0)
    assert completion.usage.total_tokens == 0
    assert upstream.requests == []


@pytest.mark.parametrize(("moment", "reply"), [(OFF_DUTY, "。"), (LIGHTS_OUT, "明天再说。")])
@pytest.mark.parametrize("include_usage", [False, True])
def test_short_circuit_streams_the_canned_reply_with_zero_usage(
    proxy: Proxy, upstream: FakeUpstream, moment: str, reply: str, include_usage: bool
) -> None:
    proxy.travel(moment)
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}

    raw = sdk(proxy).chat.completions.with_raw_response.create(
        model="deepseek-chat", messages=MESSAGES, stream=True, **extra
    )
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["X-Curfew-Action"] == "short-circuit"
    text, chunks = collect(raw.parse())

    assert text == reply
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == 1, "the zero usage is sent exactly once, never absent"
    assert (usages[0].prompt_tokens, usages[0].completion_tokens, usages[0].total_tokens) == (
        0,
        0,
        0,
    )
    if include_usage:
        assert chunks[-1].choices == []  # OpenAI's own protocol when asked
    assert upstream.requests == []


def test_short_circuit_stream_ends_with_done(proxy: Proxy, upstream: FakeUpstream) -> None:
    import httpx

    proxy.travel(LIGHTS_OUT)
    response = httpx.post(
        f"{proxy.base_url}/chat/completions",
        json={"model": "m", "messages": MESSAGES, "stream": True},
        headers={"Authorization": f"Bearer {proxy.token}"},
        timeout=10,
    )
    assert response.status_code == 200
    events = [line for line in response.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    assert all(event.startswith("data: ") for event in events)
    assert upstream.requests == []


# -- winding: the clamp and the persona reach the upstream -----------------------


@pytest.mark.parametrize("moment", [WINDING, WINDING_LATE])
def test_winding_sets_the_curve_budget_when_the_client_set_none(
    proxy: Proxy, upstream: FakeUpstream, moment: str
) -> None:
    proxy.travel(moment)
    want = expected(moment, session_id="s-1")
    assert want.max_tokens is not None
    assert want.persona

    raw = sdk(proxy).chat.completions.with_raw_response.create(
        model="deepseek-chat", messages=MESSAGES
    )
    completion = raw.parse()

    assert raw.headers["X-Curfew-State"] == "winding"
    assert raw.headers["X-Curfew-Action"] == "clamp"
    assert raw.headers["X-Curfew-Max-Tokens"] == str(want.max_tokens)
    assert completion.choices[0].message.content == REPLY_TEXT  # the upstream's answer
    assert completion.usage is not None
    assert completion.usage.total_tokens == USAGE["total_tokens"]
    [sent] = upstream.chat_requests
    body = sent.json
    assert body["max_tokens"] == want.max_tokens
    assert "max_completion_tokens" not in body
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"] == f"You are a careful assistant.\n\n{want.persona}"
    assert body["messages"][1:] == MESSAGES[1:]


def test_winding_budget_values_match_the_reference_table(proxy: Proxy) -> None:
    # The engine's curve is what the proxy enforces; pin it to the table
    # so an "expected" computed from a broken engine cannot pass unnoticed.
    assert expected(WINDING).max_tokens == 1824
    assert expected(WINDING_LATE).max_tokens == 560


def test_winding_clamp_is_a_min_never_a_raise(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(WINDING)
    client = sdk(proxy)
    client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=100)
    client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=5000)
    small, large = upstream.chat_requests
    assert small.json["max_tokens"] == 100
    assert large.json["max_tokens"] == expected(WINDING).max_tokens


def test_winding_clamps_max_completion_tokens_under_its_own_name(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(WINDING)
    client = sdk(proxy)
    client.chat.completions.create(model="m", messages=MESSAGES, max_completion_tokens=9000)
    client.chat.completions.create(
        model="m", messages=MESSAGES, max_tokens=4000, max_completion_tokens=300
    )
    modern, both = upstream.chat_requests
    assert modern.json["max_completion_tokens"] == expected(WINDING).max_tokens
    assert "max_tokens" not in modern.json
    # Each name is clamped on its own: the smaller one is not dragged onto the other.
    assert (both.json["max_tokens"], both.json["max_completion_tokens"]) == (
        expected(WINDING).max_tokens,
        300,
    )


def test_winding_stream_is_clamped_and_relayed(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(WINDING)
    messages = [{"role": "user", "content": "hi"}]  # no system message: one is added
    stream = sdk(proxy).chat.completions.create(
        model="m", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text, chunks = collect(stream)
    assert text == REPLY_TEXT
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == USAGE["total_tokens"]
    [sent] = upstream.chat_requests
    want = expected(WINDING, session_id="s-1")
    assert sent.json["max_tokens"] == want.max_tokens
    assert sent.json["messages"] == [{"role": "system", "content": want.persona}, *messages]
    assert sent.json["stream"] is True


def test_exempt_session_at_the_same_instant_passes_untouched(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """Two sessions that differ only in exemption: one clamped, one untouched."""
    proxy.travel(WINDING)
    assert expected(WINDING, session_id=EXEMPT_SESSION).action.value == "clamp"  # not by default
    request = {"model": "m", "messages": MESSAGES, "max_tokens": 4000, "temperature": 0.3}

    normal = sdk(proxy, session="ordinary").chat.completions.with_raw_response.create(**request)
    exempt = sdk(proxy, session=EXEMPT_SESSION).chat.completions.with_raw_response.create(**request)

    assert normal.headers["X-Curfew-Action"] == "clamp"
    assert exempt.headers["X-Curfew-Action"] == "pass"
    assert exempt.headers["X-Curfew-State"] == "winding"
    clamped, untouched = upstream.chat_requests
    assert clamped.json["max_tokens"] == expected(WINDING).max_tokens
    assert clamped.json != request
    assert untouched.json == request


def test_purpose_passes_untouched_while_winding(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(WINDING)
    request = {"model": "m", "messages": MESSAGES}
    raw = sdk(
        proxy, **{"X-Curfew-Purpose": "compaction"}
    ).chat.completions.with_raw_response.create(**request)
    assert raw.headers["X-Curfew-Action"] == "pass"
    [sent] = upstream.chat_requests
    assert sent.json == request


# -- on duty: nothing touched --------------------------------------------------------


def test_on_duty_forwards_the_client_body_unchanged(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    request = {
        "model": "deepseek-chat",
        "messages": MESSAGES,
        "max_tokens": 9000,
        "temperature": 0.7,
        "tools": [
            {
                "type": "function",
                "function": {"name": "now", "parameters": {"type": "object", "properties": {}}},
            }
        ],
    }
    raw = sdk(proxy).chat.completions.with_raw_response.create(**request)
    assert raw.headers["X-Curfew-State"] == "on-duty"
    assert raw.headers["X-Curfew-Action"] == "pass"
    assert raw.headers["X-Request-Id"] == "req-fake-1"  # upstream ids are relayed
    assert raw.parse().choices[0].message.content == REPLY_TEXT
    [sent] = upstream.chat_requests
    assert sent.json == request
    assert sent.path == "/v1/chat/completions"


def test_on_duty_stream_is_relayed_chunk_for_chunk(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    request = {"model": "m", "messages": MESSAGES, "stream": True}
    text, chunks = collect(sdk(proxy).chat.completions.create(**request))
    assert text == REPLY_TEXT
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == [
        "Hello",
        " from",
        " the",
        " fake",
        " upstream.",
    ]
    [sent] = upstream.chat_requests
    assert sent.json == request


def test_stream_reaches_the_client_before_the_upstream_has_finished(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """No buffering: the upstream holds its stream after the first chunk until
    the SDK has seen that chunk. A buffering proxy would hold it back until the
    upstream finished (the gate's 10s timeout), and the first assertion fails."""
    import threading

    proxy.travel(ON_DUTY)
    upstream.gate = threading.Event()
    stream = sdk(proxy).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    first = next(iter(stream))
    assert not upstream.finished.is_set(), (
        "the first chunk arrived only after the upstream finished"
    )
    assert first.choices[0].delta.role == "assistant"
    upstream.gate.set()
    text, _ = collect(stream)
    assert text == REPLY_TEXT
    assert upstream.finished.wait(5)


# -- auth, errors and the upstream key ---------------------------------------------


def test_a_wrong_token_is_refused_and_nothing_is_sent(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    client = openai.OpenAI(base_url=proxy.base_url, api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.chat.completions.create(model="m", messages=MESSAGES)
    response = caught.value.response
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert response.headers["X-Curfew-State"] == "unknown"
    assert response.headers["X-Curfew-Action"] == "none"
    assert upstream.requests == []


def test_the_upstream_key_is_used_upstream_and_never_shown(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    from tests.proxy.conftest import UPSTREAM_KEY

    proxy.travel(ON_DUTY)
    raw = sdk(proxy).chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
    [sent] = upstream.chat_requests
    assert sent.headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert proxy.token not in str(sent.headers)  # the curfew token stays here too
    assert "X-Curfew-Session" not in sent.headers
    assert UPSTREAM_KEY not in raw.content.decode()
    assert UPSTREAM_KEY not in str(dict(raw.headers))

    # A provider that echoes the key in its refusal: the client never sees it.
    upstream.fail = (
        401,
        f'{{"error": {{"message": "Incorrect API key provided: {UPSTREAM_KEY}"}}}}'.encode(),
    )
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk(proxy).chat.completions.create(model="m", messages=MESSAGES)
    refused = caught.value.response
    assert UPSTREAM_KEY not in refused.text
    assert "CURFEW_UPSTREAM_API_KEY" in refused.text
    assert refused.headers["X-Curfew-Action"] == "pass"
    assert UPSTREAM_KEY not in proxy.app.log_path.read_text()


def test_upstream_errors_are_relayed_with_status_and_body(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(ON_DUTY)
    upstream.fail = (429, b'{"error": {"message": "slow down", "type": "rate_limit"}}')
    for stream in (False, True):
        with pytest.raises(openai.RateLimitError) as caught:
            sdk(proxy).chat.completions.create(model="m", messages=MESSAGES, stream=stream)
        response = caught.value.response
        assert response.status_code == 429
        assert response.json()["error"]["message"] == "slow down"
        assert response.headers["X-Curfew-State"] == "on-duty"
        assert response.headers["X-Curfew-Action"] == "pass"
    assert len(upstream.chat_requests) == 2


def test_models_are_forwarded(proxy: Proxy, upstream: FakeUpstream) -> None:
    from tests.proxy.conftest import UPSTREAM_KEY

    proxy.travel(OFF_DUTY)  # listing models is not a model call: forwarded even now
    raw = sdk(proxy).models.with_raw_response.list()
    assert [m.id for m in raw.parse()] == ["fake-model"]
    assert raw.headers["X-Curfew-State"] == "off-duty"
    assert raw.headers["X-Curfew-Action"] == "pass"
    [sent] = upstream.requests
    assert (sent.method, sent.path) == ("GET", "/v1/models")
    assert sent.headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_a_bad_body_is_a_clear_openai_error(proxy: Proxy, upstream: FakeUpstream) -> None:
    import httpx

    proxy.travel(ON_DUTY)
    response = httpx.post(
        f"{proxy.base_url}/chat/completions",
        content=b"[1, 2]",
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 400
    assert "JSON object" in response.json()["error"]["message"]
    assert response.headers["X-Curfew-State"] == "on-duty"
    assert response.headers["X-Curfew-Action"] == "none"
    assert upstream.requests == []


def test_a_client_that_hangs_up_releases_the_upstream_stream(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """The relay holds an upstream connection per stream; when the client goes
    away mid-answer, the proxy must hang up on the upstream too, not drain it."""
    proxy.travel(ON_DUTY)
    upstream.chunk_delay = 0.3
    stream = sdk(proxy).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    next(iter(stream))
    stream.close()
    assert upstream.aborted.wait(5), "the upstream kept streaming to nobody"
    assert not upstream.finished.is_set()
