"""``curfew hook claude-code`` / ``curfew hook codex``: each answer held
against the tool's documented event and output (``harness_samples``)."""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from curfew_cli.hooks import run
from curfew_cli.main import main
from harness_samples import (
    ASLEEP,
    NO_TOOLS,
    OFF_DUTY,
    SESSION,
    SLEEPY,
    WORKING,
    event,
    in_subagent,
    output_schema,
    state,
)
from harness_server import FakeServer, environment

TOOLS = ("claude-code", "codex")
SHANGHAI = timezone(timedelta(hours=8))
NOW = datetime(2026, 9, 30, 1, 0, tzinfo=SHANGHAI)


def hook(
    tool: str, sent: dict[str, Any], server: FakeServer, tmp_path: Path, **env: str
) -> dict[str, Any] | None:
    """Run the hook on ``sent``; its answer (``None``: it printed nothing),
    checked against the tool's documented output for the event."""
    text = run(
        tool,  # type: ignore[arg-type]
        json.dumps(sent),
        environment(tmp_path, **env),
        transport=server.transport,
        now=NOW,
        tz=SHANGHAI,
    )
    if not text:
        return None
    out: dict[str, Any] = json.loads(text)
    jsonschema.validate(out, output_schema(tool, sent["hook_event_name"]))
    return out


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(("verdict", "word"), [(ASLEEP, "asleep"), (OFF_DUTY, "off duty")])
def test_a_prompt_off_duty_or_asleep_is_blocked_saying_why_and_until_when(
    tool: str, verdict: dict[str, Any], word: str, tmp_path: Path
) -> None:
    server = FakeServer(verdict=verdict)
    out = hook(tool, event(tool, "UserPromptSubmit"), server, tmp_path)
    assert out is not None
    assert out["decision"] == "block"
    assert f"your AI is {word} until 07:00" in out["reason"]
    assert "Zzz… back at seven." in out["reason"]  # the user's own reply
    assert "systemMessage" not in out  # no outage to tell


@pytest.mark.parametrize("tool", TOOLS)
def test_a_sleepy_prompt_passes_with_the_tired_persona_as_context(
    tool: str, tmp_path: Path
) -> None:
    server = FakeServer(verdict=SLEEPY)
    out = hook(tool, event(tool, "UserPromptSubmit"), server, tmp_path)
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "You are tired; keep answers short.",
        }
    }


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", ["UserPromptSubmit", "PreToolUse", "SessionStart"])
def test_working_prints_nothing(tool: str, name: str, tmp_path: Path) -> None:
    server = FakeServer(verdict=WORKING, state=state(state="on-duty", budget=None))
    assert hook(tool, event(tool, name), server, tmp_path) is None
    assert len(server.asked()) == 1  # it asked: nothing is a verdict, not a skip


@pytest.mark.parametrize("tool", TOOLS)
def test_a_tool_call_is_denied_when_the_verdict_denies_tools(tool: str, tmp_path: Path) -> None:
    out = hook(tool, event(tool, "PreToolUse"), FakeServer(verdict=NO_TOOLS), tmp_path)
    assert out is not None
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "no tools while your AI is sleepy" in specific["permissionDecisionReason"]
    # Control: a sleepy verdict that allows tools lets the call through.
    assert hook(tool, event(tool, "PreToolUse"), FakeServer(verdict=SLEEPY), tmp_path) is None


@pytest.mark.parametrize("tool", TOOLS)
def test_session_start_says_the_state_and_the_next_change(tool: str, tmp_path: Path) -> None:
    server = FakeServer(verdict=SLEEPY, state=state())
    out = hook(tool, event(tool, "SessionStart"), server, tmp_path)
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "your AI is sleepy · budget 560 · asleep at 03:00" in context
    assert context.endswith("You are tired; keep answers short.")


@pytest.mark.parametrize("tool", TOOLS)
def test_the_event_s_session_scopes_the_verdict(tool: str, tmp_path: Path) -> None:
    server = FakeServer(verdict=WORKING)
    hook(tool, event(tool, "UserPromptSubmit"), server, tmp_path)
    assert server.asked() == [{"session_id": SESSION, "subagent": False}]


@pytest.mark.parametrize("tool", TOOLS)
def test_a_subagent_s_events_ask_as_a_subagent(tool: str, tmp_path: Path) -> None:
    server = FakeServer(verdict=WORKING)
    hook(tool, in_subagent(tool, "PreToolUse"), server, tmp_path)
    hook(tool, event(tool, "SubagentStart"), server, tmp_path)
    hook(tool, event(tool, "PreToolUse"), server, tmp_path)  # control: the main agent's
    assert [body["subagent"] for body in server.asked()] == [True, True, False]


@pytest.mark.parametrize("tool", TOOLS)
def test_an_exempt_subagent_keeps_its_tools(tool: str, tmp_path: Path) -> None:
    """The server answers a subagent's verdict (exempt: pass); the hook acts on it."""

    class Exempting(FakeServer):
        def handle(self, request: Any) -> Any:
            body = json.loads(request.content) if request.content else {}
            self.verdict = WORKING if body.get("subagent") else ASLEEP
            return super().handle(request)

    server = Exempting()
    assert hook(tool, in_subagent(tool, "PreToolUse"), server, tmp_path) is None
    denied = hook(tool, event(tool, "PreToolUse"), server, tmp_path)
    assert denied is not None
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", ["UserPromptSubmit", "PreToolUse"])
def test_an_outage_passes_by_the_default_policy_and_says_so(
    tool: str, name: str, tmp_path: Path
) -> None:
    out = hook(tool, event(tool, name), FakeServer(down=True), tmp_path)
    assert out is not None
    assert "decision" not in out
    assert "hookSpecificOutput" not in out
    assert "curfew.test" in out["systemMessage"]
    assert "fail_open" in out["systemMessage"]
    assert "cfw_harness_token" not in out["systemMessage"]  # no secret said


