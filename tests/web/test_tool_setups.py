"""The tool setups are declared once (``curfew_core/web/integrations/tool_setups.py``) and
both the Integrations page and the manual derive from that declaration: the
page shows every tool's snippets filled in with the address it was asked on,
each with a copy button and readable without script; the manual's section is
exactly what the declaration writes."""

from __future__ import annotations

import gettext
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from curfew_cli import hooks
from django.conf import settings
from django.test import override_settings
from django.urls import reverse
from django.utils import translation
from django.utils.functional import Promise

from curfew_core.web.integrations import tool_setups
from tests.code_calls import keywords_of
from tests.web.conftest import PageClient

ROOT = Path(__file__).resolve().parents[2]
HOST = "curfew.example.test"
TOOLS = ("Claude Code", "Codex CLI", "OpenCode", "Cursor", "aider", "llm (the CLI)")
SDKS = ("OpenAI SDK (Python)", "Anthropic SDK (Python)", "LiteLLM")


def _integrations(page: PageClient, language: str = "en") -> str:
    with override_settings(ALLOWED_HOSTS=[HOST]):
        response = page.get("/integrations/", HTTP_HOST=HOST, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return str(response.content.decode())


def _code_blocks(text: str) -> dict[str, str]:
    """Each snippet's element id and its text, as a person copying it gets it."""
    found = re.findall(r'<code id="(setup-[^"]+)"[^>]*>(.*?)</code>', text, re.S)
    return {key: html.unescape(body) for key, body in found}


def test_every_tool_people_run_is_declared() -> None:
    names = {tool.name for tool in tool_setups.SETUPS}
    assert set(TOOLS) | set(SDKS) <= names


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_page_shows_every_snippet_with_this_servers_address(
    page: PageClient, language: str
) -> None:
    text = _integrations(page, language)
    blocks = _code_blocks(text)
    placeholder = "<你的网关密钥>" if language == "zh-hans" else "<your gateway key>"
    expected = {
        row["id"]: row["text"]
        for tool in tool_setups.rendered(base_url=f"http://{HOST}", token=placeholder)
        for row in tool["snippets"]  # type: ignore[attr-defined]
    }
    # Every declared snippet, filled in exactly as declared (the address it was
    # asked on, never 127.0.0.1 or a docs placeholder), and nothing else.
    assert blocks == expected
    assert all("{base_url}" not in body and "{token}" not in body for body in blocks.values())
    assert sum(f"http://{HOST}" in body for body in blocks.values()) >= len(tool_setups.SETUPS)
    assert "127.0.0.1:8000" not in "".join(blocks.values())
    for tool in tool_setups.SETUPS:
        assert f'id="setup-{tool.key}"' in text


def test_each_snippet_has_a_copy_button_for_its_own_text(page: PageClient) -> None:
    text = _integrations(page)
    blocks = _code_blocks(text)
    buttons = re.findall(r'<button[^>]*data-copy-text="#([^"]+)"[^>]*>', text)
    assert sorted(buttons) == sorted(blocks)
    for button in re.findall(r'<button[^>]*data-copy-text="#[^"]+"[^>]*>', text):
        # Hidden without script (the text is selectable by hand then), and named.
        assert "js-only" in button
        assert 'aria-label="Copy ' in button
    assert "curfew/snippets" in text  # the script that copies (served, no inline script)
    assert (ROOT / "static" / "curfew" / "snippets.js").is_file()


def test_a_gateway_key_made_just_now_is_filled_into_the_snippets(page: PageClient) -> None:
    response = page.post(reverse("settings-token-create"), {"name": "laptop", "kind": "api"})
    assert response.status_code == 201
    text = response.content.decode()
    [key] = re.findall(r'value="(cfw_[^"]+)"', text)
    blocks = _code_blocks(text)
    claude = blocks["setup-claude-code-env"]
    assert f"ANTHROPIC_AUTH_TOKEN={key}" in claude
    # The control: the page asked again shows the placeholder, never the key.
    later = _code_blocks(_integrations(page))
    assert key not in "".join(later.values())


def test_chinese_for_every_tool_setup_text() -> None:
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    with translation.override("en"):
        texts = [str(text) for tool in tool_setups.SETUPS for text in (tool.what, tool.helpers)]
        # And each snippet's place that is words, not a file's name ("Shell").
        texts += [
            str(snippet.where)
            for tool in tool_setups.SETUPS
            for snippet in tool.snippets
            if isinstance(snippet.where, Promise)
        ]
    missing = [text for text in texts if catalogue.gettext(text) == text]
    assert missing == []


def test_the_manual_section_is_written_from_the_declaration() -> None:
    manual = (ROOT / "docs" / "manual.md").read_text(encoding="utf-8")
    with translation.override("en"):
        section = tool_setups.markdown()
    start = manual.index(tool_setups.BEGIN)
    end = manual.index(tool_setups.END) + len(tool_setups.END)
    assert manual[start:end] == section, (
        "docs/manual.md is stale: "
        "python -m curfew_core.web.integrations.tool_setups --write docs/manual.md"
    )
    for tool in tool_setups.SETUPS:
        assert f"### {tool.name}" in section
        for snippet in tool.snippets:
            assert (
                snippet.render(base_url=tool_setups.DOCS_BASE_URL, token="<curfew API token>")
                in section
            )


@pytest.mark.parametrize(
    ("key", "tool"), [("claude-code-hooks", "claude-code"), ("codex-hooks", "codex")]
)
def test_the_hooks_rows_log_in_to_this_server_and_run_the_command(
    page: PageClient, key: str, tool: str
) -> None:
    """A subscription login cannot use the proxy: its row sets up the hooks
    (issue 42), with this server's address, and the events the command answers."""
    blocks = _code_blocks(_integrations(page))
    assert f"curfew login http://{HOST}" in blocks[f"setup-{key}-login"]
    [settings_key] = [
        name for name in blocks if name.startswith(f"setup-{key}-") and "login" not in name
    ]
    declared = json.loads(blocks[settings_key])
    commands = {
        event: [handler["command"] for group in groups for handler in group["hooks"]]
        for event, groups in declared["hooks"].items()
    }
    assert set(commands) == set(hooks.ASKED_EVENTS)
    assert all(found == [f"curfew hook {tool}"] for found in commands.values())
    # Only Claude Code has a status line setting.
    assert ("statusLine" in declared) is (tool == "claude-code")


def test_litellm_declares_a_gemini_model_and_the_google_genai_client_for_it() -> None:
    """Google's SDK asks LiteLLM's proxy, not Curfew: a ``gemini/`` model in the
    proxy's config, and the SDK at the proxy's address on Gemini's v1beta routes
    (its default path meets LiteLLM's ``GET /v1/models/{model}``, a 405) with a
    LiteLLM key. ``make clients`` runs this very setup (its google-genai row)."""
    litellm = tool_setups.setup("litellm")
    config = yaml.safe_load(
        litellm.snippet("config").render(base_url=f"http://{HOST}", token="cfw_x")
    )
    [gemini] = [
        entry
        for entry in config["model_list"]
        if entry["litellm_params"]["model"].startswith("gemini/")
    ]
    assert gemini == {
        "model_name": tool_setups.GEMINI_MODEL,
        "litellm_params": {
            "model": f"gemini/{tool_setups.GEMINI_MODEL}",
            "api_key": "os.environ/GEMINI_API_KEY",
        },
    }
    code = litellm.snippet("genai").render(base_url=f"http://{HOST}", token="cfw_x")
    assert keywords_of(code, "genai.Client") == {
        "api_key": repr(tool_setups.LITELLM_KEY),
        "http_options": "proxy",
    }
    assert "\nproxy = types.HttpOptions(" in code
    assert keywords_of(code, "types.HttpOptions") == {
        "base_url": repr(tool_setups.LITELLM_PROXY_URL),
        "api_version": "'v1beta'",
    }
    asked = keywords_of(code, "client.models.generate_content")
    assert asked["model"] == repr(gemini["model_name"])
    # Not Curfew's address or key: the proxy's callback has those.
    assert HOST not in code
    assert "cfw_x" not in code
    assert 'api_version "v1beta"' in str(litellm.what)


def test_the_google_genai_client_asks_where_litellms_proxy_listens() -> None:
    """``litellm --config config.yaml`` (the declared shell line, no --port)
    listens on its default port: the one the snippet's address names."""
    assert "--port" not in tool_setups.LITELLM_ENV
    asked = (
        "from litellm.proxy.proxy_cli import run_server; "
        "print(next(p.default for p in run_server.params if p.name == 'port'))"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", asked], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert urlsplit(tool_setups.LITELLM_PROXY_URL).port == int(done.stdout.split()[-1])
