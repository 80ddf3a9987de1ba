"""How each tool people run is pointed at Curfew, declared once.

Each ``ToolSetup`` names the tool, what to set, the snippets to paste (templates
with ``{base_url}``, ``{token}`` and ``{model}``), and how its helper calls
(titles, summaries, compaction, commit messages) are labelled with
``X-Curfew-Purpose`` so the schedule's exempt purposes apply to them, or why
they cannot be. Everything else derives from this table: the Integrations page
renders it with the server's own address (``curfew/integrations.html``), the
manual's "Setting up your tools" section is written from it (``markdown``;
``tests/web/test_tool_setups.py`` fails when the two differ), and ``make
clients`` (``tests/clients/run.py``) runs the real tools with these very
snippets, filled in with a served Curfew's address and a real key::

    python -m curfew_core.web.integrations.tool_setups --write docs/manual.md

Why headers and not a path segment such as ``/purpose/title/v1``: every tool
here that can send a helper call to a second model (OpenCode's ``small_model``
and helper agents, aider's ``--weak-model``, a second SDK client) can also give
that model its own headers, and the tools that cannot (Claude Code, Codex CLI,
Cursor) have one base URL for every call, so a path segment would not label
their helper calls either.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

#: What the docs show for the server's address and the model.
DOCS_BASE_URL = "http://127.0.0.1:8000"
MODEL = "deepseek-chat"
#: The manual's section, between these lines, is written from ``markdown()``.
BEGIN = (
    "<!-- tool setups: written by "
    "`python -m curfew_core.web.integrations.tool_setups --write docs/manual.md` -->"
)
END = "<!-- end of tool setups -->"


@dataclass(frozen=True)
class Snippet:
    """One thing to paste: a file's text or lines for a shell."""

    #: Unique within its tool (the page's element ids).
    key: str
    #: Where it goes: a file's name, "Shell", a settings screen.
    where: str | Promise
    #: For the page's and the manual's code blocks.
    language: str
    #: The text, with ``{base_url}``, ``{token}`` and ``{model}`` to fill in.
    template: str
    #: The file ``make clients`` writes it to (relative to the tool's home, ``~``,
    #: or its working folder, ``./``); ``None`` for shell lines and code.
    path: str | None = None

    def render(self, *, base_url: str, token: str, model: str = MODEL) -> str:
        # str.replace, not str.format: the JSON and TOML snippets have braces of their own.
        return (
            self.template.replace("{base_url}", base_url)
            .replace("{token}", token)
            .replace("{model}", model)
        )

    def exports(self, *, base_url: str, token: str, model: str = MODEL) -> dict[str, str]:
        """The ``export NAME=value`` lines of a shell snippet, as a mapping."""
        found: dict[str, str] = {}
        for line in self.render(base_url=base_url, token=token, model=model).splitlines():
            match = re.match(r"export ([A-Z_][A-Z0-9_]*)=(\S*)", line)
            if match:
                found[match.group(1)] = match.group(2).strip("'\"")
        return found


@dataclass(frozen=True)
class ToolSetup:
    key: str
    #: The tool's name; with a qualifier (how it is set up), said in the
    #: reader's language (the product's name is kept).
    name: str | Promise
    #: One paragraph: what to set.
    what: Promise
    snippets: tuple[Snippet, ...]
    #: How its helper calls are labelled, or why they cannot be.
    helpers: Promise
    #: Whether its helper calls reach Curfew labelled with a purpose.
    labelled: bool

    def snippet(self, key: str) -> Snippet:
        return next(snippet for snippet in self.snippets if snippet.key == key)


CLAUDE_ENV = """\
export ANTHROPIC_BASE_URL={base_url}
export ANTHROPIC_AUTH_TOKEN={token}
export ANTHROPIC_MODEL={model}
export ANTHROPIC_DEFAULT_HAIKU_MODEL={model}
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
claude"""

#: A Claude Pro/Max login through the proxy: Claude Code keeps its own
#: credential (``Authorization``), the gateway key rides in ``X-Curfew-Token``.
CLAUDE_LOGIN_ENV = """\
export ANTHROPIC_BASE_URL={base_url}
export ANTHROPIC_CUSTOM_HEADERS="X-Curfew-Token: {token}"
unset ANTHROPIC_AUTH_TOKEN ANTHROPIC_API_KEY
claude    # signed in with /login (Claude Pro or Max)"""

