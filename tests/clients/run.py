"""``make clients``: the real tools, set up as the Integrations page says, in
every state.

Each tool is installed from its registry into ``.local/clients/`` (by the
Makefile target), given the setup declared in ``curfew_core/web/integrations/tool_setups.py``
filled in with a served Curfew's address and a real key, and run
non-interactively three times: off duty (peak hours), winding and on duty (the
user's "pretend it is …"). Between the tool and Curfew a recording pass-through
(``tee.py``) keeps what the tool sent; behind Curfew the test kit's recording
fakes keep what reached the upstream. Each run is checked:

- off duty: exit code 0, the user sees a reply that says "Curfew", and nothing
  reached the upstream but helper calls labelled with an exempt purpose, byte
  for byte;
- winding: exit code 0, and every call that reached the upstream is a helper
  call as sent or a clamped one (its budget at most the curve's, the persona
  added);
- on duty: exit code 0, the upstream's own reply shown, and every call reached
  the upstream with the body, query and headers the tool sent (credentials,
  hop-by-hop and ``X-Curfew-*`` apart). LiteLLM's proxy is a gateway that
  rewrites bodies itself: there, no persona and the budget as asked.

With a team key (issue 39), off duty and on duty again: each tool set up as
docs/manual.md ("Team keys in tools") says, its key the team's and its member
named by ``X-Curfew-User`` (``tests/clients/team.py``), held to the same checks;
and the gateway client and the LiteLLM proxy asking for a name outside the
team (refused for that call alone). Server down: the gateway client and the LiteLLM proxy
in front of a Curfew that does not answer pass the call by ``fail_open`` and
say so, ``X-Curfew-State: unchecked``.

Agents with a forced tool (``agents.py``): pydantic-ai and the OpenAI Agents
SDK, held also to their own account, off duty one request and zero usage.

The table goes to ``docs/clients.md``. Only 127.0.0.1 is reached: each tool's
telemetry, update checks and model-list downloads are turned off by its own
variables or flags, and its home is a scratch folder.

    .venv/bin/python -m tests.clients.run [--only claude-code,aider] [--write docs/clients.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from curfew_core.engine.schedule import DEFAULT_EXEMPT_PURPOSES
from curfew_core.proxy import helper_calls
from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream, Recorded, RecordingFake
from curfew_testkit.server import ROOT, ServedApp, free_port, wait_for_http
from tests.clients import agents, gemini, harness_hooks, team
from tests.clients.tee import Tee

SCRATCH = ROOT / ".local" / "clients"
NPM_BIN = SCRATCH / "npm" / "node_modules" / ".bin"
#: The Python tools' folder (``CURFEW_CLIENTS_PY_BIN``: another venv that has
#: them, e.g. the project's own for the Python rows alone).
PY_BIN = Path(os.environ.get("CURFEW_CLIENTS_PY_BIN") or SCRATCH / "py-venv" / "bin")
AIDER_BIN = SCRATCH / "aider-venv" / "bin"
MODEL = "fake-model"
PROMPT = "Say hello in five words."
#: The user's clock for each state (Asia/Shanghai, a Tuesday): the pretend override.
STATES = {
    "off duty": "2026-09-29 10:00",
    "winding": "2026-09-30 01:00",
    "on duty": "2026-09-29 20:00",
}
#: The states run again with the team key (the member's own time machine
#: moves the team's schedule too).
TEAM_STATES = ("off duty", "on duty")
TEAM_LABEL = "team key"
DOWN_LABEL = "server down"
#: The team key's member (a user of their own: the personal rows' user is in no team).
MEMBER = "clients-member"
TEAM = "clients-team"
EXEMPT = set(DEFAULT_EXEMPT_PURPOSES)
#: Not forwarded upstream by design (docs/manual.md, the proxy's pass-through).
NOT_PASSED = {
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
    "host",
    "content-length",
    "accept-encoding",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "expect",
    "openai-organization",
    "openai-project",
}
#: Everything a tool might reach for besides the registries, turned off.
QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "NO_UPDATE_NOTIFIER": "1",
    "DO_NOT_TRACK": "1",
    "NO_COLOR": "1",
    "TERM": "dumb",
}


@dataclass
class Result:
    tool: str
    state: str
    code: int | None
    seen: str
    upstream: int
    helpers: int
    problems: list[str]
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Tool:
    key: str
    #: The declared setup it follows.
    setup: str
    #: Which fake answers it.
    protocol: str
    #: The command line(s) run, from the rendered setup.
    commands: Callable[[Context], list[list[str]]]
    version: list[str]
    #: A gateway of its own (LiteLLM's proxy): on duty its body is its own.
    gateway: bool = False
    env: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Context], None] | None = None
    #: More checks of what the user saw, by state (the agents' own usage).
    extra_check: Callable[[str, str], list[str]] | None = None
    #: More words for the table, from what the user saw.
    extra_words: Callable[[str, str], str] | None = None
    #: A gateway's client script (``LITELLM_CLIENT`` when unset).
    client: str | None = None


@dataclass
class Context:
    tool: Tool
    home: Path
    work: Path
    base_url: str
    token: str
    env: dict[str, str]
    #: With a team key: the member each call names.
    member: str | None = None

    def rendered(self, snippet: str) -> str:
        declared = tool_setups.setup(self.tool.setup).snippet(snippet)
        text = declared.render(base_url=self.base_url, token=self.token, model=MODEL)
        if self.member is None:
            return text
        return team.with_member(self.tool.setup, snippet, text, self.member, MODEL)

    def shell_lines(self, snippet: str = "env") -> list[list[str]]:
        """The setup's shell snippet: its exports go into the environment,
        every other line is a command (a ``pip install`` was done by ``make clients``)."""
        declared = tool_setups.setup(self.tool.setup).snippet(snippet)
        self.env.update(declared.exports(base_url=self.base_url, token=self.token, model=MODEL))
        commands = []
        for line in self.rendered(snippet).splitlines():
            if line.startswith("export ") or line.startswith("pip install") or not line.strip():
                continue
            commands.append(shlex.split(line))
        return commands


def write_files(context: Context) -> None:
    """Every declared file of the setup, filled in, where the tool reads it."""
    for snippet in tool_setups.setup(context.tool.setup).snippets:
        if snippet.path is None:
            continue
        base = context.home if snippet.path.startswith("~/") else context.work
        target = base / snippet.path[2:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(context.rendered(snippet.key) + "\n", encoding="utf-8")


def _bin(folder: Path, name: str) -> str:
    return str(folder / name)


def claude(context: Context) -> list[list[str]]:
    [command] = context.shell_lines()
    return [[_bin(NPM_BIN, command[0]), "-p", PROMPT]]


def codex(context: Context) -> list[list[str]]:
    [command] = context.shell_lines()
    context.env["CODEX_HOME"] = str(context.home / ".codex")
    return [[_bin(NPM_BIN, command[0]), "exec", "--skip-git-repo-check", PROMPT]]


def opencode(context: Context) -> list[list[str]]:
    [command] = context.shell_lines()
    return [[_bin(NPM_BIN, command[0]), "run", PROMPT]]


def aider(context: Context) -> list[list[str]]:
    [command] = context.shell_lines()
    flags = [
        "--yes-always",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-model-warnings",
        "--no-show-release-notes",
        "--no-pretty",
        "--no-fancy-input",
        "--map-tokens",
        "0",
    ]
    # A file to commit: "/commit" makes the weak model write the message,
    # the helper call its setup labels.
    (context.work / "notes.txt").write_text("changed\n", encoding="utf-8")
    return [
        [_bin(AIDER_BIN, command[0]), *command[1:], *flags, "--no-git", "--message", PROMPT],
        [_bin(AIDER_BIN, command[0]), *command[1:], *flags, "--message", "/commit"],
    ]


def aider_repo(context: Context) -> None:
    # aider downloads LiteLLM's price list at start unless its cache is fresh:
    # the copy bundled with the LiteLLM it installed instead.
    [bundled] = (SCRATCH / "aider-venv").glob(
        "lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"
    )
    cache = context.home / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundled, cache)
    git = ["git", "-C", str(context.work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (context.work / "notes.txt").write_text("first\n", encoding="utf-8")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    context.env.update({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"})
    context.env.update({"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


def llm(context: Context) -> list[list[str]]:
    commands = context.shell_lines()
    last = [*commands[-1][:-1], PROMPT]
    return [[_bin(PY_BIN, c[0]), *c[1:]] for c in [*commands[:-1], last]]


def python_snippet(snippet: str, tail: str) -> Callable[[Context], list[list[str]]]:
    def commands(context: Context) -> list[list[str]]:
        script = context.work / "main.py"
        script.write_text(context.rendered(snippet) + "\n" + textwrap.dedent(tail), "utf-8")
        return [[_bin(PY_BIN, "python"), str(script)]]

    return commands


OPENAI_TAIL = f"""
print(reply.choices[0].message.content)
title = titles.chat.completions.create(
    model="{MODEL}", messages=[{{"role": "user", "content": "A title for: hello"}}]
)
print("title:", title.choices[0].message.content)
"""
ANTHROPIC_TAIL = f"""
print(message.content[0].text if message.content else message.stop_reason)
title = titles.messages.create(
    model="{MODEL}", max_tokens=64, messages=[{{"role": "user", "content": "A title for: hello"}}]
)
print("title:", title.content[0].text)
"""
LITELLM_TAIL = f"""
print(reply.choices[0].message.content)
title = litellm.completion(
    model="openai/{MODEL}", api_base="{{base_url}}/v1", api_key="{{token}}",
    messages=[{{"role": "user", "content": "A title for: hello"}}],
    extra_headers={{"X-Curfew-Purpose": "title"{{member}}}},
)
print("title:", title.choices[0].message.content)
"""


def agent_script(text: str) -> Callable[[Context], list[list[str]]]:
    """An agent with a forced tool (``agents.py``), its OpenAI client set up as
    the OpenAI SDK's: the base URL and key, the member by ``X-Curfew-User``."""

    def commands(context: Context) -> list[list[str]]:
        script = context.work / "agent.py"
        script.write_text(text.replace("{model}", MODEL), encoding="utf-8")
        member = [] if context.member is None else [context.member]
        return [
            [_bin(PY_BIN, "python"), str(script), context.base_url, context.token, PROMPT, *member]
        ]

    return commands


