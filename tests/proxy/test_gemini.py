"""The Gemini door end to end (issue 43: a new provider is one protocol
module, one handler and the client's shapes): ``generateContent`` and
``streamGenerateContent`` in-process, against a recording fake of Google's API.

Off duty: Gemini's own answer shape, zero usage, no upstream request. Winding:
``generationConfig.maxOutputTokens`` clamped by ``min``, and the thinking
budget with it. On duty: the very
body, the headers and the query (``alt=sse``) forwarded to the operator's
upstream, the usage read off ``usageMetadata``; the Curfew token never goes
upstream (``x-goog-api-key`` is the operator's, a ``?key=`` is left out).
A REST client's ``?key=`` is its token when no header holds one.
Every error is Gemini's ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from curfew_client import gemini_shapes
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.models import Decision
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.schedules import schedule_update
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_gemini import FakeGemini
from tests.proxy.inprocess import body_of, token_at

pytestmark = pytest.mark.django_db(transaction=True)

GOOGLE_KEY = "AIza-operator-gemini-key-4242"
MODEL = "gemini-2.0-flash"
GENERATE = f"/v1beta/models/{MODEL}:generateContent"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent"
BODY: dict[str, Any] = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 4096, "temperature": 0.2},
}


@pytest.fixture(scope="module")
def google() -> Iterator[FakeGemini]:
    fake = FakeGemini(MODEL, first_usage={"promptTokenCount": 11}).start()
    with override_settings(
        CURFEW_GEMINI_UPSTREAM_BASE_URL=fake.base_url, CURFEW_GEMINI_UPSTREAM_API_KEY=GOOGLE_KEY
    ):
        yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _fresh(google: FakeGemini) -> None:
    google.requests.clear()


@dataclass(frozen=True)
class ShapeVerdict:
    """What ``gemini_shapes.apply_verdict`` reads of a verdict."""

    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


async def post(
    token: str, path: str, body: object, *, query: str = "", **headers: str
) -> tuple[Any, bytes]:
    """POST ``body`` with ``token`` as ``x-goog-api-key`` (none when blank)."""
    response = await AsyncClient().post(
        f"{path}?{query}" if query else path,
        json.dumps(body),
        content_type="application/json",
        headers={"x-goog-api-key": token, **headers} if token else headers,
    )
    return response, await body_of(response)


async def rows() -> list[Decision]:
    def read() -> list[Decision]:
        recorder.flush()
        return list(Decision.objects.order_by("id"))

    return await sync_to_async(read)()


async def test_off_duty_is_answered_in_geminis_shape_with_nothing_sent(
    google: FakeGemini, closing: None
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    response, content = await post(token, GENERATE, BODY)
    assert response.status_code == 200, content
    answer = json.loads(content)
    [candidate] = answer["candidates"]
    assert candidate["content"]["role"] == "model"
    assert candidate["content"]["parts"][0]["text"]
    assert candidate["finishReason"] == "STOP"
    assert answer["usageMetadata"] == {
        "promptTokenCount": 0,
        "candidatesTokenCount": 0,
        "totalTokenCount": 0,
    }
    assert answer["modelVersion"] == MODEL
    assert response["X-Curfew-Action"] == "short-circuit"
    assert google.requests == []
    [row] = await rows()
    assert (row.origin, row.action, row.input_tokens, row.output_tokens) == (
        "gemini",
        "short-circuit",
        0,
        0,
    )
    assert (row.budget_before, row.budget_after) == (4096, 0)


@pytest.mark.parametrize(("query", "sse"), [("alt=sse", True), ("", False)])
async def test_off_duty_streams_as_the_stream_was_asked(
    google: FakeGemini, closing: None, query: str, sse: bool
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    response, content = await post(token, STREAM, BODY, query=query)
    assert response.status_code == 200, content
    if sse:
        assert response["Content-Type"].startswith("text/event-stream")
        [event] = [line for line in content.split(b"\n") if line.startswith(b"data: ")]
        chunk = json.loads(event[6:])
    else:
        assert response["Content-Type"] == "application/json"
        [chunk] = json.loads(content)
    assert chunk["usageMetadata"]["candidatesTokenCount"] == 0
    assert google.requests == []


async def test_winding_clamps_max_output_tokens_by_min(google: FakeGemini, closing: None) -> None:
    token = await sync_to_async(token_at)("winding", "23:30")
    response, content = await post(token, GENERATE, BODY)
    assert response.status_code == 200, content
    assert response["X-Curfew-Action"] == "clamp"
    [sent] = google.requests
    config = sent.json["generationConfig"]
    clamped = int(response["X-Curfew-Max-Tokens"])
    assert config["maxOutputTokens"] == min(4096, clamped) < 4096
    assert config["temperature"] == 0.2  # the rest of the config kept
    # Never raised: a budget already below the clamp is left as asked.
    small = {**BODY, "generationConfig": {"maxOutputTokens": 7}}
    await post(token, GENERATE, small)
    assert google.requests[-1].json["generationConfig"]["maxOutputTokens"] == 7
    first, _ = await rows()
    assert (first.origin, first.action, first.budget_before) == ("gemini", "clamp", 4096)
    assert first.budget_after == config["maxOutputTokens"]


async def test_winding_clamps_the_thinking_budget_by_min(google: FakeGemini, closing: None) -> None:
    """``thinkingConfig.thinkingBudget`` is a budget of its own: at most the
    verdict's while winding (``-1``, dynamic, becomes it), never raised (``0``,
    off, stays off), and never added where the client named none."""
    token = await sync_to_async(token_at)("winding", "23:30")

    def thinking(budget: int) -> dict[str, Any]:
        config = {**BODY["generationConfig"], "thinkingConfig": {"thinkingBudget": budget}}
        return {**BODY, "generationConfig": config}

    sent: list[Any] = []
    for budget in (24576, -1, 0, 3):
        response, content = await post(token, GENERATE, thinking(budget))
        assert response.status_code == 200, content
        assert response["X-Curfew-Action"] == "clamp"
        clamped = int(response["X-Curfew-Max-Tokens"])
        config = google.requests[-1].json["generationConfig"]
        assert config["maxOutputTokens"] == min(4096, clamped)
        sent.append(config["thinkingConfig"]["thinkingBudget"])
    assert 3 < clamped < 24576
    assert sent == [clamped, clamped, 0, 3]
    await post(token, GENERATE, BODY)
    assert "thinkingConfig" not in google.requests[-1].json["generationConfig"]


def _winding_at_low_effort() -> str:
    """A winding token whose schedule lowers reasoning effort to ``low``."""
    token = token_at("effort", "23:30")
    user = User.objects.get(username="effort")
    schedule_update(user=user, changes={"winding_reasoning_effort": "low"}, source="test")
    return token


async def test_winding_lowers_gemini_3s_thinking_level_as_a_gateway_would(
    google: FakeGemini, closing: None
) -> None:
    """Gemini 3's ``thinkingConfig.thinkingLevel`` is lowered with the
    schedule's reasoning effort (to ``low``, never raised), and what goes
    upstream is what a gateway's ``gemini_shapes.apply_verdict`` makes of it."""
    token = await sync_to_async(_winding_at_low_effort)()
    cases = [
        ({"thinkingLevel": "high"}, {"thinkingLevel": "low"}),
        ({"thinkingLevel": "HIGH"}, {"thinkingLevel": "LOW"}),
        ({"thinkingLevel": "minimal"}, {"thinkingLevel": "minimal"}),
        ({"thinkingLevel": "high", "thinkingBudget": -1}, None),
    ]
    for asked, expected in cases:
        body = {**BODY, "generationConfig": {**BODY["generationConfig"], "thinkingConfig": asked}}
        response, content = await post(token, GENERATE, body)
        assert response.status_code == 200, content
        assert response["X-Curfew-Action"] == "clamp"
        clamped = int(response["X-Curfew-Max-Tokens"])
        sent = google.requests[-1].json["generationConfig"]
        verdict = ShapeVerdict(max_tokens=clamped, reasoning_effort="low")
        assert sent == gemini_shapes.apply_verdict(body, verdict)["generationConfig"]
        thinking = sent["thinkingConfig"]
        assert thinking == (expected or {"thinkingLevel": "low", "thinkingBudget": clamped})