#: A ChatGPT login through the proxy: the provider uses Codex's own login
#: (``requires_openai_auth``) and sends the gateway key as ``X-Curfew-Token``.
CODEX_LOGIN_CONFIG = """\
model_provider = "curfew"

[model_providers.curfew]
name = "Curfew"
base_url = "{base_url}/v1"
wire_api = "responses"
requires_openai_auth = true
env_http_headers = { "X-Curfew-Token" = "CURFEW_TOKEN" }"""

CODEX_CONFIG = """\
model = "{model}"
model_provider = "curfew"

[model_providers.curfew]
name = "Curfew"
base_url = "{base_url}/v1"
env_key = "CURFEW_TOKEN"
wire_api = "responses\""""

OPENCODE_CONFIG = """\
{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "curfew": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Curfew",
      "options": {"baseURL": "{base_url}/v1", "apiKey": "{env:CURFEW_TOKEN}"},
      "models": {"{model}": {}}
    },
    "curfew-title": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Curfew (titles)",
      "options": {
        "baseURL": "{base_url}/v1",
        "apiKey": "{env:CURFEW_TOKEN}",
        "headers": {"X-Curfew-Purpose": "title"}
      },
      "models": {"{model}": {}}
    },
    "curfew-compaction": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Curfew (compaction)",
      "options": {
        "baseURL": "{base_url}/v1",
        "apiKey": "{env:CURFEW_TOKEN}",
        "headers": {"X-Curfew-Purpose": "compaction"}
      },
      "models": {"{model}": {}}
    },
    "curfew-summary": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Curfew (summaries)",
      "options": {
        "baseURL": "{base_url}/v1",
        "apiKey": "{env:CURFEW_TOKEN}",
        "headers": {"X-Curfew-Purpose": "summary"}
      },
      "models": {"{model}": {}}
    }
  },
  "model": "curfew/{model}",
  "small_model": "curfew-title/{model}",
  "agent": {
    "title": {"model": "curfew-title/{model}"},
    "compaction": {"model": "curfew-compaction/{model}"},
    "summary": {"model": "curfew-summary/{model}"}
  }
}"""

AIDER_SETTINGS = """\
- name: openai/{model}-helper
  extra_params:
    model: openai/{model}
    extra_headers:
      X-Curfew-Purpose: summary"""

AIDER_ENV = """\
export OPENAI_API_BASE={base_url}/v1
export OPENAI_API_KEY={token}
aider --model openai/{model} --weak-model openai/{model}-helper"""

LLM_MODELS = """\
- model_id: curfew
  model_name: {model}
  api_base: "{base_url}/v1"
  api_key_name: curfew"""

LLM_ENV = """\
llm keys set curfew --value {token}
llm -m curfew "hello\""""

OPENAI_SDK = """\
from openai import OpenAI

client = OpenAI(
    base_url="{base_url}/v1",
    api_key="{token}",
    default_headers={"X-Curfew-Session": "my-session"},
)
reply = client.chat.completions.create(
    model="{model}", messages=[{"role": "user", "content": "hi"}]
)
# A helper call (a title, a summary): exempt when its purpose is listed.
titles = client.with_options(default_headers={"X-Curfew-Purpose": "title"})"""

ANTHROPIC_SDK = """\
import anthropic

client = anthropic.Anthropic(base_url="{base_url}", api_key="{token}")
message = client.messages.create(
    model="{model}", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
)
# A helper call (a title, a summary): exempt when its purpose is listed.
titles = client.with_options(default_headers={"X-Curfew-Purpose": "title"})"""

#: A Gemini model behind LiteLLM's proxy: its ``gemini/`` entry in the proxy's
#: config, and the model the google-genai snippet asks for.
GEMINI_MODEL = "gemini-2.5-flash"
#: Where ``litellm --config`` listens unless told otherwise, and a key of its
#: own: the proxy's clients (the google-genai SDK) use these, not Curfew's
#: address and gateway key (the proxy's callback has those).
LITELLM_PROXY_URL = "http://localhost:4000"
LITELLM_KEY = "sk-your-litellm-key"

LITELLM_CONFIG = f"""\
model_list:
  - model_name: {{model}}
    litellm_params:
      model: openai/{{model}}
      api_base: https://api.deepseek.com/v1
      api_key: os.environ/DEEPSEEK_API_KEY
  - model_name: {GEMINI_MODEL}
    litellm_params:
      model: gemini/{GEMINI_MODEL}
      api_key: os.environ/GEMINI_API_KEY
litellm_settings:
  callbacks: ["curfew_client.litellm_hook.curfew"]"""

