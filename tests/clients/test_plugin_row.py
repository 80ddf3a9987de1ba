"""``claude-code-plugin``: Claude Code set up as the manual's plugin section
says, word for word, with the checkout as its marketplace."""

from __future__ import annotations

import json

from curfew_testkit.server import ROOT
from tests.clients import harness_hooks


def test_the_row_installs_the_plugin_as_the_manual_says() -> None:
    manual = (ROOT / "docs" / "manual.md").read_text(encoding="utf-8")
    for words in harness_hooks.PLUGIN_INSTALL:
        line = " ".join(["claude", *words]).replace("{checkout}", "/path/to/curfew")
        assert f"\n{line}\n" in manual, line


def test_the_checkout_is_a_marketplace_holding_the_plugin_installed() -> None:
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    name, _, marketplace = harness_hooks.PLUGIN_INSTALL[1][-1].partition("@")
    assert market["name"] == marketplace
    (plugin,) = [entry for entry in market["plugins"] if entry["name"] == name]
    hooks = json.loads((ROOT / plugin["source"] / "hooks" / "hooks.json").read_text())
    commands = {
        hook["command"] for groups in hooks["hooks"].values() for g in groups for hook in g["hooks"]
    }
    assert commands == {"curfew hook claude-code"}
