"""The curfew callback inside the real LiteLLM proxy, on its Gemini routes
(``/v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``),
in front of a fake Google: before the callback knew LiteLLM's Gemini call
types, every one of these calls went upstream unchecked.

Off duty ``generateContent`` gets Curfew's Gemini answer (zero
``usageMetadata``) and the fake sees nothing (an off-duty stream is answered
too: ``test_litellm_gemini_stream.py``); winding the fake sees the clamp, the
thinking kept within it and the persona; on duty it sees the body as sent (the
control group)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from curfew_client import gemini_shapes

from tests.litellm.conftest import (
    GEMINI_MODEL,
    LIGHTS_OUT,
    MASTER_KEY,
    OFF_DUTY,
    ON_DUTY,
    LiteLLMProxy,
)
from tests.litellm.test_litellm_proxy import winding

GENERATE = f"/v1beta/models/{GEMINI_MODEL}:generateContent"
STREAM = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent"
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]


def session() -> dict[str, str]:
    return {"X-Curfew-Session": f"litellm-gemini-{uuid.uuid4().hex[:12]}"}


def post(
    proxy: LiteLLMProxy, path: str, body: dict[str, Any], scope: dict[str, str], query: str = ""
) -> httpx.Response:
    return httpx.post(
        f"{proxy.base_url}{path}{'?' + query if query else ''}",
        json=body,
        headers={"Authorization": f"Bearer {MASTER_KEY}", **scope},
        timeout=30,
    )


def sent(proxy: LiteLLMProxy) -> list[dict[str, Any]]:
    """The bodies the fake Google was sent."""
    return [json.loads(r.body) for r in proxy.gemini.model_posts()]


def test_off_duty_generate_content_is_answered_by_curfew_with_zero_usage(
    proxy: LiteLLMProxy,
) -> None:
    proxy.curfew.travel(OFF_DUTY)
    scope = session()
    body = {"contents": CONTENTS, "generationConfig": {"maxOutputTokens": 500}}
    response = post(proxy, GENERATE, body, scope)
    assert response.status_code == 200, response.text
    answer = response.json()
    expected = gemini_shapes.answer(GEMINI_MODEL, "。")
    assert answer["candidates"] == expected["candidates"]
    assert answer["usageMetadata"] == gemini_shapes.zero_usage()
    assert response.headers["x-curfew-state"] == "off-duty"
    assert response.headers["x-curfew-action"] == "short-circuit"
    assert sent(proxy) == []
    # LiteLLM's ledger records the call with no usage (the callback hands its
    # success logging Curfew's answer, and its logging hook says zero).
    (entry,) = proxy.ledger(scope["X-Curfew-Session"])
    assert entry["tokens"] == [0, 0], entry
    assert not entry["cost"], entry


@pytest.mark.parametrize(("path", "query"), [(GENERATE, ""), (STREAM, "alt=sse")])
def test_winding_gemini_is_clamped_thinks_within_and_gets_the_persona(
    proxy: LiteLLMProxy, path: str, query: str
) -> None:
    clamp, persona = winding(proxy)
    body = {
        "contents": CONTENTS,
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {
            "maxOutputTokens": 100_000,
            "thinkingConfig": {"thinkingBudget": -1},
        },
    }
    response = post(proxy, path, body, session(), query)
    assert response.status_code == 200, response.text
    assert response.headers["x-curfew-state"] == "winding"
    (upstream,) = sent(proxy)
    config = upstream["generationConfig"]
    assert config["maxOutputTokens"] == clamp
    assert config["thinkingConfig"]["thinkingBudget"] == clamp
    assert upstream["contents"] == CONTENTS
    texts = [part["text"] for part in upstream["systemInstruction"]["parts"]]
    assert texts == ["Be brief.", persona]


@pytest.mark.parametrize(("path", "query"), [(GENERATE, ""), (STREAM, "alt=sse")])
def test_on_duty_gemini_goes_upstream_untouched(proxy: LiteLLMProxy, path: str, query: str) -> None:
    proxy.curfew.travel(ON_DUTY)
    body = {"contents": CONTENTS, "generationConfig": {"maxOutputTokens": 500}}
    response = post(proxy, path, body, session(), query)
    assert response.status_code == 200, response.text
    assert "Hello" in response.text
    assert response.headers["x-curfew-state"] == "on-duty"
    (upstream,) = sent(proxy)
    assert upstream["contents"] == CONTENTS
    assert upstream["generationConfig"]["maxOutputTokens"] == 500
    assert "systemInstruction" not in upstream


# -- LiteLLM's own logging of these calls ---------------------------------------------
#
# Before the callback handed LiteLLM what its success logging reads, every
# off-duty generateContent made LiteLLM log "Google GenAI Generate Content:
# httpx_response is None" as an ERROR with a traceback, and record no entry.


def log_after(proxy: LiteLLMProxy, offset: int) -> str:
    """What the LiteLLM proxy wrote to its output since ``offset``."""
    with open(proxy.log_path, "rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


def errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line]


@pytest.mark.parametrize("moment", [OFF_DUTY, LIGHTS_OUT, ON_DUTY])
def test_a_gemini_call_is_logged_as_a_success_without_an_error(
    proxy: LiteLLMProxy, moment: str
) -> None:
    proxy.curfew.travel(moment)
    scope = session()
    offset = proxy.log_path.stat().st_size
    response = post(proxy, GENERATE, {"contents": CONTENTS}, scope)
    assert response.status_code == 200, response.text
    entries = proxy.ledger(scope["X-Curfew-Session"])  # waits for LiteLLM's logging
    assert errors(log_after(proxy, offset)) == []
    (entry,) = entries
    if moment == ON_DUTY:  # the control: upstream's usage, as LiteLLM logs it
        assert entry["tokens"] == [11, 5], entry
    else:  # Curfew's answer: a success that cost nothing
        assert entry["tokens"] == [0, 0], entry
        assert not entry["cost"], entry
        assert sent(proxy) == []


def test_a_genuine_gemini_failure_still_logs_an_error(proxy: LiteLLMProxy) -> None:
    # The control for the one above: LiteLLM's error logging is left as it is.
    proxy.curfew.travel(ON_DUTY)
    proxy.gemini.fail_with = 500
    offset = proxy.log_path.stat().st_size
    response = post(proxy, GENERATE, {"contents": CONTENTS}, session())
    assert response.status_code >= 500, response.text
    deadline = time.monotonic() + 10
    while not errors(log_after(proxy, offset)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert errors(log_after(proxy, offset))
