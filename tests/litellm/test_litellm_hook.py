"""The LiteLLM callback on its own: ``async_pre_call_hook`` called as the proxy
calls it, with a real ``AsyncCurfewClient`` over a scripted transport."""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from curfew_client import AsyncCurfewClient, anthropic_shapes, gemini_shapes, openai_shapes
from curfew_client import litellm_hook as hook_module
from curfew_client.litellm_hook import CurfewHook, CurfewRefusal
from fastapi import HTTPException
from starlette.responses import Response, StreamingResponse

PACKAGE = Path(hook_module.__file__).resolve().parent


def verdict(state: str, **fields: Any) -> dict[str, Any]:
    """A verdict as the server writes it: every field present."""
    short = state in ("off-duty", "lights-out")
    payload: dict[str, Any] = {
        "state": state,
        "schedule_state": state,
        "action": "short-circuit" if short else ("clamp" if state == "winding" else "pass"),
        "reply": "。" if short else None,
        "stream": None,
        "max_tokens": 300 if state == "winding" else None,
        "persona": "You are tired." if state == "winding" else None,
        "tools": "allow",
        "reasoning_effort": None,
        "progress": 0.5 if state == "winding" else None,
        "peak": False,
        "reason": state,
        "exempt": False,
        "dry_run": False,
        "valid_until": "2099-01-01T00:00:00+00:00",
        "max_age": 60,
        "at": "2026-09-29T02:00:00+00:00",
        "budget": None,
        "override": None,
        "override_until": None,
        "debug_at": None,
        "would": None,
    }
    payload.update(fields)
    return payload


class Curfew:
    """A scripted curfew server: answers ``answer`` (or raises ``error``);
    records what it was asked."""

    def __init__(self, answer: dict[str, Any] | None = None, error: Exception | None = None):
        self.answer = answer
        self.error = error
        self.asked: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(json.loads(request.content))
        if self.error is not None:
            raise self.error
        return httpx.Response(200, json=self.answer)

    def hook(self, policy: Any = "fail_open") -> CurfewHook:
        client = AsyncCurfewClient(
            "http://curfew.test", "cfw_t", policy=policy, transport=httpx.MockTransport(self)
        )
        return CurfewHook(client)


class LoggingObject:
    """LiteLLM's logging object of one call (``data["litellm_logging_obj"]``,
    set before the pre-call hooks) as the hook reads it: its
    ``model_call_details``, which LiteLLM hands ``async_logging_hook`` as its
    kwargs. A deep copy of a request (a test's "before") is still that call.
    ``tests/litellm/test_litellm_call_id.py`` uses LiteLLM's own."""

    def __init__(self, call_id: str) -> None:
        self.model_call_details: dict[str, Any] = {"litellm_call_id": call_id}

    def __deepcopy__(self, memo: dict[int, Any]) -> LoggingObject:
        return self


def request(headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    """``data`` as the proxy hands it to the hook."""
    return {
        "model": "fake-model",
        "litellm_call_id": "call-1",
        "litellm_logging_obj": LoggingObject("call-1"),
        "metadata": {"user_api_key_user_id": "u"},
        "proxy_server_request": {"headers": {"host": "proxy", **(headers or {})}},
        **body,
    }


CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000}


async def call(hook: CurfewHook, data: dict[str, Any], call_type: str) -> Any:
    return await hook.async_pre_call_hook(
        user_api_key_dict=None, cache=None, data=data, call_type=call_type
    )


def logged(data: dict[str, Any], **details: Any) -> dict[str, Any]:
    """What LiteLLM hands ``async_logging_hook`` for the call of ``data``: its
    ``model_call_details``."""
    found: dict[str, Any] = data["litellm_logging_obj"].model_call_details
    found.update(details)
    return found