async def test_on_duty_the_thinking_budget_goes_as_sent(google: FakeGemini, closing: None) -> None:
    token = await sync_to_async(token_at)("on-duty", "20:00")
    config = {**BODY["generationConfig"], "thinkingConfig": {"thinkingBudget": -1}}
    response, content = await post(token, GENERATE, {**BODY, "generationConfig": config})
    assert response.status_code == 200, content
    assert google.requests[-1].json["generationConfig"] == config


async def test_a_rest_clients_query_key_is_its_token_and_never_goes_upstream(
    google: FakeGemini, closing: None
) -> None:
    """``?key=<curfew token>``, as Google's REST examples send it, with no
    header: the door's token. Upstream goes the operator's key as
    ``x-goog-api-key``, the query as sent but that ``key`` (its order and
    escapes kept), the very body."""
    token = await sync_to_async(token_at)("on-duty", "20:00")
    raw = json.dumps(BODY)
    response = await AsyncClient().post(
        f"{STREAM}?alt=sse&key={token}&x=a%20b&key=second",
        raw,
        content_type="application/json",
    )
    content = await body_of(response)
    assert response.status_code == 200, content
    assert response["X-Curfew-Action"] == "pass"
    [sent] = google.requests
    assert sent.route == STREAM
    assert sent.query == "alt=sse&x=a%20b"
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY
    assert token not in json.dumps(sent.headers)
    assert token[4:] not in sent.query
    assert sent.body == raw.encode()
    [row] = await rows()
    assert (row.origin, row.action) == ("gemini", "pass")
    # Off duty the query's token is the caller's all the same: nothing goes upstream.
    night = await sync_to_async(token_at)("peak", "10:00")
    response, content = await post("", GENERATE, BODY, query=f"key={night}")
    assert response.status_code == 200, content
    assert response["X-Curfew-Action"] == "short-circuit"
    assert len(google.requests) == 1