LITELLM_ENV = """\
pip install './client[litellm]'
export CURFEW_URL={base_url}
export CURFEW_TOKEN={token}
export LITELLM_MASTER_KEY=sk-your-litellm-admin-key
export LITELLM_LOCAL_MODEL_COST_MAP=True
litellm --config config.yaml"""

LITELLM_LIBRARY = """\
import litellm

reply = litellm.completion(
    model="openai/{model}",
    api_base="{base_url}/v1",
    api_key="{token}",
    messages=[{"role": "user", "content": "hi"}],
    # A helper call: extra_headers={"X-Curfew-Purpose": "title"}
)"""

#: Google's google-genai SDK at LiteLLM's proxy: LiteLLM serves Gemini's routes
#: at ``/v1beta/models/…``, so ``api_version="v1beta"`` (with a base URL of its
#: own the SDK asks ``/v1/models/…``, which LiteLLM has only as ``GET
#: /v1/models/{model}``: a 405); LiteLLM's key as the API key.
GENAI_SDK = f"""\
from google import genai
from google.genai import types

# LiteLLM's proxy, not Curfew: its address and key, Gemini's v1beta routes.
proxy = types.HttpOptions(
    base_url="{LITELLM_PROXY_URL}",
    api_version="v1beta",
)
client = genai.Client(api_key="{LITELLM_KEY}", http_options=proxy)
config = types.GenerateContentConfig(
    system_instruction="Answer briefly.",
    max_output_tokens=4096,
)
reply = client.models.generate_content(
    model="{GEMINI_MODEL}",
    contents="hi",
    config=config,
)
# Streamed the same way: client.models.generate_content_stream(...)
# A helper call: config=types.GenerateContentConfig(
#     http_options=types.HttpOptions(headers={{"X-Curfew-Purpose": "title"}}))"""

CURSOR_SETTINGS = """\
Cursor Settings → Models → API Keys
  OpenAI API Key: {token}
  Override OpenAI Base URL: on, {base_url}/v1
  Add model: {model}"""

#: The hook events the ``curfew`` command answers (``curfew_cli.hooks``), registered
#: for each tool (``integrations/`` holds the same files; ``tests/test_integrations.py``).
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "SubagentStart")


def hooks_json(tool: str, *, status_line: bool = False) -> str:
    """The ``hooks`` settings that run ``curfew hook <tool>`` on each of
    ``HOOK_EVENTS`` (Claude Code's settings.json, Codex's hooks.json), one
    event a line; with ``status_line``, Claude Code's ``statusLine`` too."""
    handler = {"hooks": [{"type": "command", "command": f"curfew hook {tool}", "timeout": 5}]}
    events = ",\n".join(f'    "{event}": [{json.dumps(handler)}]' for event in HOOK_EVENTS)
    tail = (
        ',\n  "statusLine": {"type": "command", "command": "curfew status"}' if status_line else ""
    )
    return '{\n  "hooks": {\n' + events + "\n  }" + tail + "\n}"


#: The ``curfew`` command (the client's console script) and its login: the key
#: is asked for, never put on the command line.
HOOKS_LOGIN = """\
pip install ./client    # in a Curfew checkout: the curfew command
curfew login {base_url}    # paste your gateway key when asked"""

#: The OpenCode plugin (``integrations/opencode``), copied where OpenCode loads plugins.
OPENCODE_PLUGIN = """\
mkdir -p ~/.config/opencode/plugins
cp integrations/opencode/curfew.js ~/.config/opencode/plugins/    # in a Curfew checkout
opencode"""

SHELL = _("Shell")


def _hooks_steps(
    key: str, path: str, tool: str, *, status_line: bool = False
) -> tuple[Snippet, ...]:
    """A hooks setup's two steps, the same for every tool: the ``curfew``
    command and its login, then the tool's hooks file at ``path``."""
    return (
        Snippet("login", SHELL, "sh", HOOKS_LOGIN),
        Snippet(key, path, "json", hooks_json(tool, status_line=status_line), path=path),
    )


_CODEX_PATH = "~/.codex/config.toml"


def _codex_steps(config: str, run: str) -> tuple[Snippet, ...]:
    """A Codex provider's two steps, the same for its key and its login: the
    provider in ``~/.codex/config.toml``, then the shell line that runs Codex
    (``run``) with the gateway key in the variable the provider names."""
    return (
        Snippet("config", _CODEX_PATH, "toml", config, path=_CODEX_PATH),
        Snippet("env", SHELL, "sh", f"export CURFEW_TOKEN={{token}}\n{run}"),
    )


