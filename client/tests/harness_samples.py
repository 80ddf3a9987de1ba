"""Hook events and answers as Claude Code and Codex document them, and the
server's verdicts and states the hooks act on.

The events are written after each tool's documented input:

- Claude Code, https://code.claude.com/docs/en/hooks ("Hook input": the
  common fields ``session_id``, ``transcript_path``, ``cwd``,
  ``permission_mode``, ``hook_event_name``; ``prompt`` for UserPromptSubmit;
  ``tool_name``, ``tool_input``, ``tool_use_id`` for PreToolUse; ``source``
  for SessionStart; ``stop_hook_active`` and ``last_assistant_message`` for
  Stop and SubagentStop, with ``agent_transcript_path`` for the latter;
  ``agent_id`` and ``agent_type`` when the hook fires inside a subagent);
- Codex, https://developers.openai.com/codex/hooks and its published
  schemas (``codex-rs/hooks/schema/generated/*.command.input.schema.json``:
  ``turn_id`` and ``model`` besides the same fields; ``agent_id`` and
  ``agent_type`` inside a thread-spawned subagent). Codex 0.171's own schemas,
  as its binary embeds them, are in ``codex_hook_schemas.json``
  (``test_codex_schemas.py`` holds these events and the hook's answers
  against them).

``output_schema`` states each tool's documented output per event (Claude
Code's "JSON output" and "Decision control" sections; Codex's
``*.command.output.schema.json``): the fields every event takes
(``continue``, ``stopReason``, ``suppressOutput``, ``systemMessage``) and the
event's own, nothing else, and a block always with a non-blank reason.
"""

from __future__ import annotations

import copy
from typing import Any

from wire_samples import WINDING

SESSION = "7f3c2a1e-5b9d-4c8e-a0f1-2d3e4f5a6b7c"

_CLAUDE_COMMON: dict[str, Any] = {
    "session_id": SESSION,
    "transcript_path": "/home/ada/.claude/projects/app/7f3c2a1e.jsonl",
    "cwd": "/home/ada/app",
    "permission_mode": "default",
}
_CODEX_COMMON: dict[str, Any] = {
    "session_id": SESSION,
    "transcript_path": "/home/ada/.codex/sessions/rollout.jsonl",
    "cwd": "/home/ada/app",
    "permission_mode": "default",
    "model": "gpt-5-codex",
    "turn_id": "019d036d-c7fa-72d2-b6fd-78878bfe34e4",
}

EVENTS: dict[str, dict[str, dict[str, Any]]] = {
    "claude-code": {
        "UserPromptSubmit": {
            **_CLAUDE_COMMON,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Refactor the parser",
        },
        "PreToolUse": {
            **_CLAUDE_COMMON,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q", "description": "Run the tests"},
            "tool_use_id": "toolu_01ABC",
        },
        "SessionStart": {**_CLAUDE_COMMON, "hook_event_name": "SessionStart", "source": "startup"},
        "SubagentStart": {
            **_CLAUDE_COMMON,
            "hook_event_name": "SubagentStart",
            "agent_id": "agent-abc123",
            "agent_type": "Explore",
        },
        "Stop": {
            **_CLAUDE_COMMON,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done: the parser is refactored.",
        },
        "SubagentStop": {
            **_CLAUDE_COMMON,
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": "agent-abc123",
            "agent_type": "Explore",
            "agent_transcript_path": "/home/ada/.claude/projects/app/subagents/agent-abc123.jsonl",
            "last_assistant_message": "Found three call sites.",
        },
    },
    "codex": {
        "UserPromptSubmit": {
            **_CODEX_COMMON,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Refactor the parser",
        },
        "PreToolUse": {
            **_CODEX_COMMON,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_use_id": "call_01ABC",
        },
        # A session starts before any turn: no ``turn_id`` (its schema allows none).
        "SessionStart": {
            **{key: value for key, value in _CODEX_COMMON.items() if key != "turn_id"},
            "hook_event_name": "SessionStart",
            "source": "startup",
        },
        "SubagentStart": {
            **_CODEX_COMMON,
            "hook_event_name": "SubagentStart",
            "agent_id": "019d036e-3164-72c3-a170-98925564c4fc",
            "agent_type": "worker",
        },
        "Stop": {
            **_CODEX_COMMON,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done: the parser is refactored.",
        },
        "SubagentStop": {
            **_CODEX_COMMON,
            "hook_event_name": "SubagentStop",
            "agent_id": "019d036e-3164-72c3-a170-98925564c4fc",
            "agent_type": "worker",
            "agent_transcript_path": "/home/ada/.codex/sessions/worker.jsonl",
            "stop_hook_active": False,
            "last_assistant_message": "Found three call sites.",
        },
    },
}