async def test_a_query_key_that_is_no_token_is_refused_in_geminis_shape(
    google: FakeGemini, closing: None
) -> None:
    unknown = "cfw_" + "q" * 43
    hostile = (
        "key=" + "cfw_" + "q" * 10_000,  # longer than any token
        "key=%FF%FE%00cfw_%C3%28",  # invalid UTF-8 and a NUL, percent-encoded
        "key=%E2%80%AE" + unknown,  # a right-to-left override before a token's shape
        "key=&key=" + unknown[:10],
    )
    for query in (f"key={unknown}", "alt=sse&key=", f"apikey={unknown}", *hostile):
        response, content = await post("", GENERATE, BODY, query=query)
        assert response.status_code == 401, (query, content)
        assert json.loads(content)["error"]["status"] == "UNAUTHENTICATED"
    assert google.requests == []


async def test_on_duty_forwards_body_headers_and_query_as_sent(
    google: FakeGemini, closing: None
) -> None:
    token = await sync_to_async(token_at)("on-duty", "20:00")
    raw = json.dumps(BODY, indent=1)  # the very bytes, not a re-encoding
    response = await AsyncClient().post(
        f"{STREAM}?alt=sse&key={token}",
        raw,
        content_type="application/json",
        headers={"x-goog-api-key": token, "x-goog-api-client": "genai-py/1.0"},
    )
    content = await body_of(response)
    assert response.status_code == 200, content
    assert response["X-Curfew-Action"] == "pass"
    [sent] = google.requests
    assert sent.route == STREAM
    assert sent.query == "alt=sse"  # the client's key is no upstream parameter
    assert sent.body == raw.encode()
    assert sent.headers["x-goog-api-client"] == "genai-py/1.0"
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY  # the operator's, not the token
    assert token not in json.dumps(sent.headers)
    assert b"Hello" in content
    assert b" there" in content
    [row] = await rows()
    assert (row.origin, row.action) == ("gemini", "pass")
    assert (row.input_tokens, row.output_tokens) == (11, 5)


async def test_a_json_answers_usage_is_recorded(google: FakeGemini, closing: None) -> None:
    token = await sync_to_async(token_at)("on-duty", "20:00")
    _, content = await post(token, GENERATE, BODY)
    assert json.loads(content)["candidates"][0]["content"]["parts"][0]["text"] == "Hello there"
    [row] = await rows()
    assert (row.input_tokens, row.output_tokens) == (11, 5)


async def test_errors_are_geminis_shape(google: FakeGemini, closing: None) -> None:
    missing, content = await post("", GENERATE, BODY)
    assert missing.status_code == 401
    assert json.loads(content)["error"] == {
        "code": 401,
        "message": "missing API key: use a curfew API token as the api_key (x-goog-api-key)",
        "status": "UNAUTHENTICATED",
    }
    token = await sync_to_async(token_at)("on-duty", "20:00")
    bad, content = await post(token, GENERATE, [1, 2])
    assert bad.status_code == 400
    error = json.loads(content)["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert "generateContent" in error["message"]
    unsafe, content = await post(token, "/v1beta/models/..:generateContent", BODY)
    assert unsafe.status_code == 400
    assert json.loads(content)["error"]["status"] == "INVALID_ARGUMENT"
    elsewhere, content = await post(token, f"/v1beta/models/{MODEL}:countTokens", BODY)
    assert elsewhere.status_code == 404
    error = json.loads(content)["error"]
    assert error["status"] == "NOT_FOUND"
    assert ":streamGenerateContent" in error["message"]  # says what is served
    assert google.requests == []


async def test_an_unreachable_upstream_is_geminis_502(closing: None) -> None:
    token = await sync_to_async(token_at)("on-duty", "20:00")
    with override_settings(CURFEW_GEMINI_UPSTREAM_BASE_URL="http://127.0.0.1:9"):
        response, content = await post(token, GENERATE, BODY)
    assert response.status_code == 502
    assert json.loads(content)["error"]["status"] == "UNAVAILABLE"
