"""``make clients``'s team-key rows: each tool's declared setup, with a team key
as its key and the member named where docs/manual.md ("Team keys in tools")
says that tool names it. Pure text in, text out, so the unit tests
(``tests/clients/test_team.py``) hold each change to the real rendered setups.

- Claude Code: ``ANTHROPIC_CUSTOM_HEADERS="X-Curfew-User: <member>"``;
- Codex CLI: the provider's ``http_headers``;
- OpenCode: every provider's ``options.headers`` (the helpers' too);
- aider: an entry for the main model with ``extra_headers``, and the header on
  the weak model's entry too;
- llm: ``headers`` on the model's entry;
- the OpenAI and Anthropic SDKs: the client's ``default_headers``;
- the LiteLLM library: ``extra_headers`` on the call;
- the LiteLLM proxy: ``CURFEW_TOKEN`` is the team key, and its client sends
  ``X-Curfew-User`` (``LITELLM_CLIENT``'s fourth argument).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import yaml

MEMBER_HEADER = "X-Curfew-User"


def member_env(tool: str, member: str) -> dict[str, str]:
    """The environment a tool names its member with (only Claude Code's)."""
    if tool == "claude-code":
        return {"ANTHROPIC_CUSTOM_HEADERS": f"{MEMBER_HEADER}: {member}"}
    return {}


def _codex(text: str, member: str) -> str:
    # The provider's table is the file's last: its keys go at the end.
    if "[model_providers.curfew]" not in text:
        raise ValueError("the Codex setup has no [model_providers.curfew] table")
    return text.rstrip("\n") + f'\nhttp_headers = {{ "{MEMBER_HEADER}" = {json.dumps(member)} }}\n'


def _opencode(text: str, member: str) -> str:
    config: dict[str, Any] = json.loads(text)
    for provider in config["provider"].values():
        options = provider.setdefault("options", {})
        options.setdefault("headers", {})[MEMBER_HEADER] = member
    return json.dumps(config, indent=2)


def _aider(text: str, member: str, model: str) -> str:
    entries: list[dict[str, Any]] = yaml.safe_load(text)
    for entry in entries:
        entry.setdefault("extra_params", {}).setdefault("extra_headers", {})[MEMBER_HEADER] = member
    main = {"name": f"openai/{model}", "extra_params": {"extra_headers": {MEMBER_HEADER: member}}}
    return yaml.safe_dump([main, *entries], sort_keys=False)


def _llm(text: str, member: str) -> str:
    entries: list[dict[str, Any]] = yaml.safe_load(text)
    for entry in entries:
        entry.setdefault("headers", {})[MEMBER_HEADER] = member
    return yaml.safe_dump(entries, sort_keys=False)


def _once(text: str, old: str, new: str, what: str) -> str:
    if old not in text:
        raise ValueError(f"the {what} setup has no {old.strip()!r}")
    return text.replace(old, new, 1)


def _openai_sdk(text: str, member: str) -> str:
    header = json.dumps({MEMBER_HEADER: member})[1:-1]
    return _once(text, "default_headers={", "default_headers={" + header + ", ", "OpenAI SDK")


def _anthropic_sdk(text: str, member: str) -> str:
    headers = json.dumps({MEMBER_HEADER: member})
    return _once(
        text,
        "anthropic.Anthropic(",
        f"anthropic.Anthropic(default_headers={headers}, ",
        "Anthropic SDK",
    )


def _litellm_library(text: str, member: str) -> str:
    headers = json.dumps({MEMBER_HEADER: member})
    found = re.search(r"^(\s*)messages=", text, re.MULTILINE)
    if found is None:
        raise ValueError("the LiteLLM library setup has no messages= line")
    indent = found.group(1)
    return text[: found.start()] + f"{indent}extra_headers={headers},\n" + text[found.start() :]


#: (tool, snippet) to the change that names the member in it.
CHANGES: dict[tuple[str, str], Callable[[str, str, str], str]] = {
    ("codex", "config"): lambda text, member, model: _codex(text, member),
    ("opencode", "config"): lambda text, member, model: _opencode(text, member),
    ("aider", "settings"): _aider,
    ("llm", "models"): lambda text, member, model: _llm(text, member),
    ("openai-sdk", "code"): lambda text, member, model: _openai_sdk(text, member),
    ("anthropic-sdk", "code"): lambda text, member, model: _anthropic_sdk(text, member),
    ("litellm", "library"): lambda text, member, model: _litellm_library(text, member),
}


def with_member(setup: str, snippet: str, text: str, member: str, model: str) -> str:
    """The rendered ``snippet`` of ``setup`` as it names ``member`` (unchanged
    when the tool names its member elsewhere: the environment, the client)."""
    change = CHANGES.get((setup, snippet))
    return text if change is None else change(text, member, model)