def routed(data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """What LiteLLM hands ``async_pre_call_deployment_hook`` for the call of
    ``data``: kwargs of its own, with the call's id and logging object."""
    return {
        "litellm_call_id": data["litellm_call_id"],
        "litellm_logging_obj": data["litellm_logging_obj"],
        **kwargs,
    }


async def answered(hook: CurfewHook, data: dict[str, Any]) -> Any:
    """The answer the hook writes over LiteLLM's mock (the mock's own is a stand-in)."""
    return await hook.async_post_call_success_hook(data, None, {"stand": "in"})


def decoded(response: Any) -> Any:
    """A JSON answer's body, without the values fresh in every answer."""
    assert isinstance(response, Response)
    assert response.media_type == "application/json"
    body = json.loads(bytes(response.body))
    return {key: value for key, value in body.items() if key not in ("id", "created")}


async def test_off_duty_chat_is_mocked_then_answered_as_curfews_proxy_answers() -> None:
    curfew = Curfew(verdict("off-duty"))
    hook = curfew.hook()
    data = await call(
        hook,
        request(
            {"X-Curfew-Session": "s-1", "x-curfew-purpose": "p", "X-Curfew-Subagent": "yes"}, **CHAT
        ),
        "acompletion",
    )
    assert data["mock_response"] == "。"  # LiteLLM's string mock: nothing goes upstream
    assert "use_chat_completions_api" not in data
    # The scope from the headers (the client clamps the budget itself, on its side).
    assert curfew.asked == [{"subagent": True, "session_id": "s-1", "purpose": "p"}]
    response = await answered(hook, data)
    body = decoded(response)
    assert body == {
        key: value
        for key, value in openai_shapes.answer({"model": "fake-model"}, "。").items()
        if key in body
    }
    assert body["usage"]["total_tokens"] == 0
    assert response.headers["x-curfew-state"] == "off-duty"
    headers = await hook.async_post_call_response_headers_hook(data, None, None)
    assert headers == {"X-Curfew-State": "off-duty", "X-Curfew-Action": "short-circuit"}
    # Answered once: a later success of the same call id is not rewritten.
    assert await answered(hook, data) == {"stand": "in"}


async def test_structured_output_and_n_are_answered_as_the_request_asked() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    asked = {**CHAT, "n": 2, "response_format": {"type": "json_object"}}
    body = decoded(await answered(hook, await call(hook, request(**asked), "acompletion")))
    assert [c["message"] for c in body["choices"]] == [
        {"role": "assistant", "content": None, "refusal": "。"}
    ] * 2


async def test_an_off_duty_stream_is_answered_with_curfews_events() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    asked = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    data = await call(hook, request(**asked), "acompletion")
    # Asked as a plain call: only a plain answer reaches the success hook.
    assert data["stream"] is False
    assert "stream_options" not in data
    response = await answered(hook, data)
    assert isinstance(response, StreamingResponse)
    text = b"".join([bytes(chunk) async for chunk in response.body_iterator]).decode()
    assert text.endswith("data: [DONE]\n\n")
    assert '"usage":{"prompt_tokens":0' in text.replace(" ", "")


async def test_off_duty_responses_are_answered_in_their_own_shape() -> None:
    hook = Curfew(verdict("lights-out", reply="明天再说。")).hook()
    asked = {"input": "hi", "max_output_tokens": 50, "text": {"format": {"type": "json_object"}}}
    data = await call(hook, request(**asked), "aresponses")
    assert data["mock_response"] == "明天再说。"
    assert "use_chat_completions_api" not in data
    body = decoded(await answered(hook, data))
    assert body["object"] == "response"
    assert body["output"][0]["content"] == [{"type": "refusal", "refusal": "明天再说。"}]
    assert body["max_output_tokens"] == 50  # echoed from the request, as the proxy does


async def test_off_duty_embeddings_are_refused_as_curfews_proxy_refuses_them() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    with pytest.raises(CurfewRefusal) as raised:
        await call(hook, request(input="hi"), "aembedding")
    refusal = raised.value
    assert int(refusal.code) == 503
    assert refusal.to_dict() == openai_shapes.embeddings_refusal("off-duty", 1)[0]["error"]
    assert refusal.headers["X-Should-Retry"] == "false"
    assert int(refusal.headers["Retry-After"]) > 3600  # valid until 2099
    assert refusal.headers["X-Curfew-State"] == "off-duty"


def test_litellm_logs_a_refusal_without_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    CurfewHook(Curfew(verdict("off-duty")).hook().client)  # installs the filter
    logger = logging.getLogger("LiteLLM Proxy")
    for error in (CurfewRefusal(503, {"error": {"message": "m", "type": "t"}}, {}), ValueError()):
        try:
            raise error
        except Exception:
            logger.exception("failed")
    refused, crashed = caplog.records[-2:]
    assert refused.exc_info is None
    assert crashed.exc_info is not None  # the control: a real crash keeps its traceback


async def test_winding_embeddings_pass_unclamped() -> None:
    curfew = Curfew(verdict("winding"))
    data = request(input="hi")
    before = copy.deepcopy(data)
    assert await call(curfew.hook(), data, "aembedding") == before
    assert len(curfew.asked) == 1


async def test_off_duty_anthropic_sends_nothing_and_answers_in_its_shape() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100}
    data = await call(hook, request(**body), "anthropic_messages")
    assert data["mock_response"] == "。"  # LiteLLM's string mock: nothing goes upstream
    fake_mock = {"usage": {"input_tokens": 2095, "output_tokens": 503}}
    answer = decoded(await hook.async_post_call_success_hook(data, None, fake_mock))
    expected = anthropic_shapes.answer({"model": "fake-model"}, "。")
    assert answer == {key: value for key, value in expected.items() if key != "id"}
    assert answer["usage"]["input_tokens"] == answer["usage"]["output_tokens"] == 0
    # Answered once: a later success of the same call id is not rewritten.
    assert await hook.async_post_call_success_hook(data, None, fake_mock) is fake_mock