#: How Claude Code's helper calls are told apart (``curfew_core.proxy.helper_calls``).
CLAUDE_HELPERS = _(
    "Recognised: Claude Code sends every call to one base URL with one set of headers, so "
    "its helper calls cannot be labelled; Curfew recognises its session titles, recaps and "
    "compaction by their instructions (from its claude-cli user agent) and gives them that "
    "purpose, so with the default exempt purposes they pass in every state."
)
CODEX_HELPERS = _(
    "Not labelled: Codex sends its compaction and every other call through the one "
    "provider of the session, whose headers (http_headers) go on all of them."
)

SETUPS: tuple[ToolSetup, ...] = (
    ToolSetup(
        "claude-code",
        "Claude Code",
        _(
            "Anthropic's protocol: the server's root as ANTHROPIC_BASE_URL (Claude Code adds "
            "/v1/messages), a gateway key as ANTHROPIC_AUTH_TOKEN, and model names your "
            "provider knows for its main and its small, fast calls."
        ),
        (Snippet("env", SHELL, "sh", CLAUDE_ENV),),
        CLAUDE_HELPERS,
        labelled=True,
    ),
    ToolSetup(
        "codex",
        "Codex CLI",
        _(
            "A provider of its own in ~/.codex/config.toml, on the Responses API, with the "
            "gateway key in the variable it names."
        ),
        _codex_steps(CODEX_CONFIG, "codex"),
        CODEX_HELPERS,
        labelled=False,
    ),
    ToolSetup(
        "claude-code-hooks",
        _("Claude Code (hooks, subscription login)"),
        _(
            "With a subscription login (Claude Pro or Max) no proxy can stand in between: "
            "Curfew's hooks answer each prompt and tool call instead, through the curfew "
            "command installed with the client. Off duty or asleep a prompt is blocked, sleepy "
            "the tired persona is added, tools are denied when the verdict says so; the budget "
            "is not clamped (only the proxy can). The same hooks are a plugin in a Curfew "
            "checkout (integrations/claude-code)."
        ),
        _hooks_steps("settings", "~/.claude/settings.json", "claude-code", status_line=True),
        _(
            "Not labelled: Claude Code's own helper calls (titles, summaries) make no hook "
            "event, so hooks neither hold them back nor exempt them. A subagent's events ask as "
            "a subagent, so exempting subagents holds."
        ),
        labelled=False,
    ),
    ToolSetup(
        "codex-hooks",
        _("Codex CLI (hooks, ChatGPT login)"),
        _(
            "With a ChatGPT login, the same hooks in ~/.codex/hooks.json, through the curfew "
            "command installed with the client: off duty or asleep a prompt is blocked, sleepy "
            "the tired persona is added, tools are denied when the verdict says so; only the "
            "proxy clamps the budget."
        ),
        _hooks_steps("hooks", "~/.codex/hooks.json", "codex"),
        _(
            "Not labelled: Codex's compaction makes no hook event, so hooks neither hold it back "
            "nor exempt it. A subagent's events ask as a subagent, so exempting subagents holds."
        ),
        labelled=False,
    ),
    ToolSetup(
        "claude-code-login",
        _("Claude Code (subscription login, through the proxy)"),
        _(
            "Where this server lets callers bring their own credential "
            "(CURFEW_PROXY_CALLER_CREDENTIALS), a Claude Pro or Max login goes through the "
            "proxy too, and the budget is clamped: the server's root as ANTHROPIC_BASE_URL, "
            "the gateway key in the X-Curfew-Token header, and no ANTHROPIC_AUTH_TOKEN or API "
            "key, so Claude Code sends its own login, which Curfew passes on to the upstream "
            "and never logs or stores. The server's Anthropic upstream must be Anthropic's "
            "own API. Where it does not, the call is refused with a 403 that says so."
        ),
        (Snippet("env", SHELL, "sh", CLAUDE_LOGIN_ENV),),
        CLAUDE_HELPERS,
        labelled=True,
    ),
    ToolSetup(
        "codex-login",
        _("Codex CLI (ChatGPT login, through the proxy)"),
        _(
            "Where this server lets callers bring their own credential "
            "(CURFEW_PROXY_CALLER_CREDENTIALS), a ChatGPT login goes through the proxy too: a "
            "provider in ~/.codex/config.toml that uses Codex's own login "
            "(requires_openai_auth) and sends the gateway key as X-Curfew-Token. Curfew passes "
            "the login on to the upstream and never logs or stores it; the server's OpenAI "
            "upstream must be the one that login is for (ChatGPT's Codex backend)."
        ),
        _codex_steps(CODEX_LOGIN_CONFIG, "codex    # signed in with codex login"),
        CODEX_HELPERS,
        labelled=False,
    ),
    ToolSetup(
        "opencode",
        "OpenCode",
        _(
            "An OpenAI-compatible provider in opencode.json (in the project, or "
            "~/.config/opencode/opencode.json), plus one provider per helper purpose that "
            "adds X-Curfew-Purpose: OpenCode's small_model and its title, compaction and "
            "summary agents use them."
        ),
        (
            Snippet("config", "opencode.json", "json", OPENCODE_CONFIG, path="./opencode.json"),
            Snippet("env", SHELL, "sh", "export CURFEW_TOKEN={token}\nopencode"),
        ),
        _(
            "Labelled: session titles go through curfew-title (X-Curfew-Purpose: title), "
            "compaction and summaries through their own providers, so with the default exempt "
            "purposes they pass in every state instead of being titled with the curfew's reply."
        ),
        labelled=True,
    ),
    ToolSetup(
        "opencode-plugin",
        _("OpenCode (plugin, its own login)"),
        _(
            "With OpenCode signed in to a provider of its own (a subscription, or your own key), "
            "a plugin asks Curfew before each model call, through the login the curfew command "
            "stores: off duty or asleep the call is stopped with the reason, sleepy the budget "
            "is clamped and the tired persona added, tools are stopped when the verdict denies "
            "them. The plugin is one file in a Curfew checkout (integrations/opencode/curfew.js)."
        ),
        (
            Snippet("login", SHELL, "sh", HOOKS_LOGIN),
            Snippet("plugin", SHELL, "sh", OPENCODE_PLUGIN),
        ),
        _(
            "Labelled: OpenCode's title, summary and compaction agents ask with that purpose, "
            "so with the default exempt purposes they pass in every state. A subagent's session "
            "asks as a subagent, so exempting subagents holds."
        ),
        labelled=True,
    ),
    ToolSetup(
        "aider",
        "aider",
        _(
            "OpenAI's protocol through OPENAI_API_BASE and OPENAI_API_KEY. Its weak model, "
            "which writes commit messages and summarises the chat history, is a name of its "
            "own in .aider.model.settings.yml that sends the same model with X-Curfew-Purpose."
        ),
        (
            Snippet(
                "settings",
                ".aider.model.settings.yml",
                "yaml",
                AIDER_SETTINGS,
                path="./.aider.model.settings.yml",
            ),
            Snippet("env", SHELL, "sh", AIDER_ENV),
        ),
        _(
            "Labelled: the weak model's calls (commit messages, chat summaries) carry "
            "X-Curfew-Purpose: summary, exempt by default."
        ),
        labelled=True,
    ),
    ToolSetup(
        "llm",
        _("llm (the CLI)"),
        _(
            "A model of its own in extra-openai-models.yaml, in llm's own folder (the one "
            "that holds `llm logs path`), with its key stored by `llm keys set`."
        ),
        (
            Snippet(
                "models",
                "extra-openai-models.yaml",
                "yaml",
                LLM_MODELS,
                path="~/.config/io.datasette.llm/extra-openai-models.yaml",
            ),
            Snippet("env", SHELL, "sh", LLM_ENV),
        ),
        _(
            "Nothing to label: llm makes no helper calls of its own. A second model entry with "
            'headers: {"X-Curfew-Purpose": "title"} labels a script\'s own helper calls.'
        ),
        labelled=False,
    ),
    ToolSetup(
        "cursor",
        "Cursor",
        _(
            "In Cursor's settings, your own OpenAI key and base URL. Cursor calls that URL from "
            "its own servers, so it must be an address reachable from the internet, not "
            "127.0.0.1."
        ),
        (Snippet("settings", _("Settings screen"), "text", CURSOR_SETTINGS),),
        _(
            "Not labelled: one base URL for every call, and its tab completions and other "
            "helpers run on Cursor's own models, not through your key."
        ),
        labelled=False,
    ),
    ToolSetup(
        "openai-sdk",
        "OpenAI SDK (Python)",
        _("The /v1 address as base_url and a gateway key as api_key."),
        (Snippet("code", "Python", "python", OPENAI_SDK),),
        _("Labelled by you: a client with X-Curfew-Purpose for helper calls."),
        labelled=True,
    ),
    ToolSetup(
        "anthropic-sdk",
        "Anthropic SDK (Python)",
        _(
            "The server's root as base_url (the SDK adds /v1/messages) and a gateway key as "
            "api_key."
        ),
        (Snippet("code", "Python", "python", ANTHROPIC_SDK),),
        _("Labelled by you: a client with X-Curfew-Purpose for helper calls."),
        labelled=True,
    ),
    ToolSetup(
        "litellm",
        "LiteLLM",
        _(
            "The proxy asks Curfew before each call through one callback (install it from a "
            "Curfew checkout: it is not on the package index). The library talks to Curfew's "
            "own proxy like any OpenAI client. LiteLLM's proxy does not start without "
            "LITELLM_MASTER_KEY; changes reach it within a second (CURFEW_PUSH=0 turns that off). "
            "A Gemini model is a gemini/ entry of the same config, its key in GEMINI_API_KEY. "
            "Google's google-genai SDK asks LiteLLM's proxy, not Curfew: the proxy's address as "
            'base_url with api_version "v1beta" (without it LiteLLM answers 405), and a LiteLLM '
            "key as api_key."
        ),
        (
            Snippet("config", "config.yaml", "yaml", LITELLM_CONFIG),
            Snippet("env", SHELL, "sh", LITELLM_ENV),
            Snippet("library", _("Python, the library"), "python", LITELLM_LIBRARY),
            Snippet("genai", _("Python, Gemini through the proxy"), "python", GENAI_SDK),
        ),
        _(
            "Labelled by its clients: the proxy's callback reads X-Curfew-Session, "
            "X-Curfew-Purpose and X-Curfew-Subagent from each request; the library sends them "
            "as extra_headers, the google-genai SDK as http_options headers."
        ),
        labelled=True,
    ),
)


