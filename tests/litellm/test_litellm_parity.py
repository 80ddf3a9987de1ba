"""The hook answers what Curfew's own proxy answers: the proxy's client matrix
(tests/proxy/test_proxy_chat_clients.py, test_responses.py, test_embeddings.py)
run through the real LiteLLM proxy with the hook, beside the proxy itself.

Both ask the same server for the same user, in front of the same recording
upstream. Off duty each request is sent to both and their answers compared,
ids and clocks aside: the same shape, the same refusal, zero usage, and
nothing upstream; then the real openai SDK takes its documented path through
the hook (a refusal where it parses, ``n`` choices, an error it does not
retry). On duty the same calls reach the upstream through both (the control
group): what was answered off duty was the curfew's doing.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

import openai
from pydantic import BaseModel

from tests.litellm.conftest import EMBEDDING_MODEL, MASTER_KEY, MODEL, OFF_DUTY, ON_DUTY
from tests.litellm.conftest import LiteLLMProxy as Proxy

MESSAGES = [{"role": "user", "content": "hi"}]
REPLY = "。"
#: Per answer, values that are fresh every time (ids, clocks): not compared.
FRESH = frozenset({"id", "item_id", "created", "created_at", "completed_at"})


class Plan(BaseModel):
    steps: list[str]


PLAN_SCHEMA = {"name": "Plan", "schema": Plan.model_json_schema(), "strict": False}
PLAN_TOOL = {
    "type": "function",
    "function": {"name": "Plan", "parameters": Plan.model_json_schema()},
}

#: The matrix: (path, body) as clients send them; each is sent streamed and not.
MATRIX: list[tuple[str, str, dict[str, Any]]] = [
    ("chat", "chat/completions", {"messages": MESSAGES}),
    (
        "chat json_schema",
        "chat/completions",
        {
            "messages": MESSAGES,
            "response_format": {"type": "json_schema", "json_schema": PLAN_SCHEMA},
        },
    ),
    (
        "chat json_object",
        "chat/completions",
        {"messages": MESSAGES, "response_format": {"type": "json_object"}},
    ),
    ("chat n=2", "chat/completions", {"messages": MESSAGES, "n": 2}),
    (
        "chat forced tool",
        "chat/completions",
        {"messages": MESSAGES, "tools": [PLAN_TOOL], "tool_choice": "required"},
    ),
    (
        "responses",
        "responses",
        {"input": "hi", "instructions": "Be brief.", "metadata": {"a": "b"}},
    ),
    (
        "responses json_schema",
        "responses",
        {"input": "hi", "text": {"format": {"type": "json_schema", **PLAN_SCHEMA}}},
    ),
    ("completions", "completions", {"prompt": "hi", "max_tokens": 50}),
]


def scope() -> dict[str, str]:
    return {"X-Curfew-Session": f"parity-{uuid.uuid4().hex[:12]}"}


def normalized(value: Any) -> Any:
    """``value`` without the values that are fresh in every answer."""
    if isinstance(value, dict):
        return {key: normalized(item) for key, item in value.items() if key not in FRESH}
    if isinstance(value, (list, tuple)):
        return [normalized(item) for item in value]
    return value


def events(body: bytes) -> list[tuple[str | None, Any]]:
    """An SSE body as ``(event name, decoded data)`` pairs, ``[DONE]`` kept."""
    out: list[tuple[str | None, Any]] = []
    for block in body.decode().split("\n\n"):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].strip())
        if data:
            text = "\n".join(data)
            out.append((name, text if text == "[DONE]" else json.loads(text)))
    return out


def post(url: str, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{url}/{path}",
        json=body,
        headers={"Authorization": f"Bearer {key}", **scope()},
        timeout=30,
    )


def both(proxy: Proxy, path: str, body: dict[str, Any]) -> tuple[httpx.Response, httpx.Response]:
    """The same request to Curfew's proxy and to LiteLLM with the hook."""
    return (
        post(proxy.curfew.proxy_url, proxy.curfew.token, path, body),
        post(f"{proxy.base_url}/v1", MASTER_KEY, path, body),
    )


def answer(response: httpx.Response) -> Any:
    if response.headers["content-type"].startswith("text/event-stream"):
        return normalized(events(response.content))
    return normalized(response.json())


def hook_sdk(proxy: Proxy, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{proxy.base_url}/v1",
        api_key=MASTER_KEY,
        default_headers=scope(),
        timeout=30,
        **{"max_retries": 0, **kw},
    )


def model_posts(proxy: Proxy) -> list[str]:
    return [r.path for r in proxy.upstream.requests if r.method == "POST"]