@pytest.mark.parametrize("tool", TOOLS)
def test_an_outage_with_fail_closed_blocks_and_says_so(tool: str, tmp_path: Path) -> None:
    server = FakeServer(status=500)
    sent = event(tool, "UserPromptSubmit")
    out = hook(tool, sent, server, tmp_path, CURFEW_POLICY="fail_closed")
    assert out is not None
    assert out["decision"] == "block"
    assert "fail_closed" in out["reason"]
    assert "HTTP 500" in out["systemMessage"]


@pytest.mark.parametrize("tool", TOOLS)
def test_not_set_up_is_said_not_silent(tool: str, tmp_path: Path) -> None:
    env = environment(tmp_path)
    del env["CURFEW_TOKEN"]
    text = run(tool, json.dumps(event(tool, "UserPromptSubmit")), env)  # type: ignore[arg-type]
    out: dict[str, Any] = json.loads(text)
    jsonschema.validate(out, output_schema(tool, "UserPromptSubmit"))
    assert "curfew login" in out["systemMessage"]


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", ["Stop", "SubagentStop"])
def test_a_stop_asks_nothing_and_never_keeps_the_agent_going(
    tool: str, name: str, tmp_path: Path
) -> None:
    """A Stop's ``decision: block`` would make the agent go on working: asleep
    or not, a stop passes untouched, and asks nothing."""
    server = FakeServer(verdict=ASLEEP)
    assert hook(tool, event(tool, name), server, tmp_path) is None
    assert server.requests == []
    # Control: the same server is asked, and blocks, for the user's prompt.
    out = hook(tool, event(tool, "UserPromptSubmit"), server, tmp_path)
    assert out is not None
    assert out["decision"] == "block"
    assert len(server.requests) == 1


def test_an_unreadable_event_is_said(tmp_path: Path) -> None:
    out = json.loads(run("codex", "not json", environment(tmp_path)))
    assert "not JSON" in out["systemMessage"]


def test_the_command_prints_the_answer_and_exits_zero(tmp_path: Path) -> None:
    stdout = io.StringIO()
    code = main(
        ["hook", "claude-code"],
        env=environment(tmp_path),
        stdin=io.StringIO(json.dumps(event("claude-code", "UserPromptSubmit"))),
        stdout=stdout,
        transport=FakeServer(verdict=ASLEEP).transport,
    )
    assert code == 0
    assert json.loads(stdout.getvalue())["decision"] == "block"


def test_until_names_the_day_when_it_is_not_today(tmp_path: Path) -> None:
    later = {**ASLEEP, "valid_until": datetime(2026, 10, 2, 7, tzinfo=UTC).isoformat()}
    out = hook(
        "claude-code", event("claude-code", "UserPromptSubmit"), FakeServer(verdict=later), tmp_path
    )
    assert out is not None
    assert "until Fri 15:00" in out["reason"]


#: Asleep until 09:00 in Shanghai, where the user lives (the server's reason
#: says so): 01:00 on a machine in UTC (issue 42).
NINE_IN_SHANGHAI = {
    **ASLEEP,
    "timezone": "Asia/Shanghai",
    "valid_until": "2026-09-30T01:00:00+00:00",
    "reason": "2026-09-30 07:00 · lights out until 09:00",
}


def _until(reason: str) -> str:
    found = re.search(r"your AI is asleep until (?:\w{3} )?(\d\d:\d\d)\.", reason)
    assert found is not None, reason
    return found.group(1)


@pytest.fixture
def machine_in_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's own zone is UTC (``TZ=UTC``), as on a dev box or a CI runner."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", ["UserPromptSubmit", "PreToolUse"])
def test_until_is_the_users_hour_not_the_machines(
    tool: str, name: str, tmp_path: Path, machine_in_utc: None
) -> None:
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    until = datetime.combine(tomorrow, datetime.min.time(), UTC) + timedelta(hours=1)
    server = FakeServer(verdict={**NINE_IN_SHANGHAI, "valid_until": until.isoformat()})
    for _ in ("asked", "cached"):
        stdout = io.StringIO()
        main(
            ["hook", tool],
            env=environment(tmp_path),
            stdin=io.StringIO(json.dumps(event(tool, name))),
            stdout=stdout,
            transport=server.transport,
        )
        out = json.loads(stdout.getvalue())
        reason = out.get("reason") or out["hookSpecificOutput"]["permissionDecisionReason"]
        # One truth: the hour the hook says is the one in the server's reason.
        assert _until(reason) == "09:00"
        assert "until 09:00" in NINE_IN_SHANGHAI["reason"]
    assert len(server.asked()) == 1  # the second answer was the cache's


def test_an_older_server_without_the_zone_is_told_in_the_machines(tmp_path: Path) -> None:
    older = {key: value for key, value in NINE_IN_SHANGHAI.items() if key != "timezone"}
    text = run(
        "claude-code",
        json.dumps(event("claude-code", "UserPromptSubmit")),
        environment(tmp_path),
        transport=FakeServer(verdict=older).transport,
        now=datetime(2026, 9, 30, 0, 30, tzinfo=UTC),
        tz=UTC,
    )
    assert _until(json.loads(text)["reason"]) == "01:00"