async def test_off_duty_anthropic_streams_the_messages_events() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "stream": True}
    data = await call(hook, request(**body), "anthropic_messages")
    answer = await hook.async_post_call_success_hook(data, None, {"usage": {}})
    assert isinstance(answer, StreamingResponse)
    assert answer.headers["x-curfew-state"] == "off-duty"
    chunks = [chunk async for chunk in answer.body_iterator]
    text = b"".join(c if isinstance(c, bytes) else str(c).encode() for c in chunks).decode()
    names = re.findall(r"^event: (\S+)$", text, flags=re.MULTILINE)
    expected = anthropic_shapes.answer_events({"model": "fake-model"}, "。")
    assert names == [name for name, _ in expected]


async def test_litellms_ledger_records_an_answered_call_as_zero() -> None:
    hook = Curfew(verdict("off-duty")).hook()
    data = await call(hook, request(**CHAT), "acompletion")
    invented = {"prompt_tokens": 2095, "completion_tokens": 503, "total_tokens": 2598}
    spent = {"response_cost": 0.01, "standard_logging_object": {**invented, "response_cost": 0.01}}
    kwargs, _ = await hook.async_logging_hook(
        logged(data, **copy.deepcopy(spent)), None, "acompletion"
    )
    assert kwargs["response_cost"] == 0
    payload = kwargs["standard_logging_object"]
    assert [payload[key] for key in (*invented, "response_cost")] == [0, 0, 0, 0]
    # The control: a call the hook let through is logged as LiteLLM saw it.
    other = {"litellm_call_id": "call-2", **copy.deepcopy(spent)}
    assert (await hook.async_logging_hook(copy.deepcopy(other), None, "acompletion"))[0] == other