def litellm_library(context: Context) -> list[list[str]]:
    script = context.work / "main.py"
    member = "" if context.member is None else f", {json.dumps(team.MEMBER_HEADER)}: "
    member += "" if context.member is None else json.dumps(context.member)
    tail = LITELLM_TAIL.replace("{base_url}", context.base_url).replace("{token}", context.token)
    tail = tail.replace("{member}", member)
    script.write_text(context.rendered("library") + "\n" + tail, "utf-8")
    return [[_bin(PY_BIN, "python"), str(script)]]


LITELLM_CLIENT = """
import sys
from openai import OpenAI

# A team key's member (the proxy's CURFEW_TOKEN a team key): named by X-Curfew-User.
member = {"X-Curfew-User": sys.argv[4]} if len(sys.argv) > 4 else {}
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], default_headers=member)
reply = client.chat.completions.create(
    model="{model}", max_tokens=500, messages=[{"role": "user", "content": sys.argv[3]}]
)
print(reply.choices[0].message.content)
titles = client.with_options(default_headers={"X-Curfew-Purpose": "title"})
title = titles.chat.completions.create(
    model="{model}", max_tokens=500, messages=[{"role": "user", "content": "A title for: hello"}]
)
print("title:", title.choices[0].message.content)
"""

#: The gateway client, as a small gateway of its own would use it: the
#: member's verdict, then a name outside the team (that call refused alone).
CLIENT_GATEWAY = """
import logging
import sys

from curfew_client import CurfewClient, CurfewRefused
from openai import OpenAI

logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
curfew_url, token, upstream, prompt = sys.argv[1:5]
names = sys.argv[5:] or [""]
curfew = CurfewClient(curfew_url, token, policy="fail_open", report_decisions=False)
body = {"model": "{model}", "max_tokens": 500, "messages": [{"role": "user", "content": prompt}]}
for name in names:
    try:
        verdict = curfew.verdict(user=name or None, max_tokens=body["max_tokens"])
    except CurfewRefused as refused:
        print(f"{name}: refused ({refused.status}): {refused.detail}")
        continue
    print(f"X-Curfew-State: {verdict.checked_state}, X-Curfew-Action: {verdict.action}")
    if verdict.short_circuit:
        print(verdict.answer_object(body)["choices"][0]["message"]["content"])
        continue
    sent = verdict.apply(body)
    reply = OpenAI(base_url=upstream + "/v1", api_key="sk-upstream-fake").chat.completions.create(
        **sent
    )
    print(reply.choices[0].message.content)
curfew.close()
"""
#: LiteLLM's proxy asked through, with the answer's labels shown.
LITELLM_LABELS_CLIENT = """
import sys
from openai import OpenAI

client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2])
raw = client.chat.completions.with_raw_response.create(
    model="{model}", max_tokens=500, messages=[{"role": "user", "content": sys.argv[3]}]
)
print("X-Curfew-State:", raw.headers.get("x-curfew-state"))
print(raw.parse().choices[0].message.content)
"""
#: LiteLLM's proxy with the team key, asked for a name outside the team.
LITELLM_STRANGER_CLIENT = """
import sys
import httpx

answer = httpx.post(
    sys.argv[1] + "/v1/chat/completions",
    headers={"Authorization": "Bearer " + sys.argv[2], "X-Curfew-User": sys.argv[4]},
    json={
        "model": "{model}",
        "max_tokens": 500,
        "messages": [{"role": "user", "content": sys.argv[3]}],
    },
    timeout=120,
)
print("HTTP", answer.status_code, "X-Curfew-State:", answer.headers.get("x-curfew-state"))
print(answer.text[:400])
"""
#: Not a tool of the registries: the gateway client's own rows.
CLIENT_KEY = "curfew-client"
#: How the gateway client's version is read (``version`` takes a tool).
CLIENT_VERSION = Tool(
    CLIENT_KEY,
    "",
    "openai",
    lambda context: [],
    [
        _bin(PY_BIN, "python"),
        "-c",
        "import importlib.metadata as m; print('curfew-client', m.version('curfew-client'))",
    ],
)
#: Not a member of the team (the gateway client's team-key rows ask for it too).
STRANGER = "not-a-member"