def event(tool: str, name: str, **extra: Any) -> dict[str, Any]:
    return {**copy.deepcopy(EVENTS[tool][name]), **extra}


def in_subagent(tool: str, name: str) -> dict[str, Any]:
    """The event as it arrives from inside a subagent (``agent_id``, ``agent_type``)."""
    return event(tool, name, agent_id="agent-def456", agent_type="general-purpose")


_TEXT = {"type": "string"}
_COMMON = {
    "continue": {"type": "boolean"},
    "stopReason": _TEXT,
    "suppressOutput": {"type": "boolean"},
    "systemMessage": _TEXT,
}


def output_schema(tool: str, name: str) -> dict[str, Any]:
    """The documented output of ``name`` in ``tool`` as a JSON Schema."""
    specific: dict[str, Any] = {"hookEventName": {"const": name}, "additionalContext": _TEXT}
    extra: dict[str, Any] = {}
    rules: list[dict[str, Any]] = []
    if name == "UserPromptSubmit":
        extra = {"decision": {"enum": ["block"]}, "reason": _TEXT}
        rules = [
            {
                "if": {"required": ["decision"]},
                "then": {"required": ["reason"], "properties": {"reason": {"pattern": r"\S"}}},
            }
        ]
    elif name == "PreToolUse":
        decisions = ["allow", "deny", "ask"] + (["defer"] if tool == "claude-code" else [])
        specific |= {
            "permissionDecision": {"enum": decisions},
            "permissionDecisionReason": _TEXT,
            "updatedInput": {"type": "object"},
        }
    schema: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **_COMMON,
            **extra,
            "hookSpecificOutput": {
                "type": "object",
                "additionalProperties": False,
                "required": ["hookEventName"],
                "properties": specific,
            },
        },
    }
    if rules:
        schema["allOf"] = rules
    return schema


def verdict(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(WINDING), **changes}


#: The server's verdicts in each state (as ``POST /api/v1/verdict`` writes them).
SLEEPY = verdict(persona="You are tired; keep answers short.")
WORKING = verdict(
    state="on-duty",
    schedule_state="on-duty",
    action="pass",
    max_tokens=None,
    persona=None,
    reasoning_effort=None,
    progress=None,
    budget=None,
    reason="2026-09-29 21:00 · on duty",
)
ASLEEP = verdict(
    state="lights-out",
    schedule_state="lights-out",
    action="short-circuit",
    reply="Zzz… back at seven.",
    stream=[],
    max_tokens=None,
    persona=None,
    tools="deny",
    reasoning_effort=None,
    progress=None,
    budget=None,
    reason="2026-09-30 01:00 · lights out",
    valid_until="2026-09-30T07:00:00+08:00",
    at="2026-09-29T17:00:00+00:00",
)
OFF_DUTY = verdict(
    **{key: ASLEEP[key] for key in ASLEEP if key not in ("state", "schedule_state", "reason")},
    state="off-duty",
    schedule_state="off-duty",
    reason="2026-09-29 14:00 · off duty (peak)",
)
NO_TOOLS = verdict(tools="deny", persona="You are very tired.")


def state(**changes: Any) -> dict[str, Any]:
    """A ``GET /api/v1/state`` answer: sleepy at 01:30 local, asleep at 03:00."""
    answer: dict[str, Any] = {
        "state": "winding",
        "schedule_state": "winding",
        "reason": "2026-09-30 01:30 · winding 62%",
        "progress": 0.62,
        "budget": 560,
        "reply": None,
        "peak": False,
        "override": None,
        "override_until": None,
        "overtime_left": None,
        "forced": False,
        "debug_at": None,
        "at": "2026-09-29T17:30:00+00:00",
        "valid_until": "2026-09-29T17:35:00+00:00",
        "timezone": "Asia/Shanghai",
        "enabled": True,
        "dry_run": False,
        "day": [
            {"start": "00:00", "end": "03:00", "state": "winding", "peak": False},
            {"start": "03:00", "end": "07:00", "state": "lights-out", "peak": False},
            {"start": "07:00", "end": "22:00", "state": "on-duty", "peak": False},
            {"start": "22:00", "end": "24:00", "state": "winding", "peak": False},
        ],
    }
    answer.update(changes)
    return answer