def setup(key: str) -> ToolSetup:
    return next(tool for tool in SETUPS if tool.key == key)


def rendered(*, base_url: str, token: str) -> list[dict[str, object]]:
    """The page's rows: each tool with its snippets filled in."""
    return [
        {
            "tool": tool,
            "snippets": [
                {
                    "id": f"setup-{tool.key}-{snippet.key}",
                    "where": snippet.where,
                    "language": snippet.language,
                    "text": snippet.render(base_url=base_url, token=token),
                }
                for snippet in tool.snippets
            ],
        }
        for tool in SETUPS
    ]


#: What the docs show for a key.
DOCS_TOKEN = "<curfew API token>"  # noqa: S105 - a placeholder, shown as such


def markdown(base_url: str = DOCS_BASE_URL, token: str = DOCS_TOKEN) -> str:
    """The manual's section, in English, between ``BEGIN`` and ``END``."""
    lines = [
        BEGIN,
        "",
        "## Setting up your tools",
        "",
        "Each tool points at Curfew instead of the provider, with a gateway key (an API token) "
        "as its key. The Integrations page (`/integrations/`) shows the same snippets with "
        "the server's own address filled in and a copy button on each. A helper call labelled "
        "with `X-Curfew-Purpose` is exempt when that purpose is listed in Replies & persona "
        "(by default `title`, `compaction` and `summary`). The label is a header, not a part of "
        "the address: every tool that sends its helper calls to a second model can give that "
        "model headers of its own, and the ones that cannot (Claude Code, Codex CLI, Cursor) "
        "have one address for every call, which a path would not tell apart either. "
        "`make clients` runs the real tools with these snippets in every state: "
        "[clients.md](clients.md).",
        "",
    ]
    for tool in SETUPS:
        lines += [f"### {tool.name}", "", str(tool.what), ""]
        for snippet in tool.snippets:
            lines += [f"{snippet.where}:", "", f"```{snippet.language}"]
            lines += [snippet.render(base_url=base_url, token=token), "```", ""]
        lines += [f"**Helper calls.** {tool.helpers}", ""]
    lines.append(END)
    return "\n".join(lines)


def replace_section(document: str, section: str) -> str:
    """``document`` with its tool-setups section replaced by ``section``."""
    start, end = document.index(BEGIN), document.index(END) + len(END)
    return document[:start] + section + document[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, help="replace the section in this file")
    args = parser.parse_args(argv)
    from django.conf import settings

    if not settings.configured:
        # English and no catalogue: the docs are written in the declaration's own words.
        settings.configure(USE_I18N=False)
    section = markdown()
    if args.write is None:
        sys.stdout.write(section + "\n")
        return 0
    text = args.write.read_text(encoding="utf-8")
    args.write.write_text(replace_section(text, section), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
