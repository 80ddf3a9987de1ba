"""``curfew hook codex`` held against Codex's own JSON Schemas.

``codex_hook_schemas.json`` holds the input and output schemas of the events
Curfew registers or meets (``SessionStart``, ``UserPromptSubmit``,
``PreToolUse``, ``SubagentStart``, ``Stop``, ``SubagentStop``) as codex-cli
0.171.0 embeds them in its binary (generated in Codex's repository as
``codex-rs/hooks/schema/generated/*.command.{input,output}.schema.json``;
Codex rejects an answer they refuse: ``additionalProperties`` is false
throughout). The test events of ``harness_samples`` must be events Codex
could send, and every answer the hook gives, in every verdict and outage,
must be one Codex accepts.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from curfew_cli.hooks import run
from harness_samples import (
    ASLEEP,
    EVENTS,
    NO_TOOLS,
    OFF_DUTY,
    SLEEPY,
    WORKING,
    event,
    in_subagent,
    state,
)
from harness_server import FakeServer, environment

SCHEMAS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "codex_hook_schemas.json").read_text(encoding="utf-8")
)["schemas"]
SHANGHAI = timezone(timedelta(hours=8))
NOW = datetime(2026, 9, 30, 1, 0, tzinfo=SHANGHAI)


def schema(name: str, side: str) -> dict[str, Any]:
    """``UserPromptSubmit``, ``output``: Codex's ``user-prompt-submit.command.output``."""
    kebab = re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()
    found: dict[str, Any] = SCHEMAS[f"{kebab}.command.{side}"]
    return found


#: Each event as the main agent sends it, and, where Codex's schema has
#: ``agent_id``, as a subagent does.
SENT = [(name, event("codex", name)) for name in EVENTS["codex"]] + [
    (name, in_subagent("codex", name)) for name in ("UserPromptSubmit", "PreToolUse")
]
#: The server's answers: each verdict, and an outage under each policy.
SERVERS: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "asleep": ({"verdict": ASLEEP}, {}),
    "off duty": ({"verdict": OFF_DUTY}, {}),
    "sleepy": ({"verdict": SLEEPY, "state": state()}, {}),
    "sleepy, no tools": ({"verdict": NO_TOOLS, "state": state()}, {}),
    "working": ({"verdict": WORKING}, {}),
    "down, fail_open": ({"down": True}, {}),
    "down, fail_closed": ({"status": 500}, {"CURFEW_POLICY": "fail_closed"}),
}


@pytest.mark.parametrize(("name", "sent"), SENT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SENT)])
def test_the_test_events_are_events_codex_sends(name: str, sent: dict[str, Any]) -> None:
    jsonschema.validate(sent, schema(name, "input"))


def test_codex_s_input_schema_refuses_what_it_does_not_send() -> None:
    """Control: the schemas are strict, so the test above can fail."""
    sent = {**event("codex", "SessionStart"), "turn_id": "t"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(sent, schema("SessionStart", "input"))


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize(("name", "sent"), SENT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SENT)])
def test_every_answer_is_one_codex_accepts(
    name: str, sent: dict[str, Any], server: str, tmp_path: Path
) -> None:
    fake, env = SERVERS[server]
    text = run(
        "codex",
        json.dumps(sent),
        environment(tmp_path, **env),
        transport=FakeServer(**fake).transport,
        now=NOW,
        tz=SHANGHAI,
    )
    if text:
        jsonschema.validate(json.loads(text), schema(name, "output"))


def test_codex_s_output_schema_refuses_a_wrong_answer() -> None:
    """Control: a deny written in UserPromptSubmit's shape is refused for PreToolUse,
    and a context for a Stop (which takes none)."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"decision": "deny"}, schema("PreToolUse", "output"))
    stop = {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(stop, schema("Stop", "output"))