TOOLS: tuple[Tool, ...] = (
    Tool("claude-code", "claude-code", "anthropic", claude, [_bin(NPM_BIN, "claude"), "--version"]),
    Tool("codex", "codex", "openai", codex, [_bin(NPM_BIN, "codex"), "--version"]),
    Tool("opencode", "opencode", "openai", opencode, [_bin(NPM_BIN, "opencode"), "--version"]),
    Tool(
        "aider",
        "aider",
        "openai",
        aider,
        [_bin(AIDER_BIN, "aider"), "--version"],
        prepare=aider_repo,
    ),
    Tool("llm", "llm", "openai", llm, [_bin(PY_BIN, "llm"), "--version"]),
    Tool(
        "openai-sdk",
        "openai-sdk",
        "openai",
        python_snippet("code", OPENAI_TAIL),
        [_bin(PY_BIN, "python"), "-c", "import openai; print('openai', openai.__version__)"],
    ),
    Tool(
        "anthropic-sdk",
        "anthropic-sdk",
        "anthropic",
        python_snippet("code", ANTHROPIC_TAIL),
        [
            _bin(PY_BIN, "python"),
            "-c",
            "import anthropic; print('anthropic', anthropic.__version__)",
        ],
    ),
    Tool(
        "litellm-library",
        "litellm",
        "openai",
        litellm_library,
        [
            _bin(PY_BIN, "python"),
            "-c",
            "import importlib.metadata as m; print('litellm', m.version('litellm'))",
        ],
    ),
    Tool(
        "litellm-proxy",
        "litellm",
        "openai",
        lambda context: [],  # started once; its client is LITELLM_CLIENT
        [
            _bin(PY_BIN, "python"),
            "-c",
            "import importlib.metadata as m; print('litellm', m.version('litellm'))",
        ],
        gateway=True,
    ),
)
#: The agents with a forced tool (issue 39): after the tools above, so the
#: rows of earlier runs keep their order.
AGENTS = (
    Tool(
        "pydantic-ai",
        "openai-sdk",
        "openai",
        agent_script(agents.PYDANTIC_AI),
        [
            _bin(PY_BIN, "python"),
            "-c",
            "import importlib.metadata as m; print('pydantic-ai', m.version('pydantic-ai-slim'))",
        ],
        env={"LOGFIRE_IGNORE_NO_CONFIG": "1"},
        extra_check=agents.check,
        extra_words=agents.words,
    ),
    Tool(
        "openai-agents",
        "openai-sdk",
        "openai",
        agent_script(agents.OPENAI_AGENTS),
        [
            _bin(PY_BIN, "python"),
            "-c",
            "import importlib.metadata as m; print('openai-agents', m.version('openai-agents'))",
        ],
        env={"OPENAI_AGENTS_DISABLE_TRACING": "1"},
        extra_check=agents.check,
        extra_words=agents.words,
    ),
)
#: Google's own SDK through the LiteLLM proxy (``gemini.py``): last, so the
#: rows of earlier runs keep their order.
GOOGLE_GENAI = Tool(
    "google-genai",
    "litellm",
    "gemini",
    lambda context: [],  # the proxy is started once; its client is gemini.CLIENT
    [
        _bin(PY_BIN, "python"),
        "-c",
        "import importlib.metadata as m; "
        "print('google-genai', m.version('google-genai'), 'via litellm', m.version('litellm'))",
    ],
    gateway=True,
    extra_check=gemini.check,
    extra_words=gemini.words,
    client=gemini.CLIENT,
)
TOOLS = (*TOOLS, *AGENTS, GOOGLE_GENAI)
NOT_RUN = {
    "cursor": "not run: Cursor is a desktop app, on no package registry, and it calls the "
    "base URL from Cursor's own servers, which cannot reach this machine",
}


@dataclass
class Gateway:
    """A LiteLLM proxy of its own (the team key's; the one facing no Curfew)."""

    process: subprocess.Popen[bytes]
    tee: Tee
    master_key: str


