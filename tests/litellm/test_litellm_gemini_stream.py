"""An off-duty Gemini stream through the real LiteLLM proxy
(``/v1beta/models/{model}:streamGenerateContent``, LiteLLM's
``agenerate_content_stream``), in front of a recording fake Google.

Off duty means no upstream request and a complete answer in the client's own
protocol: a 200 event stream of Gemini's own objects holding the reply, a
``finishReason`` and ``usageMetadata`` all zero, what the google-genai SDK reads
as a finished turn. The fake Google must receive nothing (neither must the
OpenAI-shaped fake). The control: on duty the same stream reaches the fake as
it was sent, and its answer is relayed. Before the callback answered such
streams it refused them with a 503: a turn that got an error, not an answer."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from tests.litellm.conftest import (
    GEMINI_MODEL,
    LIGHTS_OUT,
    MASTER_KEY,
    OFF_DUTY,
    ON_DUTY,
    LiteLLMProxy,
)

STREAM = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent"
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]
ZERO = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}


def session() -> dict[str, str]:
    return {"X-Curfew-Session": f"litellm-gemini-stream-{uuid.uuid4().hex[:12]}"}


def stream(
    proxy: LiteLLMProxy, body: dict[str, Any], scope: dict[str, str], query: str
) -> httpx.Response:
    return httpx.post(
        f"{proxy.base_url}{STREAM}{'?' + query if query else ''}",
        json=body,
        headers={"Authorization": f"Bearer {MASTER_KEY}", **scope},
        timeout=30,
    )


def events(response: httpx.Response) -> list[dict[str, Any]]:
    """The stream's objects, read as the google-genai SDK reads them (each
    ``data:`` line one JSON object; nothing else is allowed in between)."""
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers
    found = []
    for line in response.text.splitlines():
        if not line.strip():
            continue
        assert line.startswith("data: "), response.text
        found.append(json.loads(line[len("data: ") :]))
    return found


def text_of(found: list[dict[str, Any]]) -> str:
    return "".join(
        part.get("text", "")
        for event in found
        for candidate in event.get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
    )


def sent(proxy: LiteLLMProxy) -> list[dict[str, Any]]:
    """The bodies the fake Google was sent."""
    return [json.loads(r.body) for r in proxy.gemini.model_posts()]


def log_after(proxy: LiteLLMProxy, offset: int) -> str:
    with open(proxy.log_path, "rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


def errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line]


@pytest.mark.parametrize(("moment", "state"), [(OFF_DUTY, "off-duty"), (LIGHTS_OUT, "lights-out")])
@pytest.mark.parametrize("query", ["alt=sse", ""], ids=["sse", "no-alt"])
def test_an_off_duty_gemini_stream_is_answered_with_geminis_events_and_sends_nothing(
    proxy: LiteLLMProxy, moment: str, state: str, query: str
) -> None:
    proxy.curfew.travel(moment)
    reply = proxy.curfew.verdict()["reply"]
    assert reply
    scope = session()
    offset = proxy.log_path.stat().st_size
    body = {"contents": CONTENTS, "generationConfig": {"maxOutputTokens": 500}}
    response = stream(proxy, body, scope, query)
    assert response.status_code == 200, response.text
    assert response.headers["x-curfew-state"] == state
    assert response.headers["x-curfew-action"] == "short-circuit"
    found = events(response)
    assert found, response.text
    assert text_of(found) == reply
    last = found[-1]["candidates"][0]
    assert last["finishReason"] == "STOP"
    assert last["content"]["role"] == "model"
    assert found[-1]["usageMetadata"] == ZERO
    assert all(event.get("usageMetadata", ZERO) == ZERO for event in found)
    assert found[-1]["responseId"].startswith("curfew-")
    # No upstream request at all: not to Google, not to the other deployments.
    assert proxy.gemini.requests == []
    assert proxy.upstream.requests == []
    # LiteLLM logs it from those events: a success that cost nothing, no ERROR.
    (entry,) = proxy.ledger(scope["X-Curfew-Session"])
    assert entry["tokens"] == [0, 0], entry
    assert not entry["cost"], entry
    assert errors(log_after(proxy, offset)) == []


@pytest.mark.parametrize("query", ["alt=sse", ""], ids=["sse", "no-alt"])
def test_a_gemini_stream_goes_upstream_as_sent_on_duty_and_is_answered_off_duty(
    proxy: LiteLLMProxy, query: str
) -> None:
    body = {
        "contents": CONTENTS,
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 500, "temperature": 0.5},
    }
    # The control: on duty the stream reaches Google as it was sent, and
    # Google's events come back (the fake sends two, with its own usage).
    proxy.curfew.travel(ON_DUTY)
    on_duty = stream(proxy, body, session(), query)
    assert on_duty.status_code == 200, on_duty.text
    assert on_duty.headers["x-curfew-state"] == "on-duty"
    assert text_of(events(on_duty)) == "Hello there"
    (upstream,) = sent(proxy)
    assert upstream["contents"] == CONTENTS
    assert upstream["systemInstruction"] == body["systemInstruction"]
    assert upstream["generationConfig"]["maxOutputTokens"] == 500
    assert upstream["generationConfig"]["temperature"] == 0.5
    (post,) = proxy.gemini.model_posts()
    assert post.path.partition("?")[0] == f"/models/{GEMINI_MODEL}:streamGenerateContent"
    # Off duty the same request is answered in the same protocol, and Google
    # is sent nothing more.
    proxy.curfew.travel(OFF_DUTY)
    off_duty = stream(proxy, body, session(), query)
    assert off_duty.status_code == 200, off_duty.text
    assert off_duty.headers["x-curfew-state"] == "off-duty"
    found = events(off_duty)
    assert text_of(found) == proxy.curfew.verdict()["reply"]
    assert found[-1]["usageMetadata"] == ZERO
    assert len(proxy.gemini.model_posts()) == 1
