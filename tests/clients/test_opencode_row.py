"""``make clients``'s OpenCode plugin row (``harness_hooks``): set up as the
Integrations page's ``opencode-plugin`` row says, and read as OpenCode writes."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_upstream import Recorded
from curfew_testkit.server import ROOT
from tests.clients import harness_hooks


def test_the_rows_shell_lines_put_the_checkout_s_plugin_where_opencode_loads_it(
    tmp_path: Path,
) -> None:
    snippet = tool_setups.setup("opencode-plugin").snippet("plugin")
    text = snippet.render(base_url="http://h", token="t")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith(("mkdir -p ~/", "cp ")):
            harness_hooks._copy_line(shlex.split(line), tmp_path)
    copied = tmp_path / ".config" / "opencode" / "plugins" / "curfew.js"
    source = ROOT / "integrations" / "opencode" / "curfew.js"
    assert copied.read_bytes() == source.read_bytes()
    assert "opencode-plugin" in harness_hooks.HOOK_TOOLS


def _call(system: str) -> Recorded:
    body = {"model": "m", "messages": [{"role": "system", "content": system}]}
    return Recorded("POST", "/v1/chat/completions", {}, json.dumps(body).encode())


def test_opencode_s_title_calls_are_told_from_the_turn() -> None:
    assert harness_hooks._opencode_title(_call("You are a title generator. You output ONLY"))
    assert not harness_hooks._opencode_title(_call("You are opencode, an interactive CLI tool"))


def test_colours_are_taken_out_of_what_the_user_saw() -> None:
    said = "\x1b[91m\x1b[1mError: \x1b[0mCurfew: your AI is asleep"
    assert harness_hooks._plain(said) == "Error: Curfew: your AI is asleep"