async def test_winding_chat_is_clamped_and_given_the_persona() -> None:
    hook = Curfew(verdict("winding")).hook()
    data = await call(hook, request(**CHAT), "acompletion")
    assert data["max_tokens"] == 300
    assert data["messages"][0] == {"role": "system", "content": "You are tired."}
    assert data["messages"][1:] == CHAT["messages"]
    assert "mock_response" not in data


@pytest.mark.parametrize(
    "answer",
    [
        verdict("on-duty"),
        verdict("winding", action="pass", max_tokens=None, persona=None, exempt=True),
        verdict(
            "off-duty",
            action="pass",
            reply=None,
            dry_run=True,
            would={
                "action": "short-circuit",
                "reply": "。",
                "max_tokens": None,
                "persona": None,
                "tools": "deny",
                "reasoning_effort": None,
            },
        ),
    ],
    ids=["on-duty", "exempt", "dry-run"],
)
async def test_a_passing_verdict_leaves_the_request_untouched(answer: dict[str, Any]) -> None:
    hook = Curfew(answer).hook()
    data = request(**CHAT)
    before = copy.deepcopy(data)
    assert await call(hook, data, "acompletion") == before


async def test_other_calls_are_not_asked_about() -> None:
    curfew = Curfew(verdict("off-duty"))
    data = request(prompt="a cat")
    assert await call(curfew.hook(), data, "aimage_generation") is data
    assert curfew.asked == []


@pytest.mark.parametrize(("policy", "mocked"), [("fail_open", False), ("fail_closed", True)])
async def test_an_unreachable_curfew_is_answered_by_policy(policy: str, mocked: bool) -> None:
    curfew = Curfew(error=httpx.ConnectError("refused"))
    data = await call(curfew.hook(policy), request(**CHAT), "acompletion")
    assert ("mock_response" in data) is mocked
    assert len(curfew.asked) == 1


async def test_policy_raise_refuses_with_a_503() -> None:
    curfew = Curfew(error=httpx.ConnectError("refused"))
    with pytest.raises(HTTPException) as raised:
        await call(curfew.hook("raise"), request(**CHAT), "acompletion")
    assert raised.value.status_code == 503


async def test_a_broken_hook_never_breaks_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CURFEW_URL", raising=False)
    monkeypatch.delenv("CURFEW_POLICY", raising=False)
    hook = CurfewHook()  # from the environment, which names no server
    data = request(**CHAT)
    before = copy.deepcopy(data)
    assert await call(hook, data, "acompletion") == before


async def test_a_bad_scope_header_is_a_400() -> None:
    curfew = Curfew(verdict("off-duty"))
    with pytest.raises(HTTPException) as raised:
        await call(curfew.hook(), request({"X-Curfew-Subagent": "maybe"}, **CHAT), "acompletion")
    assert raised.value.status_code == 400
    assert curfew.asked == []


def test_no_other_module_of_the_client_imports_litellm() -> None:
    """LiteLLM is an optional extra: only the hook may import it (or its proxy's FastAPI)."""
    pattern = re.compile(r"^\s*(?:from|import)\s+(litellm|fastapi|starlette)\b", re.MULTILINE)
    assert pattern.search((PACKAGE / "litellm_hook.py").read_text(encoding="utf-8"))  # the control
    for module in PACKAGE.glob("*.py"):
        if module.name != "litellm_hook.py":
            assert not pattern.search(module.read_text(encoding="utf-8")), module.name


@pytest.mark.parametrize(
    ("value", "pushed"),
    [(None, True), ("1", True), ("true", True), ("0", False), ("off", False)],
)
async def test_push_mode_is_on_unless_curfew_push_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, value: str | None, pushed: bool
) -> None:
    monkeypatch.setenv("CURFEW_URL", "http://curfew.test")
    monkeypatch.setenv("CURFEW_TOKEN", "cfw_t")
    if value is None:
        monkeypatch.delenv("CURFEW_PUSH", raising=False)
    else:
        monkeypatch.setenv("CURFEW_PUSH", value)
    client = hook_module.client_from_env()
    try:
        assert (client.feed is not None) is pushed
    finally:
        await client.aclose()


