"""``make clients``'s agent rows: pydantic-ai and the OpenAI Agents SDK, each
with a FORCED tool call, against the served Curfew (issue 39).

- pydantic-ai: an ``output_type`` model, its default output mode a tool the
  model must call (``tool_choice: "required"``), on the chat completions API;
  off duty it raises ``ContentFilterError`` carrying the reply;
- the OpenAI Agents SDK: a function tool and ``ModelSettings(tool_choice=
  "required")``, on its default API, the Responses API; off duty it raises
  ``ModelRefusalError`` carrying the reply.

Off duty Curfew answers a forced tool with the protocol's refusal (docs/manual.md,
"A forced tool_choice"): the agent must stop after one request, show the reply
that says why and count zero usage, rather than ask again until it gives up
on the tool requirement. Winding and on duty the upstream must call the tool
for the agent to finish: :class:`ToolCallingFake` answers a forced tool with a
call to it, every required argument the fake's reply (a text answer would make
pydantic-ai retry and fail, whatever Curfew did).

Each script prints the agent's answer (or the refusal it raised), then one line
``agent: requests=<n> input=<tokens> output=<tokens>`` that :func:`check`
reads.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

from curfew_testkit.fake_openai_more import response
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import USAGE, FakeUpstream, read_body, recorded

#: The tool call's id, in both protocols.
CALL_ID = "call_fake_1"


def forced_tool(request: dict[str, Any]) -> dict[str, Any] | None:
    """The tool a request forces the model to call (its declaration), or None."""
    choice = request.get("tool_choice")
    tools = [tool for tool in request.get("tools") or [] if isinstance(tool, dict)]
    functions = [tool.get("function", tool) for tool in tools if tool.get("type") == "function"]
    if not functions:
        return None
    if choice == "required":
        return dict(functions[0])
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        for function in functions:
            if function.get("name") == name:
                return dict(function)
    return None


def arguments(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """Arguments for a JSON Schema object: each string the fake's reply."""
    made: dict[str, Any] = {}
    properties = (parameters or {}).get("properties") or {}
    for name, schema in properties.items():
        kind = schema.get("type") if isinstance(schema, dict) else None
        if kind == "array":
            made[name] = [REPLY_TEXT]
        elif kind in ("integer", "number"):
            made[name] = 1
        elif kind == "boolean":
            made[name] = True
        elif kind == "object":
            made[name] = {}
        else:
            made[name] = REPLY_TEXT
    return made


def tool_call_answer(route: str, request: dict[str, Any], tool: dict[str, Any]) -> dict[str, Any]:
    """The upstream's answer calling ``tool``: a chat completion or a response."""
    name = str(tool.get("name"))
    given = json.dumps(arguments(tool.get("parameters")))
    if route.endswith("/responses"):
        call = {
            "id": "fc_fake_1",
            "type": "function_call",
            "call_id": CALL_ID,
            "name": name,
            "arguments": given,
            "status": "completed",
        }
        return {**response(request, status="completed"), "output": [call]}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": CALL_ID, "type": "function", "function": {"name": name, "arguments": given}}
        ],
    }
    return {
        "id": "chatcmpl-fake-tool",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": USAGE,
    }


class ToolCallingFake(FakeUpstream):
    """The recording OpenAI fake, but a request (not streamed) that forces a
    tool gets a call to it; everything else the fake's usual answers."""

    def _handler(self) -> Any:
        fake = self
        base: Any = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                body = read_body(self)
                try:
                    request = json.loads(body) if body else {}
                except ValueError:
                    request = {}
                route = self.path.partition("?")[0].rstrip("/")
                tool = forced_tool(request) if isinstance(request, dict) else None
                if tool is None or request.get("stream") or fake.fail is not None:
                    # The usual answer, from the body already read.
                    kept = self.rfile
                    self.rfile = io.BytesIO(body)
                    try:
                        super().do_POST()
                    finally:
                        self.rfile = kept
                    return
                fake._record(recorded("POST", self, body))
                answer = tool_call_answer(route, request, tool)
                self._send_json(200, json.dumps(answer).encode())

        return Handler