# -- off duty: the same answer ------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("case", "path", "body"), MATRIX, ids=[case for case, _, _ in MATRIX])
def test_off_duty_the_hook_answers_what_the_proxy_answers(
    proxy: Proxy, case: str, path: str, body: dict[str, Any], stream: bool
) -> None:
    proxy.curfew.travel(OFF_DUTY)
    request = {"model": MODEL, **body}
    if stream:
        request["stream"] = True
        if path == "chat/completions":
            request["stream_options"] = {"include_usage": True}
    from_proxy, from_hook = both(proxy, path, request)
    assert from_proxy.status_code == from_hook.status_code == 200
    assert from_hook.headers["content-type"] == from_proxy.headers["content-type"]
    assert answer(from_hook) == answer(from_proxy)
    assert from_hook.headers["x-curfew-state"] == "off-duty"
    assert from_hook.headers["x-curfew-action"] == "short-circuit"
    assert model_posts(proxy) == []


def test_off_duty_embeddings_are_refused_as_the_proxy_refuses_them(proxy: Proxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    log_before = proxy.log_path.read_text(encoding="utf-8", errors="replace")
    body = {"model": EMBEDDING_MODEL, "input": "hi"}
    from_proxy, from_hook = both(proxy, "embeddings", body)
    assert from_proxy.status_code == from_hook.status_code == 503
    assert from_hook.json()["error"] == from_proxy.json()["error"]
    for name in ("x-should-retry", "cache-control", "x-curfew-state", "x-curfew-action"):
        assert from_hook.headers.get(name) == from_proxy.headers[name], name
    assert int(from_hook.headers["retry-after"]) >= 1
    # The SDK at its default retries: X-Should-Retry stops it after one request.
    sent: list[httpx.Request] = []
    client = hook_sdk(
        proxy, max_retries=2, http_client=httpx.Client(event_hooks={"request": [sent.append]})
    )
    with pytest.raises(openai.InternalServerError) as raised:
        client.embeddings.create(model=EMBEDDING_MODEL, input="hi")
    assert raised.value.code == "curfew_off_duty"
    assert len(sent) == 1
    assert model_posts(proxy) == []
    # A refusal by design is not a crash: LiteLLM logs no traceback for it.
    logged = proxy.log_path.read_text(encoding="utf-8", errors="replace")[len(log_before) :]
    assert "Traceback" not in logged


# -- off duty: the SDK's own paths, through the hook ------------------------------------


def test_the_sdk_parse_helpers_get_the_refusal(proxy: Proxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    client = hook_sdk(proxy)
    completion = client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Plan)
    message = completion.choices[0].message
    assert (message.parsed, message.refusal, message.content) == (None, REPLY, None)
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0
    with client.chat.completions.stream(
        model=MODEL, messages=MESSAGES, response_format=Plan
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "refusal.done" in kinds
    assert "content.done" not in kinds
    assert final.choices[0].message.refusal == REPLY
    parsed = client.responses.parse(model=MODEL, input="hi", text_format=Plan)
    assert parsed.output_parsed is None
    part = parsed.output[0].content[0]  # type: ignore[union-attr]
    assert (part.type, part.refusal) == ("refusal", REPLY)  # type: ignore[union-attr]
    assert parsed.usage is not None
    assert parsed.usage.total_tokens == 0
    assert model_posts(proxy) == []


def test_n_choices_through_the_hook(proxy: Proxy) -> None:
    proxy.curfew.travel(OFF_DUTY)
    completion = hook_sdk(proxy).chat.completions.create(model=MODEL, messages=MESSAGES, n=2)
    assert [(c.index, c.message.content) for c in completion.choices] == [(0, REPLY), (1, REPLY)]
    assert model_posts(proxy) == []


# -- on duty: the control group -----------------------------------------------------


def test_on_duty_the_same_calls_reach_the_upstream_through_both(proxy: Proxy) -> None:
    proxy.curfew.travel(ON_DUTY)
    for url, key in (
        (proxy.curfew.proxy_url, proxy.curfew.token),
        (f"{proxy.base_url}/v1", MASTER_KEY),
    ):
        client = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=30)
        proxy.upstream.reset()
        with pytest.raises(ValueError, match="Invalid JSON"):  # the fake's prose is not a Plan
            client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Plan)
        client.chat.completions.create(model=MODEL, messages=MESSAGES, n=2)
        assert client.embeddings.create(model=EMBEDDING_MODEL, input="hi").data
        sent = [r for r in proxy.upstream.requests if r.method == "POST"]
        assert [r.path for r in sent] == ["/v1/chat/completions"] * 2 + ["/v1/embeddings"], url
        assert sent[0].json["response_format"]["type"] == "json_schema"
        assert sent[1].json["n"] == 2