def test_a_bad_curfew_push_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURFEW_URL", "http://curfew.test")
    monkeypatch.setenv("CURFEW_TOKEN", "cfw_t")
    monkeypatch.setenv("CURFEW_PUSH", "maybe")
    with pytest.raises(ValueError, match="CURFEW_PUSH"):
        hook_module.client_from_env()


# -- Gemini's own calls (LiteLLM's google genai routes) ----------------------------

#: A Gemini REST body as LiteLLM's ``/v1beta/models/{model}:generateContent``
#: route hands it to the hook (``model`` from the path).
GEMINI = {
    "model": "gemini-2.5-flash",
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 1000, "thinkingConfig": {"thinkingBudget": -1}},
}


def gemini(**body: Any) -> dict[str, Any]:
    return request(**{**copy.deepcopy(GEMINI), **body})


@pytest.mark.parametrize("call_type", ["agenerate_content", "generate_content"])
async def test_off_duty_gemini_is_mocked_then_answered_in_geminis_shape(call_type: str) -> None:
    curfew = Curfew(verdict("off-duty"))
    hook = curfew.hook()
    data = await call(hook, gemini(), call_type)
    assert len(curfew.asked) == 1  # asked: a gate that never runs would pass it
    assert data["mock_response"] == "。"  # LiteLLM's string mock: nothing goes upstream
    litellms_mock = {"usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 30}}
    response = await hook.async_post_call_success_hook(data, None, litellms_mock)
    body = decoded(response)
    assert body.pop("responseId").startswith("curfew-")
    expected = gemini_shapes.answer("gemini-2.5-flash", "。")
    assert body == {key: value for key, value in expected.items() if key != "responseId"}
    assert body["usageMetadata"] == {
        "promptTokenCount": 0,
        "candidatesTokenCount": 0,
        "totalTokenCount": 0,
    }
    assert response.headers["x-curfew-state"] == "off-duty"
    headers = await hook.async_post_call_response_headers_hook(data, None, None)
    assert headers == {"X-Curfew-State": "off-duty", "X-Curfew-Action": "short-circuit"}
    # LiteLLM's ledger records the mock's invented usage as zero.
    spent = logged(data, response_cost=0.01)
    assert (await hook.async_logging_hook(spent, None, call_type))[0]["response_cost"] == 0


def sse_objects(payload: bytes) -> list[dict[str, Any]]:
    """An event stream's objects (``data:`` lines, as the google-genai SDK reads them)."""
    lines = payload.decode().splitlines()
    return [json.loads(line.removeprefix("data: ")) for line in lines if line.strip()]


@pytest.mark.parametrize("call_type", ["agenerate_content_stream", "generate_content_stream"])
async def test_an_off_duty_gemini_stream_is_sent_nowhere_and_answered_by_its_own_client(
    call_type: str,
) -> None:
    # LiteLLM's stream route ignores mock_response: a mock would still call
    # upstream. So the call is pointed nowhere, and just before LiteLLM sends
    # it, handed an HTTP client whose transport answers with Curfew's stream.
    curfew = Curfew(verdict("lights-out", reply="睡吧。"))
    hook = curfew.hook()
    data = await call(hook, gemini(stream=True), call_type)
    assert len(curfew.asked) == 1
    assert data["api_base"] == hook_module.NOWHERE
    assert data["api_key"] == hook_module.NO_KEY
    assert data["stream"] is True  # still LiteLLM's stream route: no mock, no plain call
    assert "mock_response" not in data
    headers = await hook.async_post_call_response_headers_hook(data, None, None)
    assert headers == {"X-Curfew-State": "lights-out", "X-Curfew-Action": "short-circuit"}
    # LiteLLM's router, just before the send: the deployment's address and key.
    sent_as = routed(
        data,
        model="gemini/gemini-2.5-flash",
        api_base="https://generativelanguage.googleapis.com",
        api_key="AIza-real-key",
        contents=GEMINI["contents"],
    )
    kwargs = await hook.async_pre_call_deployment_hook(dict(sent_as), None)
    assert kwargs is not None
    assert kwargs["api_base"] == hook_module.NOWHERE
    assert kwargs["api_key"] == hook_module.NO_KEY
    assert kwargs["contents"] == GEMINI["contents"]
    client = kwargs["client"]
    assert isinstance(client, hook_module.ANSWERING_CLIENT)
    url = f"{hook_module.NOWHERE}/models/gemini-2.5-flash:streamGenerateContent"
    sent = await client.post(url=url, json={}, stream=True)
    assert sent.status_code == 200
    assert sent.headers["content-type"].startswith("text/event-stream")
    (event,) = sse_objects(await sent.aread())
    assert event["candidates"][0]["content"]["parts"] == [{"text": "睡吧。"}]
    assert event["candidates"][0]["finishReason"] == "STOP"
    assert event["usageMetadata"] == gemini_shapes.zero_usage()
    assert event["modelVersion"] == "gemini-2.5-flash"
    # Every other call goes as LiteLLM routed it.
    other = {**sent_as, "litellm_call_id": "call-2", "litellm_logging_obj": LoggingObject("call-2")}
    assert await hook.async_pre_call_deployment_hook(other, None) is None
    # LiteLLM's ledger records it as zero.
    spent = logged(data, response_cost=0.01)
    assert (await hook.async_logging_hook(spent, None, call_type))[0]["response_cost"] == 0


async def test_an_on_duty_gemini_stream_keeps_its_address_and_client() -> None:
    # The control: a passing verdict leaves the stream and its routing alone.
    hook = Curfew(verdict("on-duty")).hook()
    data = await call(hook, gemini(stream=True), "agenerate_content_stream")
    assert "api_base" not in data
    assert "api_key" not in data
    sent_as = routed(data, api_base="https://google", api_key="k")
    assert await hook.async_pre_call_deployment_hook(sent_as, None) is None


async def test_fail_closed_answers_a_gemini_stream_too() -> None:
    curfew = Curfew(error=httpx.ConnectError("refused"))
    hook = curfew.hook("fail_closed")
    data = await call(hook, gemini(stream=True), "agenerate_content_stream")
    assert data["api_base"] == hook_module.NOWHERE
    headers = await hook.async_post_call_response_headers_hook(data, None, None)
    assert headers is not None
    assert headers["X-Curfew-State"] == "unchecked"
    kwargs = await hook.async_pre_call_deployment_hook(routed(data), None)
    assert kwargs is not None
    answer = await kwargs["client"].post(url=hook_module.NOWHERE, json={}, stream=True)
    (event,) = sse_objects(await answer.aread())
    assert event["usageMetadata"] == gemini_shapes.zero_usage()


async def test_a_litellm_that_takes_no_transport_refuses_an_off_duty_gemini_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No HTTP client can be handed over: refused in Gemini's error shape, never passed.
    monkeypatch.setattr(hook_module, "ANSWERING_CLIENT", None)
    data = gemini(stream=True)
    hook = Curfew(verdict("lights-out", reply="睡吧。")).hook()
    with pytest.raises(CurfewRefusal) as raised:
        await call(hook, data, "agenerate_content_stream")
    refusal = raised.value
    assert int(refusal.code) == 503
    error = refusal.to_dict()
    assert error["code"] == 503
    assert error["status"] == "UNAVAILABLE"
    assert "lights-out" in error["message"]
    assert "takes no transport" in error["message"]
    assert refusal.headers["X-Should-Retry"] == "false"
    assert int(refusal.headers["Retry-After"]) > 3600
    assert refusal.headers["X-Curfew-State"] == "lights-out"
    assert "mock_response" not in data
    assert "api_base" not in data


@pytest.mark.parametrize("call_type", ["agenerate_content", "agenerate_content_stream"])
async def test_winding_gemini_is_clamped_with_its_thinking_and_given_the_persona(
    call_type: str,
) -> None:
    curfew = Curfew(verdict("winding"))
    system = {"parts": [{"text": "Be brief."}]}
    data = await call(curfew.hook(), gemini(systemInstruction=system), call_type)
    assert data["generationConfig"] == {
        "maxOutputTokens": 300,
        "thinkingConfig": {"thinkingBudget": 300},
    }
    assert data["systemInstruction"] == {
        "parts": [{"text": "Be brief."}, {"text": "You are tired."}]
    }
    assert data["contents"] == GEMINI["contents"]
    assert "mock_response" not in data


async def test_winding_gemini_never_raises_a_smaller_budget_and_adds_one_when_none() -> None:
    hook = Curfew(verdict("winding")).hook()
    small = await call(hook, gemini(generationConfig={"maxOutputTokens": 50}), "agenerate_content")
    assert small["generationConfig"] == {"maxOutputTokens": 50}
    none = await call(hook, gemini(generationConfig=None), "agenerate_content")
    assert none["generationConfig"] == {"maxOutputTokens": 300}
    assert none["systemInstruction"] == {"parts": [{"text": "You are tired."}]}


async def test_winding_gemini_clamps_where_litellm_reads_it() -> None:
    # The SDK's ``config`` (snake case too) wins over generationConfig in LiteLLM;
    # ``system_instruction`` is read when ``systemInstruction`` is not sent.
    hook = Curfew(verdict("winding", tools="deny")).hook()
    data = gemini(
        config={"max_output_tokens": 900, "thinking_config": {"thinking_budget": 5000}},
        system_instruction={"parts": [{"text": "Be brief."}]},
        tools=[{"functionDeclarations": []}],
        tool_config={"functionCallingConfig": {"mode": "ANY"}},
    )
    out = await call(hook, data, "agenerate_content")
    assert out["config"] == {"maxOutputTokens": 300, "thinkingConfig": {"thinkingBudget": 300}}
    assert out["system_instruction"]["parts"][-1] == {"text": "You are tired."}
    assert "systemInstruction" not in out
    assert "tools" not in out
    assert "tool_config" not in out


@pytest.mark.parametrize(
    "answer",
    [verdict("on-duty"), verdict("winding", action="pass", max_tokens=None, persona=None)],
    ids=["on-duty", "exempt"],
)
@pytest.mark.parametrize("call_type", ["agenerate_content", "agenerate_content_stream"])
async def test_a_passing_verdict_leaves_a_gemini_call_untouched(
    answer: dict[str, Any], call_type: str
) -> None:
    curfew = Curfew(answer)
    data = gemini()
    before = copy.deepcopy(data)
    assert await call(curfew.hook(), data, call_type) == before
    assert len(curfew.asked) == 1


@pytest.mark.parametrize(("policy", "mocked"), [("fail_open", False), ("fail_closed", True)])
async def test_an_unreachable_curfew_answers_a_gemini_call_by_policy(
    policy: str, mocked: bool
) -> None:
    curfew = Curfew(error=httpx.ConnectError("refused"))
    data = await call(curfew.hook(policy), gemini(), "agenerate_content")
    assert ("mock_response" in data) is mocked


def test_every_gemini_call_type_litellm_names_is_checked() -> None:
    from litellm.types.utils import CallTypes

    geminis = {kind.value for kind in CallTypes if "generate_content" in kind.value}
    # LiteLLM's adapter names (aadapter_generate_content) call completion underneath,
    # which the hook checks as chat.
    geminis -= {name for name in geminis if "adapter" in name}
    assert geminis <= set(hook_module.CALL_KINDS)
