"""``make clients``'s agent rows, held without the agents: the fake calls a
forced tool (and only a forced one), and the rows' checks pass a good run and
fail a bad one (the control)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from curfew_testkit.fake_reply import REPLY_TEXT
from tests.clients import agents, run

TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "final_result",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]
TOOLS_RESPONSES = [
    {
        "type": "function",
        "name": "say",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
]
OFF_DUTY_REFUSED = "refused: Curfew: peak hours until 12:00.\nagent: requests=1 input=0 output=0\n"
ON_DUTY_CALLED = f"{REPLY_TEXT}\nagent: requests=1 input=11 output=5\n"


@pytest.fixture
def fake() -> Iterator[agents.ToolCallingFake]:
    server = agents.ToolCallingFake().start()
    yield server
    server.stop()


def post(fake: agents.ToolCallingFake, route: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(f"{fake.base_url}/v1/{route}", json=body, timeout=10)
    answer.raise_for_status()
    return answer.json()


def test_a_forced_tool_in_chat_gets_a_call_to_it(fake: agents.ToolCallingFake) -> None:
    body = {"model": "m", "messages": [], "tools": TOOLS_CHAT, "tool_choice": "required"}
    answer = post(fake, "chat/completions", body)
    [choice] = answer["choices"]
    assert choice["finish_reason"] == "tool_calls"
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "final_result"
    assert json.loads(call["function"]["arguments"]) == {"text": REPLY_TEXT}
    assert len(fake.requests) == 1  # recorded as every call is


def test_a_named_tool_in_responses_gets_a_call_to_it(fake: agents.ToolCallingFake) -> None:
    choice = {"type": "function", "name": "say"}
    body = {"model": "m", "input": "hi", "tools": TOOLS_RESPONSES, "tool_choice": choice}
    answer = post(fake, "responses", body)
    [call] = answer["output"]
    assert call["type"] == "function_call"
    assert call["name"] == "say"
    assert json.loads(call["arguments"]) == {"text": REPLY_TEXT}


@pytest.mark.parametrize("tool_choice", [None, "auto", "none"])
def test_the_control_a_tool_not_forced_gets_the_usual_text(
    fake: agents.ToolCallingFake, tool_choice: str | None
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": [], "tools": TOOLS_CHAT}
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    answer = post(fake, "chat/completions", body)
    assert answer["choices"][0]["message"]["content"] == REPLY_TEXT
    responses = post(fake, "responses", {"model": "m", "input": "hi", "tools": TOOLS_RESPONSES})
    assert responses["output"][0]["type"] == "message"
    assert len(fake.requests) == 2


def test_the_arguments_fill_each_kind() -> None:
    schema = {
        "properties": {
            "steps": {"type": "array"},
            "n": {"type": "integer"},
            "ok": {"type": "boolean"},
            "more": {"type": "object"},
            "text": {"type": "string"},
        }
    }
    made = agents.arguments(schema)
    assert made == {"steps": [REPLY_TEXT], "n": 1, "ok": True, "more": {}, "text": REPLY_TEXT}


def test_off_duty_one_request_with_zero_usage_passes() -> None:
    assert agents.check("off duty", OFF_DUTY_REFUSED) == []
    assert agents.words("off duty", OFF_DUTY_REFUSED) == "agent: 1 request(s), usage 0+0"


@pytest.mark.parametrize(
    ("seen", "problem"),
    [
        ("refused: Curfew\nagent: requests=2 input=0 output=0\n", "2 requests"),
        ("refused: Curfew\nagent: requests=1 input=11 output=5\n", "not zero"),
        ("Exceeded maximum retries (1) for output validation\n", "usage line is missing"),
        (
            "UnexpectedModelBehavior: Exceeded maximum output retries\n"
            "agent: requests=1 input=0 output=0\n",
            "gave up on the tool requirement",
        ),
    ],
)
def test_off_duty_the_control_retries_usage_or_no_account_fail(seen: str, problem: str) -> None:
    problems = agents.check("off duty", seen)
    assert any(problem in found for found in problems), problems


def test_on_duty_the_tools_answer_passes_and_prose_fails() -> None:
    assert agents.check("on duty", ON_DUTY_CALLED) == []
    assert agents.check("winding", ON_DUTY_CALLED) == []
    problems = agents.check("on duty", "None\nagent: requests=1 input=11 output=5\n")
    assert problems == ["the tool was not called with the upstream's answer"]


def test_the_agents_run_after_the_other_tools_with_their_checks() -> None:
    keys = [tool.key for tool in run.TOOLS]
    # Only the row added after them (google-genai) comes later.
    assert keys[-3:] == ["pydantic-ai", "openai-agents", "google-genai"]
    for tool in run.TOOLS[-3:-1]:
        assert tool.extra_check is agents.check
        assert tool.protocol == "openai"


def test_the_agent_scripts_force_a_tool_and_name_the_member(tmp_path: Any) -> None:
    assert "output_type=Answer" in agents.PYDANTIC_AI
    assert 'tool_choice="required"' in agents.OPENAI_AGENTS
    tool = next(tool for tool in run.TOOLS if tool.key == "openai-agents")
    context = run.Context(tool, tmp_path, tmp_path, "http://x", "cft_team", {}, "alice")
    [command] = tool.commands(context)
    assert command[-4:] == ["http://x", "cft_team", run.PROMPT, "alice"]
    script = (tmp_path / "agent.py").read_text(encoding="utf-8")
    assert '"X-Curfew-User": sys.argv[4]' in script
    assert "{model}" not in script