_USAGE_LINE = re.compile(r"^agent: requests=(\d+) input=(\d+) output=(\d+)$", re.MULTILINE)


def usage(seen: str) -> tuple[int, int, int] | None:
    """``(requests, input tokens, output tokens)`` as the script said, or None."""
    found = _USAGE_LINE.findall(seen)
    if not found:
        return None
    requests, given, taken = found[-1]
    return int(requests), int(given), int(taken)


def check(state: str, seen: str) -> list[str]:
    """The agent's own account: off duty one request, zero usage, and the
    reply shown (not a retry error); else the tool's answer, the fake's reply."""
    problems: list[str] = []
    counted = usage(seen)
    if counted is None:
        return ["the agent's usage line is missing"]
    requests, given, taken = counted
    if "Exceeded maximum" in seen or "MaxTurnsExceeded" in seen:
        problems.append("the agent gave up on the tool requirement")
    if state == "off duty":
        if requests != 1:
            problems.append(f"the agent made {requests} requests, not 1")
        if given or taken:
            problems.append(f"usage {given}+{taken} tokens, not zero")
    elif "Hello from the fake" not in seen:
        problems.append("the tool was not called with the upstream's answer")
    return problems


def words(state: str, seen: str) -> str:
    """What the agent counted, for the table."""
    counted = usage(seen)
    if counted is None:
        return ""
    requests, given, taken = counted
    return f"agent: {requests} request(s), usage {given}+{taken}"


#: pydantic-ai: structured output, its default mode a forced tool call.
PYDANTIC_AI = """
import sys

from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.exceptions import ContentFilterError
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base_url, token, prompt = sys.argv[1:4]
# A team key's member: named by X-Curfew-User, as for the OpenAI SDK.
member = {"X-Curfew-User": sys.argv[4]} if len(sys.argv) > 4 else {}
client = AsyncOpenAI(base_url=base_url + "/v1", api_key=token, default_headers=member)


class Answer(BaseModel):
    text: str


model = OpenAIChatModel("{model}", provider=OpenAIProvider(openai_client=client))
agent = Agent(model, output_type=Answer)
with capture_run_messages() as messages:
    try:
        print(agent.run_sync(prompt).output.text)
    except ContentFilterError as refused:
        print("refused:", refused.message)  # the reply, without the raw body
responses = [m for m in messages if isinstance(m, ModelResponse)]
given = sum(r.usage.input_tokens for r in responses)
taken = sum(r.usage.output_tokens for r in responses)
print(f"agent: requests={len(responses)} input={given} output={taken}")
"""

#: The OpenAI Agents SDK: a function tool the model must call.
OPENAI_AGENTS = """
import sys

from agents import (
    Agent,
    ModelSettings,
    Runner,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents.exceptions import ModelRefusalError
from openai import AsyncOpenAI

base_url, token, prompt = sys.argv[1:4]
member = {"X-Curfew-User": sys.argv[4]} if len(sys.argv) > 4 else {}
set_tracing_disabled(True)  # its traces would go to api.openai.com
set_default_openai_client(
    AsyncOpenAI(base_url=base_url + "/v1", api_key=token, default_headers=member),
    use_for_tracing=False,
)


@function_tool
def say(text: str) -> str:
    \"\"\"Say the answer to the user.\"\"\"
    return text


agent = Agent(
    name="greeter",
    instructions="Answer with the say tool.",
    model="{model}",
    tools=[say],
    model_settings=ModelSettings(tool_choice="required"),
    tool_use_behavior="stop_on_first_tool",
)
try:
    result = Runner.run_sync(agent, prompt)
    print(result.final_output)
    usage = result.context_wrapper.usage
except ModelRefusalError as refused:
    # The SDK's path for a refusal: raised after the one request, the reply in it.
    print("refused:", refused.refusal)
    if refused.run_data is None:
        raise
    usage = refused.run_data.context_wrapper.usage
print(f"agent: requests={usage.requests} input={usage.input_tokens} output={usage.output_tokens}")
"""
