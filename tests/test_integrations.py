"""The packaged hooks (integrations/): Claude Code's plugin and its
marketplace in this checkout, Codex's hooks.json, all running the ``curfew``
command the client installs, on the events it answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from curfew_cli import hooks

from curfew_core.web.integrations import tool_setups

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "integrations" / "claude-code"
HOOK_FILES = {
    "claude-code": PLUGIN / "hooks" / "hooks.json",
    "codex": ROOT / "integrations" / "codex" / "hooks.json",
}
#: The events a hook file must register: without them a promise is not kept.
NEEDED = {"UserPromptSubmit", "PreToolUse", "SessionStart"}


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_checkout_is_a_marketplace_offering_the_plugin() -> None:
    marketplace = _json(ROOT / ".claude-plugin" / "marketplace.json")
    assert marketplace["owner"]["name"]
    (entry,) = marketplace["plugins"]
    # Relative sources resolve from the marketplace root (the folder holding .claude-plugin/).
    source = (ROOT / entry["source"]).resolve()
    assert source == PLUGIN
    manifest = _json(source / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == entry["name"]
    assert manifest["version"] == entry["version"]


def _commands(path: Path) -> dict[str, list[str]]:
    declared = _json(path)["hooks"]
    return {
        event: [hook["command"] for group in groups for hook in group["hooks"]]
        for event, groups in declared.items()
    }


@pytest.mark.parametrize("tool", sorted(HOOK_FILES))
def test_each_hook_file_runs_the_command_on_the_events_it_answers(tool: str) -> None:
    commands = _commands(HOOK_FILES[tool])
    assert set(commands) >= NEEDED
    # Every event registered is one the command asks a verdict for (none run for nothing).
    assert set(commands) <= hooks.ASKED_EVENTS
    assert {command for found in commands.values() for command in found} == {f"curfew hook {tool}"}
    assert tool in hooks.TOOLS


@pytest.mark.parametrize("tool", sorted(HOOK_FILES))
def test_each_hook_file_is_what_the_integrations_page_shows(tool: str) -> None:
    """Declared once (``tool_setups.hooks_json``): the file in the checkout
    and the page's snippet register the same hooks."""
    shown = json.loads(tool_setups.hooks_json(tool))
    assert _json(HOOK_FILES[tool])["hooks"] == shown["hooks"]
    assert set(shown["hooks"]) == hooks.ASKED_EVENTS


def test_the_command_is_the_client_s_script() -> None:
    """Declared once: the client installs ``scripts/curfew`` (no entry point,
    whose launcher imports ``re``), and that script runs ``curfew_cli.main``."""
    project = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text(encoding="utf-8"))
    assert "scripts" not in project["project"]
    assert project["tool"]["setuptools"]["script-files"] == ["scripts/curfew"]
    script = (ROOT / "client" / "scripts" / "curfew").read_text(encoding="utf-8")
    assert script.startswith("#!python\n")
    assert "from curfew_cli.main import main" in script


def test_the_installed_command_answers_a_hook_and_says_an_outage() -> None:
    """The console script itself (installed with ``pip install -e ./client``)."""
    script = shutil.which("curfew", path=str(Path(sys.executable).parent))
    assert script is not None, "reinstall the client: pip install -e ./client"
    sent = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi"}
    env = {**os.environ, "CURFEW_URL": "http://127.0.0.1:9", "CURFEW_TOKEN": "cfw_x"}
    done = subprocess.run(
        [script, "hook", "claude-code"],
        input=json.dumps(sent),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 0
    said = json.loads(done.stdout)
    assert "fail_open" in said["systemMessage"]
    assert "decision" not in said


def test_the_manual_gives_each_tool_its_copy_paste() -> None:
    manual = (ROOT / "docs" / "manual.md").read_text(encoding="utf-8")
    start = manual.index("## Curfew inside the agent's harness")
    section = manual[start : manual.index("\n## ", start + 1)]
    for needed in (
        "claude plugin marketplace add",
        "claude plugin install curfew@curfew",
        "integrations/codex/hooks.json",
        "curfew login",
        '"command": "curfew status"',
        "| the budget clamped (`max_tokens`) | **no**",
    ):
        assert needed in section, needed