class Bench:
    """The served Curfew, its upstream fakes, the tee, one user, and a team
    whose key asks for its member."""

    def __init__(self, workdir: Path, *, control: bool = False) -> None:
        self.workdir = workdir
        self.control = control
        # The usual fake, but a forced tool gets a call to it (the agents' rows).
        self.openai: FakeUpstream = agents.ToolCallingFake().start()
        self.anthropic = FakeAnthropic().start()
        # Google, behind LiteLLM's gemini/ deployment (the google-genai row).
        self.gemini = gemini.GeminiFake().start()
        self.app = ServedApp(
            workdir,
            env={
                "CURFEW_MANIFEST_STATIC": "0",
                "CURFEW_UPSTREAM_BASE_URL": f"{self.openai.base_url}/v1",
                "CURFEW_UPSTREAM_API_KEY": "sk-upstream-fake",
                "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": self.anthropic.base_url,
                "CURFEW_ANTHROPIC_UPSTREAM_API_KEY": "sk-ant-upstream-fake",
            },
        )
        self.app.manage("migrate", "--no-input", "-v0")
        made = self.app.manage("curfew", "token", "--user", "clients", "--create-user")
        self.token = made.stdout.strip().splitlines()[-1]
        # The team key's member, with a token of their own for their time machine.
        made = self.app.manage("curfew", "token", "--user", MEMBER, "--create-user")
        self.member_token = made.stdout.strip().splitlines()[-1]
        self.app.manage("curfew", "team", "create", TEAM, "--admin", MEMBER)
        made = self.app.manage("curfew", "team-token", TEAM)
        self.team_key = made.stdout.strip().splitlines()[-1]
        self.app.start()
        self.tee = Tee(self.app.base_url).start()
        # The persona winding adds (asked for a winding instant): on duty it must be absent.
        self.persona: str = self.verdict(at="2026-09-30T01:00:00+08:00")["persona"]
        # The control group (``--control``): the same runs straight to the
        # upstreams, past Curfew, where the off-duty and winding checks must fail.
        self.control_tees = {
            "openai": Tee(self.openai.base_url).start(),
            "anthropic": Tee(self.anthropic.base_url).start(),
        }
        self.litellm: subprocess.Popen[bytes] | None = None
        self.litellm_url = ""
        self.litellm_tee: Tee | None = None
        #: More LiteLLM proxies: with the team key, and in front of no Curfew.
        self.gateways: dict[str, Gateway] = {}

    def fakes(self) -> tuple[RecordingFake | gemini.GeminiFake, ...]:
        return (self.openai, self.anthropic, self.gemini)

    def fake_for(self, protocol: str) -> RecordingFake | gemini.GeminiFake:
        """The upstream a tool of ``protocol`` reaches."""
        if protocol == "anthropic":
            return self.anthropic
        return self.gemini if protocol == "gemini" else self.openai

    def tee_for(self, tool: Tool, gateway: str = "") -> Tee:
        if tool.gateway and gateway in self.gateways:
            return self.gateways[gateway].tee
        if tool.gateway and self.litellm_tee is not None:
            return self.litellm_tee
        return self.control_tees[tool.protocol] if self.control else self.tee

    def reset(self) -> None:
        tees = (
            self.tee,
            *self.control_tees.values(),
            *([self.litellm_tee] if self.litellm_tee else []),
            *(gateway.tee for gateway in self.gateways.values()),
        )
        for fake in (*self.fakes(), *tees):
            fake.reset()

    def travel(self, moment: str) -> None:
        for token in (self.token, self.member_token):
            answer = httpx.post(
                f"{self.app.base_url}/api/v1/overrides",
                json={"debug": moment, "duration": "4h"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            answer.raise_for_status()

    def verdict(self, *, member: bool = False, **body: str) -> dict[str, Any]:
        """The verdict now: the personal rows' user's, or (``member``) the team
        key's for its member."""
        if member:
            body = {**body, "user": MEMBER}
        answer = httpx.post(
            f"{self.app.base_url}/api/v1/verdict",
            json=body,
            headers={"Authorization": f"Bearer {self.team_key if member else self.token}"},
            timeout=10,
        )
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found

    def start_gateway(self, name: str, *, token: str, curfew_url: str) -> None:
        """Another LiteLLM proxy, as set up but with ``token`` as ``CURFEW_TOKEN``
        and ``curfew_url`` as ``CURFEW_URL`` (a team key; a Curfew that is down)."""
        folder = self.workdir / f"litellm-{name}"
        folder.mkdir(exist_ok=True)
        process, url, master_key = self._litellm(folder, token=token, curfew_url=curfew_url)
        self.gateways[name] = Gateway(process, Tee(url).start(), master_key)

    def start_litellm(self) -> None:
        self.litellm, url, self.master_key = self._litellm(
            self.workdir, token=self.token, curfew_url=self.app.base_url
        )
        self.litellm_tee = Tee(url).start()
        self.litellm_url = self.litellm_tee.base_url

    def _litellm(
        self, workdir: Path, *, token: str, curfew_url: str
    ) -> tuple[subprocess.Popen[bytes], str, str]:
        config = workdir / "config.yaml"
        text = (
            tool_setups.setup("litellm")
            .snippet("config")
            .render(base_url=curfew_url, token=token, model=MODEL)
        )
        # The only substitution: the providers are the recording fakes, not DeepSeek
        # and Google (the declared gemini/ entry has no api_base: Google's own).
        text = text.replace("https://api.deepseek.com/v1", f"{self.openai.base_url}/v1")
        text = gemini.at_fake(text, self.gemini.base_url)
        if self.control:
            text = without_curfew(text)  # the control group: LiteLLM past Curfew too
        config.write_text(text + "\n", encoding="utf-8")
        env_snippet = tool_setups.setup("litellm").snippet("env")
        exports = env_snippet.exports(base_url=curfew_url, token=token, model=MODEL)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env.update({**QUIET_ENV, **exports, "DEEPSEEK_API_KEY": "sk-upstream-fake"})
        env.update(gemini.KEY_ENV)
        log = open(workdir / "litellm.log", "ab")  # noqa: SIM115 - the child's for its life
        process = subprocess.Popen(
            [
                _bin(PY_BIN, "litellm"),
                "--config",
                str(config),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        wait_for_http(
            f"{url}/health/liveliness",
            process,
            workdir / "litellm.log",
            timeout=180,
            label="litellm",
        )
        return process, url, exports["LITELLM_MASTER_KEY"]

    def stop(self) -> None:
        processes = [gateway.process for gateway in self.gateways.values()]
        for process in [self.litellm, *processes]:
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        for gateway in self.gateways.values():
            gateway.tee.stop()
        if self.litellm_tee is not None:
            self.litellm_tee.stop()
        for tee in (self.tee, *self.control_tees.values()):
            tee.stop()
        self.app.stop()
        self.openai.stop()
        self.anthropic.stop()
        self.gemini.stop()


def without_curfew(config: str) -> str:
    """LiteLLM's proxy config without Curfew's callback: the control group's
    gateway, which passes every call straight to the upstream."""
    loaded: dict[str, Any] = yaml.safe_load(config)
    settings = loaded.get("litellm_settings") or {}
    kept = [c for c in settings.get("callbacks") or [] if not str(c).startswith("curfew_client")]
    if kept:
        settings["callbacks"] = kept
    else:
        settings.pop("callbacks", None)
    if not settings:
        loaded.pop("litellm_settings", None)
    return yaml.safe_dump(loaded, sort_keys=False).rstrip("\n")


def _body(recorded: Recorded) -> Any:
    try:
        return json.loads(recorded.body) if recorded.body else None
    except ValueError:
        return None


def _budget(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if isinstance(body.get(name), int):
            return int(body[name])
    # Gemini's: in its generation config.
    config = body.get("generationConfig")
    if isinstance(config, dict) and isinstance(config.get("maxOutputTokens"), int):
        return int(config["maxOutputTokens"])
    return None


def _has_persona(body: Any, persona: str) -> bool:
    if not persona:
        return False
    return json.dumps(persona, ensure_ascii=False)[1:-1] in json.dumps(body, ensure_ascii=False)


def _system_part(body: Any, protocol: str) -> Any:
    """Where a protocol keeps the system text the persona must be added to
    (Gemini: ``systemInstruction``); the whole body for the others."""
    if protocol == "gemini":
        return body.get("systemInstruction") if isinstance(body, dict) else None
    return body


def _call_name(route: str) -> str:
    """A call's name for the table: the route's last part (Gemini's method,
    ``…/models/m:generateContent``, by its method alone)."""
    return route.rsplit("/", 1)[-1].rsplit(":", 1)[-1]


#: The reply each protocol's fake upstream gives (the user must see it on duty).
UPSTREAM_SAYS = {"gemini": gemini.UPSTREAM_SAYS}
UPSTREAM_REPLY = "Hello from the fake"


def _purpose(sent: Recorded) -> str:
    """The purpose a call was labelled with, or the one the Messages door
    recognises (Claude Code's own titles, recaps and compaction)."""
    agent = ""
    for name, value in sent.headers.items():
        if name.lower() == "x-curfew-purpose":
            return value.strip().lower()
        if name.lower() == "user-agent":
            agent = value
    if sent.route.endswith("/messages") and sent.method == "POST":
        try:
            body = json.loads(sent.body)
        except ValueError:
            return ""
        if isinstance(body, dict):
            return helper_calls.claude_code_purpose({"User-Agent": agent}, body) or ""
    return ""


def _model_calls(requests: list[Recorded]) -> list[Recorded]:
    """Model calls only: a tool's GET of the model list or a token count is no turn."""
    return [r for r in requests if r.method == "POST" and not r.route.endswith("count_tokens")]


def check(
    tool: Tool,
    state: str,
    sent: list[Recorded],
    reached: list[Recorded],
    seen: str,
    code: int | None,
    verdict: dict[str, Any],
    persona: str,
) -> tuple[list[str], int, str]:
    """What is wrong with one run (nothing: it passed), how many labelled
    helper calls reached the upstream, and what reached it, in words."""
    problems: list[str] = []
    reached_words: list[str] = []
    if code != 0:
        problems.append(f"exit code {code}")
    helpers = {r.body: r for r in _model_calls(sent) if _purpose(r) in EXEMPT}
    reached_calls = _model_calls(reached)
    helper_hits = sum(1 for r in reached_calls if r.body in helpers)
    main = [r for r in reached_calls if r.body not in helpers or tool.gateway]
    if tool.gateway:
        # LiteLLM rewrites bodies: its labelled calls are known by their prompt.
        main = [r for r in reached_calls if "A title for" not in r.body.decode("utf-8", "replace")]
        helper_hits = len(reached_calls) - len(main)
    if not _model_calls(sent):
        problems.append("the tool sent no model call")
    if state == "off duty":
        if "Curfew" not in seen:
            problems.append("the reply shown does not say Curfew")
        if main:
            problems.append(f"{len(main)} unlabelled call(s) reached the upstream")
        reached_words.append("nothing" if not main else f"{len(main)} call(s)")
    elif state == "winding":
        if not main:
            problems.append("nothing reached the upstream")
        ceiling = verdict.get("max_tokens")
        asked = [s for s in _model_calls(sent) if s.body not in helpers]
        for index, r in enumerate(main):
            body = _body(r)
            budget = _budget(body)
            before = _budget(_body(asked[index])) if index < len(asked) else None
            persona_added = _has_persona(_system_part(body, tool.protocol), persona)
            where = " in systemInstruction" if tool.protocol == "gemini" else ""
            reached_words.append(
                f"{_call_name(r.route)}: budget {before if before is not None else 'unset'}"
                f" → {budget}{' + persona' + where if persona_added else ''}"
            )
            if budget is None or ceiling is None or budget > ceiling:
                problems.append(f"{r.route}: budget {budget} not clamped to {ceiling}")
            if not persona_added:
                problems.append(f"{r.route}: no persona")
    else:
        if UPSTREAM_SAYS.get(tool.protocol, UPSTREAM_REPLY) not in seen:
            problems.append("the upstream's reply is not shown")
        if not main and not helper_hits:
            problems.append("nothing reached the upstream")
        asked = [s for s in _model_calls(sent) if s.body not in helpers]
        for index, r in enumerate(main):
            if tool.gateway:
                body = _body(r)
                before = _budget(_body(asked[index])) if index < len(asked) else None
                if _has_persona(body, persona):
                    problems.append(f"{r.route}: persona on duty")
                if _budget(body) not in (None, before):
                    problems.append(f"{r.route}: budget {before} changed to {_budget(body)}")
                if tool.protocol == "gemini":
                    # Google's own fields pass as the SDK sent them.
                    call = asked[index] if index < len(asked) else None
                    for name in gemini.changed(_body(call) if call else None, body):
                        problems.append(f"{r.route}: {name} not as sent")
                    if call is not None and call.query != r.query:
                        problems.append(f"{r.route}: query {r.query!r}, sent {call.query!r}")
                    query = f", query ?{r.query}" if r.query else ""
                    reached_words.append(
                        f"{_call_name(r.route)}: {', '.join(gemini.FIELDS)} as sent{query}"
                        ", no persona"
                    )
                    continue
                reached_words.append(f"{_call_name(r.route)}: budget {_budget(body)}, no persona")
                continue
            twins = [s for s in sent if s.body == r.body and s.route == r.route]
            if not twins:
                problems.append(f"{r.route}: body not as sent")
                continue
            origin = twins[0]
            if origin.query != r.query:
                problems.append(f"{r.route}: query {r.query!r}, sent {origin.query!r}")
            arrived = {k.lower(): v for k, v in r.headers.items()}
            passed = 0
            for name, value in origin.headers.items():
                low = name.lower()
                if low in NOT_PASSED or low.startswith("x-curfew-"):
                    continue
                passed += 1
                if arrived.get(low) != value:
                    problems.append(f"{r.route}: header {low} not as sent")
            query = f", query ?{r.query}" if r.query else ""
            reached_words.append(
                f"{r.route.rsplit('/', 1)[-1]}: body as sent{query}, {passed} headers as sent"
            )
    if helper_hits:
        reached_words.append(f"{helper_hits} labelled helper call(s) as sent")
    return problems, helper_hits, "; ".join(reached_words)


def run_tool(
    bench: Bench, tool: Tool, state: str, homes: Path, *, with_team: bool = False
) -> Result:
    """One run of ``tool`` in ``state``; ``with_team``: with the team key, its
    member named as the manual says (the row's state says "team key")."""
    label = f"{state} · {TEAM_LABEL}" if with_team else state
    home = homes / (f"{tool.key}-team" if with_team else tool.key)
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{tool.key}-", dir=homes))
    env = {
        "PATH": f"{NPM_BIN}:{PY_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "LANG": "C.UTF-8",
        **QUIET_ENV,
        **tool.env,
    }
    gateway = TEAM_LABEL if with_team else ""
    tee = bench.tee_for(tool, gateway)
    token = bench.team_key if with_team else bench.token
    member = MEMBER if with_team else None
    context = Context(tool, home, work, tee.base_url, token, env, member)
    if member is not None:
        context.env.update(team.member_env(tool.setup, member))
    if tool.prepare is not None:
        tool.prepare(context)
    write_files(context)
    commands = tool.commands(context)
    if tool.gateway:
        client = work / "client.py"
        client.write_text((tool.client or LITELLM_CLIENT).replace("{model}", MODEL), "utf-8")
        master_key = bench.gateways[gateway].master_key if gateway else bench.master_key
        commands = [
            [
                _bin(PY_BIN, "python"),
                str(client),
                tee.base_url,
                master_key,
                PROMPT,
                *([member] if member is not None else []),
            ]
        ]
    bench.reset()
    seen, code = "", None
    for command in commands:
        try:
            done = subprocess.run(
                command,
                cwd=work,
                env=context.env,
                capture_output=True,
                text=True,
                timeout=240,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as timeout:
            seen += f"[timed out after {timeout.timeout:.0f} s]"
            code = None
            break
        seen += done.stdout
        code = done.returncode
        (homes / f"{tool.key}-{label.replace(' ', '-')}.log").write_text(
            f"$ {shlex.join(command)}\n{done.stdout}\n--- stderr\n{done.stderr}\n", encoding="utf-8"
        )
        if code != 0:
            break
    time.sleep(1.0)  # a tool's helper call may land just after its answer
    sent = list(tee.requests)
    reached = list(bench.fake_for(tool.protocol).requests)
    verdict = bench.verdict(member=with_team)
    problems, helpers, words = check(tool, state, sent, reached, seen, code, verdict, bench.persona)
    if tool.extra_check is not None:
        problems += tool.extra_check(state, seen)
    if tool.extra_words is not None:
        words = "; ".join(w for w in (words, tool.extra_words(state, seen)) if w)
    if member is not None:
        problems += unnamed(sent, member)
    return Result(tool.key, label, code, seen, len(_model_calls(reached)), helpers, problems, words)


def unnamed(sent: list[Recorded], member: str) -> list[str]:
    """A team key's model calls that did not name ``member`` in ``X-Curfew-User``."""
    missing = 0
    for recorded in _model_calls(sent):
        named = {k.lower(): v for k, v in recorded.headers.items()}.get("x-curfew-user")
        if named != member:
            missing += 1
    return [f"{missing} call(s) without X-Curfew-User: {member}"] if missing else []


def _script(
    homes: Path, name: str, text: str, args: list[str], label: str
) -> tuple[str, str, int | None]:
    """Run one of the harness's own Python scripts: (stdout, stderr, exit code)."""
    script = homes / f"{name}.py"
    script.write_text(text.replace("{model}", MODEL), encoding="utf-8")
    command = [_bin(PY_BIN, "python"), str(script), *args]
    env = {**os.environ, **QUIET_ENV, "PATH": f"{PY_BIN}:{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=240, env=env, cwd=homes
        )
    except subprocess.TimeoutExpired as timeout:
        return f"[timed out after {timeout.timeout:.0f} s]", "", None
    (homes / f"{name}-{label.replace(' ', '-')}.log").write_text(
        f"$ {shlex.join(command)}\n{done.stdout}\n--- stderr\n{done.stderr}\n", encoding="utf-8"
    )
    return done.stdout, done.stderr, done.returncode


def check_client_team(state: str, seen: str, code: int | None, upstream: int) -> list[str]:
    """The gateway client with the team key: its member's verdict acted on
    (off duty: Curfew's reply, nothing upstream; on duty: the upstream's
    reply), and the stranger's call refused alone (404), no outage."""
    problems = [] if code == 0 else [f"exit code {code}"]
    if f"{STRANGER}: refused (404)" not in seen:
        problems.append("the name outside the team was not refused for its call")
    if state == "off duty":
        if "Curfew" not in seen:
            problems.append("the reply shown does not say Curfew")
        if upstream:
            problems.append(f"{upstream} call(s) reached the upstream")
    else:
        if "Hello from the fake" not in seen or not upstream:
            problems.append("the upstream's reply is not shown")
    return problems


def check_down(seen: str, code: int | None, upstream: int, said: str) -> list[str]:
    """Curfew down, policy fail_open: the call passes, says ``unchecked``,
    and the outage is said in the log (``said``: the gateway's stderr or log)."""
    problems = [] if code == 0 else [f"exit code {code}"]
    if "X-Curfew-State: unchecked" not in seen:
        problems.append("the answer does not say X-Curfew-State: unchecked")
    if "Hello from the fake" not in seen or upstream != 1:
        problems.append(f"{upstream} call(s) reached the upstream, not 1")
    if "calls pass UNCHECKED" not in said:
        problems.append("the outage was not logged")
    return problems


def run_client_team(bench: Bench, state: str, homes: Path) -> Result:
    label = f"{state} · {TEAM_LABEL}"
    bench.reset()
    args = [bench.app.base_url, bench.team_key, bench.openai.base_url, PROMPT, MEMBER, STRANGER]
    seen, _, code = _script(homes, "client-team", CLIENT_GATEWAY, args, label)
    upstream = len(_model_calls(list(bench.openai.requests)))
    problems = check_client_team(state, seen, code, upstream)
    note = f"{MEMBER} as the verdict says; {STRANGER} refused (404) for its call alone"
    return Result(CLIENT_KEY, label, code, seen, upstream, 0, problems, note)


def check_stranger(seen: str, code: int | None, upstream: int) -> list[str]:
    """LiteLLM's proxy with the team key, a name outside the team: that call
    refused (the server's 404, naming the problem and how to name a member),
    labelled ``unknown``, nothing upstream."""
    problems = [] if code == 0 else [f"exit code {code}"]
    if "HTTP 404 X-Curfew-State: unknown" not in seen:
        problems.append("not a 404 labelled X-Curfew-State: unknown")
    if "is not a member of this key's team" not in seen or "X-Curfew-User" not in seen:
        problems.append("the refusal does not name the problem and how to name a member")
    if upstream:
        problems.append(f"{upstream} call(s) reached the upstream")
    return problems


def run_litellm_stranger(bench: Bench, homes: Path) -> Result:
    label = f"{TEAM_LABEL}, not a member"
    gateway = bench.gateways[TEAM_LABEL]
    bench.reset()
    args = [gateway.tee.base_url, gateway.master_key, PROMPT, STRANGER]
    seen, _, code = _script(homes, "litellm-stranger", LITELLM_STRANGER_CLIENT, args, label)
    upstream = len(_model_calls(list(bench.openai.requests)))
    problems = check_stranger(seen, code, upstream)
    note = f"{STRANGER}: that call refused (404), nothing upstream"
    return Result("litellm-proxy", label, code, seen, upstream, 0, problems, note)


def run_client_down(bench: Bench, homes: Path, dead_url: str) -> Result:
    bench.reset()
    args = [dead_url, bench.token, bench.openai.base_url, PROMPT]
    seen, said, code = _script(homes, "client-down", CLIENT_GATEWAY, args, DOWN_LABEL)
    upstream = len(_model_calls(list(bench.openai.requests)))
    problems = check_down(seen, code, upstream, said)
    note = "passed by fail_open, said unchecked; the outage logged"
    return Result(CLIENT_KEY, DOWN_LABEL, code, seen, upstream, 0, problems, note)


def run_litellm_down(bench: Bench, homes: Path) -> Result:
    gateway = bench.gateways[DOWN_LABEL]
    bench.reset()
    args = [gateway.tee.base_url, gateway.master_key, PROMPT]
    seen, _, code = _script(homes, "litellm-down", LITELLM_LABELS_CLIENT, args, DOWN_LABEL)
    upstream = len(_model_calls(list(bench.openai.requests)))
    log = bench.workdir / f"litellm-{DOWN_LABEL}" / "litellm.log"
    said = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    problems = check_down(seen, code, upstream, said)
    note = "passed by fail_open, said unchecked; the outage logged"
    return Result("litellm-proxy", DOWN_LABEL, code, seen, upstream, 0, problems, note)


def version(tool: Tool) -> str:
    try:
        done = subprocess.run(
            tool.version,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **QUIET_ENV},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"not installed ({error})"
    return (
        (done.stdout.strip() or done.stderr.strip()).splitlines()[-1][:60]
        if done.stdout or done.stderr
        else "?"
    )


def _shown(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    marks = ("Curfew", UPSTREAM_REPLY, *UPSTREAM_SAYS.values())
    curfew = [line for line in lines if any(mark in line for mark in marks)]
    shown = " / ".join(curfew[:2] or lines[-1:])
    return shown.replace("|", "\\|")[:90] or "(nothing)"


def table(results: list[Result], versions: dict[str, str], seconds: float) -> str:
    lines = [
        "# The real tools, in every state",
        "",
        "Written by `make clients` (`tests/clients/run.py`): each tool installed from its "
        "registry into a scratch folder, set up with the snippets of "
        "[Setting up your tools](manual.md#setting-up-your-tools) filled in with a served "
        "Curfew's address and a real key, run non-interactively off duty (peak hours), winding "
        'and on duty (the user\'s "pretend it is …"), in front of recording fake upstreams. '
        "**Upstream** counts the model calls that reached the provider, **helpers** those of "
        "them that were the tool's labelled helper calls (titles, commit messages), passed as "
        "sent because their purpose is exempt. Off duty nothing else may reach it and the "
        "user must see a reply that says Curfew; winding every other call must be clamped "
        "and carry the persona; on duty each must arrive with the body, query and headers "
        "the tool sent. The control group, `python -m tests.clients.run --control`, runs the "
        "same tools straight to the upstreams, past Curfew: there every off-duty and winding "
        "run fails these checks. pydantic-ai (structured output) and the OpenAI Agents SDK "
        '(`tool_choice: "required"`) force a tool call: off duty each must stop after one '
        "request with zero usage, its own refusal error (`ContentFilterError`, "
        "`ModelRefusalError`) carrying the reply, rather than ask again; winding and on duty "
        "the fake upstream calls the forced tool. `google-genai` is Google's own SDK through the "
        "LiteLLM proxy, a `gemini/` model added to its config in front of a recording fake "
        "Google and the SDK pointed at the proxy (`http_options`: its address, "
        '`api_version="v1beta"`), one `generate_content` and one `generate_content_stream` call '
        "each run: off duty both must be finished turns (`STOP`) showing Curfew's reply with a "
        "usage of zero, winding `maxOutputTokens` clamped and the persona in `systemInstruction`. "
        "Rows marked **team key** run again with a "
        "team key, each tool "
        "naming its member as [Team keys in tools](manual.md#team-keys-in-tools) says "
        "(`X-Curfew-User`), held to the same checks, and every call must name the member; "
        "the gateway client and the LiteLLM proxy also ask for a name outside the team, "
        "refused for that call alone (404, nothing upstream). Rows marked **server down** "
        "put the gateway client and the LiteLLM proxy in "
        "front of a Curfew that does not answer: policy `fail_open` passes the call, the "
        "answer says `X-Curfew-State: unchecked`, and the outage is logged. Rows "
        "`claude-code-hooks` and `codex-hooks` run the real tools with Curfew's hooks only "
        "(`curfew hook`, [Curfew inside the agent's "
        "harness](manual.md#curfew-inside-the-agents-harness)), `claude-code-plugin` Claude Code "
        "with Curfew's plugin installed from the checkout as the manual says (`claude plugin "
        "marketplace add`, `claude plugin install curfew@curfew`), and `opencode-plugin` real "
        "OpenCode with Curfew's plugin only (`integrations/opencode`; its title calls pass, "
        "exempt, and `opencode run` exits 1 on the turn it stops), straight to the fake upstream, "
        "no proxy: off duty nothing may reach it and the user must be told why, winding the "
        "persona must reach it, on duty nothing of Curfew's, and with the server down work goes on"
        " and the user is told (`codex exec` shows a hook's outcome, not its words: off duty and "
        "server down Codex runs again interactively, its TUI in a pseudo-terminal, where the "
        "hook's words must show); in the control group they run without the hooks and fail.",
        "",
        f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s.",
        "",
        "| tool | version | state | exit | the user saw | upstream | helpers "
        "| what reached the upstream | result |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for result in results:
        verdict = "pass" if result.ok else "**FAIL**: " + "; ".join(result.problems)[:200]
        lines.append(
            f"| {result.tool} | {versions.get(result.tool, '')} | {result.state} | "
            f"{'' if result.code is None else result.code} | {_shown(result.seen)} | "
            f"{result.upstream} | {result.helpers} | {result.note} | {verdict} |"
        )
    for key, why in NOT_RUN.items():
        lines.append(f"| {key} | | | | | | | | {why} |")
    lines.append("")
    return "\n".join(lines)


def _row_key(line: str) -> str | None:
    """The tool key of a table row (``None``: not a tool's row)."""
    if not line.startswith("| ") or line.startswith(("| tool ", "| --- ")):
        return None
    return line.split("|")[1].strip()


def merged(before: str, now: str, keys: set[str]) -> str:
    """``now`` (a run of the tools ``keys`` alone) with the rows of every
    other tool kept from ``before`` (the table written by an earlier run),
    in their place, and the run lines saying which rows are from when."""
    new_lines = now.splitlines()
    fresh = [line for line in new_lines if _row_key(line) in keys]
    old_lines = before.splitlines()
    earlier = next((line for line in old_lines if line.startswith("Run of ")), None)
    rows: list[str] = []
    for line in old_lines:
        key = _row_key(line)
        if key is None or key in NOT_RUN:
            continue
        if key in keys:
            rows += fresh
            fresh = []
        else:
            rows.append(line)
    rows += fresh  # tools the earlier table did not have
    out: list[str] = []
    for line in new_lines:
        key = _row_key(line)
        if line.startswith("Run of ") and earlier is not None:
            run_keys = f"({', '.join(sorted(keys))}); the other rows from "
            if run_keys in earlier:  # the same tools run again: the others' run stays
                stamp = earlier.split(run_keys, 1)[1].rstrip(".")
            elif "; the other rows from" in earlier:
                stamp = "earlier runs (this file's history says which)"
            else:
                stamp = "the run of " + earlier.removeprefix("Run of ").rstrip(".")
            run_of = line.removesuffix(".")
            line = f"{run_of} ({', '.join(sorted(keys))}); the other rows from {stamp}."
        elif key is not None and key not in NOT_RUN:
            if rows:
                out += rows
                rows = []
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if now.endswith("\n") else "")


def extra_rows(
    bench: Bench, tools: list[Tool], homes: Path, dead_url: str, *, with_client: bool
) -> list[Result]:
    """The team-key rows (each tool, and the gateway client) off duty and on
    duty, then the server-down rows (the gateway client, the LiteLLM proxy)."""
    results: list[Result] = []
    for state in TEAM_STATES:
        bench.travel(STATES[state])
        time.sleep(1.5)  # the LiteLLM callbacks follow the change stream
        for tool in tools:
            results.append(_said(run_tool(bench, tool, state, homes, with_team=True)))
        if with_client:
            results.append(_said(run_client_team(bench, state, homes)))
    if TEAM_LABEL in bench.gateways:
        results.append(_said(run_litellm_stranger(bench, homes)))
    if with_client:
        results.append(_said(run_client_down(bench, homes, dead_url)))
    if DOWN_LABEL in bench.gateways:
        results.append(_said(run_litellm_down(bench, homes)))
    return results


def _said(result: Result) -> Result:
    mark = "ok  " if result.ok else "FAIL"
    print(
        f"{mark} {result.tool:16} {result.state:9} exit={result.code} "
        f"upstream={result.upstream} {_shown(result.seen)} {'; '.join(result.problems)}",
        flush=True,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the real tools against a served Curfew")
    parser.add_argument("--only", default="", help="comma-separated tool keys")
    parser.add_argument("--write", type=Path, help="write the table here (docs/clients.md)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument(
        "--control",
        action="store_true",
        help="the control group: straight to the upstreams (off duty and winding must fail)",
    )
    args = parser.parse_args(argv)
    only = {key for key in args.only.split(",") if key}
    tools = [tool for tool in TOOLS if not only or tool.key in only]
    # The team-key and server-down rows (not in the control group: past Curfew
    # there is no team key and no Curfew to be down).
    extras = not args.control
    with_client = extras and (not only or CLIENT_KEY in only)
    gateways = extras and any(tool.gateway for tool in tools)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="curfew-clients-"))
    homes = workdir / "homes"
    homes.mkdir()
    bench = Bench(workdir, control=args.control)
    results: list[Result] = []
    try:
        dead_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        if any(tool.gateway for tool in tools):
            bench.start_litellm()
        if gateways:
            bench.start_gateway(TEAM_LABEL, token=bench.team_key, curfew_url=bench.app.base_url)
            bench.start_gateway(DOWN_LABEL, token=bench.token, curfew_url=dead_url)
        versions = {tool.key: version(tool) for tool in tools}
        if with_client:
            versions[CLIENT_KEY] = version(CLIENT_VERSION)
        for state, moment in STATES.items():
            bench.travel(moment)
            time.sleep(1.5)  # the LiteLLM callback follows the change stream
            for tool in tools:
                result = run_tool(bench, tool, state, homes)
                results.append(result)
                mark = "ok  " if result.ok else "FAIL"
                print(
                    f"{mark} {tool.key:16} {state:9} exit={result.code} upstream={result.upstream} "
                    f"helpers={result.helpers} {_shown(result.seen)} {'; '.join(result.problems)}",
                    flush=True,
                )
        if extras:
            results += extra_rows(bench, tools, homes, dead_url, with_client=with_client)
        # Claude Code and Codex with the hooks only (issue 42); in the control
        # group, the same runs without the hooks (which must then fail).
        hook_keys = [key for key in harness_hooks.HOOK_TOOLS if not only or key in only]
        for key in hook_keys:
            driven = next(tool for tool in TOOLS if tool.key == harness_hooks.HOOK_TOOLS[key])
            versions[key] = version(driven)
        if hook_keys:
            results += harness_hooks.hooks_rows(bench, homes, dead_url, hook_keys)
    finally:
        bench.stop()
        print(f"logs: {homes}" if args.keep else "", flush=True)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.control:
        # Every off-duty and winding run must have failed its checks, and every on-duty one passed.
        bitten = all(r.ok == (r.state == "on duty") for r in results)
        print(
            "control group:", "the checks bite" if bitten else "SOME CHECK DID NOT BITE", flush=True
        )
        return 0 if bitten else 1
    text = table(results, versions, time.monotonic() - started)
    if args.write is not None:
        if only and args.write.exists():
            # A few tools run: their rows replace theirs, the others' stay as run before.
            text = merged(args.write.read_text(encoding="utf-8"), text, only)
        args.write.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
