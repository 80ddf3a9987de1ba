"""``make clients``'s google-genai row, held without the SDK: the declared proxy
config's Gemini model at the fake Google, the script made of the declared
snippet, the script's lines it reads, and the row's checks passing a good run
and failing a bad one (the control)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml

from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_upstream import Recorded
from tests.clients import gemini, run
from tests.code_calls import keywords_of

PERSONA = "You are winding down for the night."
ROUTE = f"/v1beta/models/{gemini.MODEL}:generateContent"
STREAM = f"/v1beta/models/{gemini.MODEL}:streamGenerateContent"
#: Where LiteLLM asks Google (its api_base, no version in the path).
AT_GOOGLE = f"/models/{gemini.MODEL}:generateContent"
STREAM_AT_GOOGLE = f"/models/{gemini.MODEL}:streamGenerateContent"
SENT = {
    "contents": [{"parts": [{"text": "hi"}], "role": "user"}],
    "systemInstruction": {"parts": [{"text": "Answer briefly."}], "role": "user"},
    "generationConfig": {"maxOutputTokens": gemini.BUDGET},
}
OFF_DUTY_SEEN = (
    "reply: Curfew: peak hours until 12:00.\n"
    "generate_content finish=STOP usage=0/0/0\n"
    "stream: Curfew: peak hours until 12:00.\n"
    "generate_content_stream finish=STOP usage=0/0/0 chunks=1\n"
)
ON_DUTY_SEEN = (
    "reply: Hello there\n"
    "generate_content finish=STOP usage=11/5/16\n"
    "stream: Hello there\n"
    "generate_content_stream finish=STOP usage=11/5/16 chunks=2\n"
)


def declared() -> str:
    return (
        tool_setups.setup("litellm")
        .snippet("config")
        .render(base_url="http://127.0.0.1:8000", token="cft_x", model=run.MODEL)
    )


def call(route: str, body: dict[str, Any], query: str = "") -> Recorded:
    path = f"{route}?{query}" if query else route
    return Recorded("POST", path, {}, json.dumps(body).encode())


def reached(body: dict[str, Any]) -> dict[str, Any]:
    """The body as LiteLLM sends it to Google: rebuilt, with its own fields."""
    return {"model": gemini.MODEL, **body, "tools": None}


def checked(state: str, sent: list[Recorded], arrived: list[Recorded], seen: str) -> list[str]:
    verdict = {"max_tokens": 800}
    problems, _, _ = run.check(run.GOOGLE_GENAI, state, sent, arrived, seen, 0, verdict, PERSONA)
    return problems + gemini.check(state, seen)


def test_the_declared_gemini_model_is_sent_to_the_fake_and_the_rest_kept() -> None:
    loaded = yaml.safe_load(gemini.at_fake(declared(), "http://127.0.0.1:9"))
    before = yaml.safe_load(declared())
    [entry] = [e for e in before["model_list"] if e["model_name"] == gemini.MODEL]
    # Declared as a user writes it: Google's own address, the key from the environment.
    assert entry == {
        "model_name": gemini.MODEL,
        "litellm_params": {
            "model": f"gemini/{gemini.MODEL}",
            "api_key": "os.environ/GEMINI_API_KEY",
        },
    }
    assert gemini.KEY_ENV.keys() == {"GEMINI_API_KEY"}
    at = before["model_list"].index(entry)
    assert loaded["model_list"][at]["litellm_params"] == {
        **entry["litellm_params"],
        "api_base": "http://127.0.0.1:9",
    }
    others = [e for i, e in enumerate(loaded["model_list"]) if i != at]
    assert others == [e for e in before["model_list"] if e is not entry]
    # Curfew's callback stays, and the control group still takes it out.
    assert loaded["litellm_settings"] == before["litellm_settings"]
    control = yaml.safe_load(run.without_curfew(gemini.at_fake(declared(), "http://h")))
    assert "litellm_settings" not in control
    assert control["model_list"][at]["model_name"] == gemini.MODEL


def test_a_config_without_a_gemini_model_is_not_run() -> None:
    # The control: the row must not quietly add what the page does not declare.
    without = yaml.safe_load(declared())
    without["model_list"] = [e for e in without["model_list"] if e["model_name"] != gemini.MODEL]
    with pytest.raises(ValueError, match="no gemini/ model"):
        gemini.at_fake(yaml.safe_dump(without), "http://h")


def test_the_script_is_the_declared_snippet_at_the_proxy_under_test() -> None:
    snippet = tool_setups.setup("litellm").snippet("genai").template
    assert snippet == gemini.SNIPPET
    # The proxy's address and key come from argv, the member's header with a team key.
    assert keywords_of(gemini.CLIENT, "genai.Client") == {"api_key": "key", "http_options": "proxy"}
    assert keywords_of(gemini.CLIENT, "types.HttpOptions") == {
        "base_url": "base_url",
        "api_version": "'v1beta'",
        "headers": "member",
    }
    assert tool_setups.LITELLM_PROXY_URL not in gemini.CLIENT
    assert tool_setups.LITELLM_KEY not in gemini.CLIENT
    # Everything else as the page says it, line for line.
    changed = (tool_setups.LITELLM_PROXY_URL, tool_setups.LITELLM_KEY, 'api_version="v1beta"')
    for line in snippet.splitlines():
        if not any(value in line for value in changed):
            assert line in gemini.CLIENT.splitlines(), line
    compile(gemini.CLIENT, "client.py", "exec")
    assert gemini.BUDGET == 4096
    assert f"max_output_tokens={gemini.BUDGET}," in snippet


def test_a_snippet_that_does_not_ask_the_proxy_is_refused() -> None:
    snippet = gemini.SNIPPET.replace(tool_setups.LITELLM_PROXY_URL, "http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="localhost:4000"):
        gemini.script(snippet)


def test_the_script_s_lines_are_read_per_call() -> None:
    assert gemini.turns(OFF_DUTY_SEEN) == {
        "generate_content": ("STOP", "0/0/0"),
        "generate_content_stream": ("STOP", "0/0/0"),
    }
    assert gemini.replies(ON_DUTY_SEEN) == {
        "generate_content": "Hello there",
        "generate_content_stream": "Hello there",
    }


def test_off_duty_both_calls_must_be_finished_curfew_replies_with_zero_usage() -> None:
    assert gemini.check("off duty", OFF_DUTY_SEEN) == []
    # The control: the upstream's answer, a usage, an unfinished stream, a missing call.
    assert "generate_content: usage 11/5/16, not zero" in gemini.check("off duty", ON_DUTY_SEEN)
    unfinished = OFF_DUTY_SEEN.replace("stream finish=STOP", "stream finish=None")
    assert gemini.check("off duty", unfinished) == [
        "generate_content_stream: finish None, not STOP"
    ]
    no_usage = OFF_DUTY_SEEN.replace("usage=0/0/0 chunks", "usage=none chunks")
    assert gemini.check("off duty", no_usage) == ["generate_content_stream: usage none, not zero"]
    one_call = "\n".join(OFF_DUTY_SEEN.splitlines()[:2])
    assert gemini.check("off duty", one_call) == ["generate_content_stream: no finished turn"]
    assert gemini.check("on duty", ON_DUTY_SEEN) == []
    assert gemini.check("on duty", OFF_DUTY_SEEN) == [
        "generate_content: the upstream's reply is not shown",
        "generate_content_stream: the upstream's reply is not shown",
    ]


def test_off_duty_nothing_may_reach_google() -> None:
    sent = [call(ROUTE, SENT), call(STREAM, SENT, "alt=sse")]
    assert checked("off duty", sent, [], OFF_DUTY_SEEN) == []
    # The control group: straight through, the calls reached Google.
    passed = [call(AT_GOOGLE, reached(SENT))]
    assert "1 unlabelled call(s) reached the upstream" in checked(
        "off duty", sent, passed, ON_DUTY_SEEN
    )


def test_winding_the_budget_is_clamped_and_the_persona_is_in_system_instruction() -> None:
    sent = [call(ROUTE, SENT), call(STREAM, SENT, "alt=sse")]
    wound = {
        **SENT,
        "systemInstruction": {"parts": [{"text": f"Answer briefly.\n\n{PERSONA}"}]},
        "generationConfig": {"maxOutputTokens": 800},
    }
    arrived = [call(AT_GOOGLE, reached(wound)), call(STREAM_AT_GOOGLE, reached(wound), "alt=sse")]
    assert checked("winding", sent, arrived, ON_DUTY_SEEN) == []
    _, _, words = run.check(
        run.GOOGLE_GENAI, "winding", sent, arrived, ON_DUTY_SEEN, 0, {"max_tokens": 800}, PERSONA
    )
    assert words.startswith("generateContent: budget 4096 → 800 + persona in systemInstruction;")
    # The control: unclamped, and the persona elsewhere than systemInstruction.
    elsewhere = {
        **SENT,
        "contents": [{"parts": [{"text": PERSONA}], "role": "user"}, *SENT["contents"]],
    }
    assert checked("winding", sent, [call(AT_GOOGLE, reached(elsewhere))], ON_DUTY_SEEN) == [
        f"{AT_GOOGLE}: budget 4096 not clamped to 800",
        f"{AT_GOOGLE}: no persona",
    ]


def test_on_duty_google_s_fields_and_query_reach_it_as_sent() -> None:
    sent = [call(ROUTE, SENT), call(STREAM, SENT, "alt=sse")]
    arrived = [call(AT_GOOGLE, reached(SENT)), call(STREAM_AT_GOOGLE, reached(SENT), "alt=sse")]
    assert checked("on duty", sent, arrived, ON_DUTY_SEEN) == []
    # The control: a changed system text, a changed budget, a stream asked otherwise.
    other = {**SENT, "systemInstruction": {"parts": [{"text": "Be verbose."}]}}
    budget = {**SENT, "generationConfig": {"maxOutputTokens": 800}}
    arrived = [call(AT_GOOGLE, reached(other)), call(STREAM_AT_GOOGLE, reached(budget))]
    assert checked("on duty", sent, arrived, ON_DUTY_SEEN) == [
        f"{AT_GOOGLE}: systemInstruction not as sent",
        f"{STREAM_AT_GOOGLE}: budget 4096 changed to 800",
        f"{STREAM_AT_GOOGLE}: generationConfig not as sent",
        f"{STREAM_AT_GOOGLE}: query '', sent 'alt=sse'",
    ]


def test_the_fake_google_is_emptied_between_runs() -> None:
    fake = gemini.GeminiFake().start()
    try:
        httpx.post(f"{fake.base_url}/models/{gemini.MODEL}:generateContent", json=SENT)
        assert len(fake.model_posts()) == 1
        fake.fail_with = 500
        fake.reset()
        assert fake.requests == []
        assert fake.fail_with is None
    finally:
        fake.stop()
