"""``make clients``: real Claude Code and real Codex with Curfew's hooks only
(issue 42), Claude Code again with Curfew's plugin installed from this checkout
(``claude-code-plugin``), and real OpenCode with Curfew's plugin only
(``integrations/opencode``), pointed straight at the recording fake upstream,
no proxy.

Each tool is set up as the Integrations page's hooks rows say
(``claude-code-hooks``, ``codex-hooks`` in ``curfew_core/web/integrations/tool_setups.py``):
``curfew login`` with the key on stdin, the hooks file where the tool reads it,
the ``curfew`` command (``curfew_cli``, installed with the client) on PATH. The
tool's own provider is the fake upstream (as a subscription login's would be
its provider), so only the hooks can keep the curfew:

- off duty: no model call reaches the upstream, and the user sees why (Curfew);
- winding: the persona reaches the upstream in the prompt;
- on duty: the upstream's reply is shown, no persona, nothing of Curfew's added;
- server down (CURFEW_URL where nothing listens): work goes on (the upstream's
  reply shown) and the user is told (the hook's ``systemMessage``).

``--control`` runs the same without the hooks file: off duty, winding and
server down must then fail these checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curfew_core.web.integrations import tool_setups

if TYPE_CHECKING:
    from curfew_testkit.fake_upstream import RecordingFake
    from tests.clients.run import Bench, Result

#: The rows' keys (``--only``) and the tool each drives.
HOOK_TOOLS = {
    "claude-code-hooks": "claude-code",
    "claude-code-plugin": "claude-code",
    "codex-hooks": "codex",
    "opencode-plugin": "opencode",
}
#: Rows set up as the manual's plugin install says (``claude plugin marketplace add
#: CHECKOUT``, ``claude plugin install curfew@curfew``), with the login of the setup
#: named here and none of its files.
PLUGIN_ROWS = {"claude-code-plugin": "claude-code-hooks"}
PLUGIN_INSTALL = (
    ("plugin", "marketplace", "add", "{checkout}"),
    ("plugin", "install", "curfew@curfew"),
)
HOOK_STATES = ("off duty", "winding", "on duty")
FAKE_KEY = "sk-upstream-fake"


def _curfew_bin(homes: Path) -> Path:
    """A folder holding only the ``curfew`` command (the clients' venv's, or
    this project's), for PATH."""
    from tests.clients.run import PY_BIN

    found = shutil.which("curfew", path=f"{PY_BIN}:{Path(sys.executable).parent}")
    if found is None:
        raise RuntimeError("no curfew command: pip install ./client")
    folder = homes / "curfew-bin"
    folder.mkdir(exist_ok=True)
    link = folder / "curfew"
    if not link.exists():
        link.symlink_to(found)
    return folder


def _codex_config(upstream: str) -> str:
    """Codex's own provider, the fake upstream (on the Responses API)."""
    return (
        'model = "{model}"\nmodel_provider = "fake"\n\n'
        "[model_providers.fake]\n"
        'name = "Fake provider"\n'
        f'base_url = "{upstream}/v1"\n'
        'env_key = "FAKE_PROVIDER_KEY"\n'
        'wire_api = "responses"\n'
    )


def run_hooks_tool(
    bench: Bench, key: str, state: str, homes: Path, *, curfew_url: str, label: str
) -> Result:
    from tests.clients.run import MODEL, NPM_BIN, PROMPT, QUIET_ENV, Result, _model_calls

    tool = HOOK_TOOLS[key]
    home = homes / f"{key}-{label.replace(' ', '-')}"
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=homes))
    env = {
        "PATH": f"{NPM_BIN}:{_curfew_bin(homes)}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "LANG": "C.UTF-8",
        **QUIET_ENV,
    }
    setup = tool_setups.setup(PLUGIN_ROWS.get(key, key))
    for snippet in setup.snippets:
        text = snippet.render(base_url=curfew_url, token=bench.token, model=MODEL)
        if snippet.path is not None:
            if bench.control or key in PLUGIN_ROWS:
                continue  # the control group: the same run without the hooks
            target = home / snippet.path[2:]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text + "\n", encoding="utf-8")
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith(("mkdir -p ~/", "cp ")) and not bench.control:
                _copy_line(shlex.split(line), home)
            if line.startswith("curfew login"):
                # The key pasted when asked (stdin): never on the command line.
                subprocess.run(
                    shlex.split(line),
                    input=bench.token + "\n",
                    env=env,
                    text=True,
                    capture_output=True,
                    timeout=60,
                    check=True,
                )
    if key in PLUGIN_ROWS and not bench.control:
        _install_plugin(env, work)
    if tool == "claude-code":
        fake: RecordingFake = bench.anthropic
        env.update(
            {
                "ANTHROPIC_BASE_URL": fake.base_url,
                "ANTHROPIC_AUTH_TOKEN": FAKE_KEY,
                "ANTHROPIC_MODEL": MODEL,
                "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL,
            }
        )
        command = [str(NPM_BIN / "claude"), "-p", PROMPT]
        if label == "server down":
            # Print mode prints the answer alone; a hook's systemMessage (shown
            # interactively) is in its stream of events.
            command += ["--output-format", "stream-json", "--verbose"]
    elif tool == "opencode":
        fake = bench.openai
        # Its own provider, the fake upstream (no Curfew in its config: only the plugin).
        (work / "opencode.json").write_text(_opencode_config(fake.base_url), encoding="utf-8")
        env["FAKE_PROVIDER_KEY"] = FAKE_KEY
        command = [str(NPM_BIN / "opencode"), "run", PROMPT]
    else:
        fake = bench.openai
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            _codex_config(fake.base_url).replace("{model}", MODEL), encoding="utf-8"
        )
        env.update({"CODEX_HOME": str(codex_home), "FAKE_PROVIDER_KEY": FAKE_KEY})
        # Codex runs hooks a person has trusted (in its TUI); this harness wrote
        # them itself, the case the flag is for ("automation that already vets
        # hook sources").
        command = [
            str(NPM_BIN / "codex"),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            PROMPT,
        ]
    bench.reset()
    try:
        done = subprocess.run(
            command,
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
        seen, said, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as timeout:
        seen, said, code = f"[timed out after {timeout.timeout:.0f} s]", "", None
    (homes / f"{key}-{label.replace(' ', '-')}.log").write_text(
        f"$ {shlex.join(command)}\n{seen}\n--- stderr\n{said}\n", encoding="utf-8"
    )
    time.sleep(1.0)
    reached = _model_calls(list(fake.requests))
    helpers = [recorded for recorded in reached if _opencode_title(recorded)]
    # OpenCode's title agent asks with purpose "title", exempt by default: it
    # may reach the upstream in every state (the held-back call is the turn's).
    reached = [recorded for recorded in reached if recorded not in helpers]
    if tool == "opencode":
        seen, said = _plain(seen), _plain(said)
    if tool == "claude-code" and label == "server down":
        seen = _stream_shown(seen)
    # ``opencode run`` ends a turn its plugin stopped with an error (exit 1),
    # the plugin's words on stderr: for that row that is the expected end.
    stopped = tool == "opencode" and label == "off duty" and code == 1
    problems, words = check_hooks(
        label, seen + said, 0 if stopped else code, reached, bench.persona, tool=tool
    )
    if stopped:
        words += "; opencode run exits 1 on the stopped turn"
    if helpers:
        words += f"; {len(helpers)} title call(s) passed (exempt)"
    if tool == "codex" and label in CODEX_SHOWS:
        words += "; codex exec shows the hook's outcome, not its words"
        if not bench.control:
            # What a person at Codex's own screen is shown (its TUI, in a terminal).
            bench.reset()
            screen = _codex_tui([command[0], *command[3:]], env, work)
            (homes / f"{key}-{label.replace(' ', '-')}-tui.log").write_text(screen, "utf-8")
            time.sleep(1.0)
            in_tui = _model_calls(list(fake.requests))
            shown = _tui_excerpt(screen)
            seen = f"{seen.strip()}\ncodex (TUI): {shown}"
            told = TUI_SHOWS[label]
            if _squeezed(told) not in _squeezed(screen):
                problems.append(f"codex's TUI does not show {told!r}")
            if label == "off duty" and in_tui:
                problems.append(f"codex's TUI: {len(in_tui)} call(s) reached the upstream")
            words += f"; its TUI shows them, {len(in_tui)} call(s) upstream"
    return Result(key, label, code, seen + said, len(reached), 0, problems, words)


#: What Codex's TUI must show of the hook's words (spaces aside: it draws by
#: cursor positions).
TUI_SHOWS = {
    "off duty": "Blocked by hook Curfew: your AI is off duty",
    "server down": "Policy fail_open",
}


def _codex_tui(command: list[str], env: dict[str, str], work: Path, seconds: float = 45) -> str:
    """Codex run interactively (its TUI in a pseudo-terminal, the prompt on
    its command line) until its turn is done; the screen's text."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.chdir(work)
            tui_env = {**env, "TERM": "xterm-256color"}
            tui_env.pop("NO_COLOR", None)
            os.execve(command[0], command, tui_env)  # noqa: S606 (the tool, by its path)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    raw = b""
    deadline = time.monotonic() + seconds
    done_at: float | None = None
    try:
        while time.monotonic() < deadline and (done_at is None or time.monotonic() < done_at):
            ready, _, _ = select.select([fd], [], [], 0.25)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            raw += chunk
            if b"\x1b[6n" in chunk:  # where is the cursor? (asked at start)
                os.write(fd, b"\x1b[1;1R")
            if done_at is None and b"state=done" in raw:
                done_at = time.monotonic() + 1.0  # the turn is over: draw its end
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return _screen_text(raw)


_ESCAPES = re.compile(
    r"\x1b\[(\d+);(\d+)H|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?<>=]*[ -/]*[@-~]"
    r"|\x1b[()][0-9A-B]|\x1b[=>78DEM]|([^\x1b]+)"
)


def _screen_text(raw: bytes) -> str:
    """A terminal's output as text: a cursor move within a row is a space,
    to another row a new line; colours and the rest dropped."""
    out: list[str] = []
    row = None
    for found in _ESCAPES.finditer(raw.decode("utf-8", "replace")):
        if found.group(1):
            out.append(" " if found.group(1) == row else "\n")
            row = found.group(1)
        elif found.group(3):
            out.append(found.group(3))
    return re.sub(r"[ \t]+", " ", "".join(out))


def _tui_excerpt(screen: str) -> str:
    """The lines the hook's words are on (``Blocked by hook`` and what
    follows it, or the outage's warning)."""
    lines = [line.strip() for line in screen.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if "Blocked by hook" in line:
            return " / ".join(lines[index : index + 3])
    said = [line for line in lines if "Curfew" in line]
    return " / ".join(dict.fromkeys(said)) or "(nothing of Curfew's)"


def _squeezed(text: str) -> str:
    """Without spaces and the TUI's tree marks (``└``, ``│``, ``•``)."""
    return re.sub(r"[\s└│├•]+", "", text)


def _install_plugin(env: dict[str, str], work: Path) -> None:
    """Curfew's Claude Code plugin from this checkout, its marketplace."""
    from curfew_testkit.server import ROOT
    from tests.clients.run import NPM_BIN

    for words in PLUGIN_INSTALL:
        subprocess.run(
            [str(NPM_BIN / "claude"), *(word.format(checkout=ROOT) for word in words)],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def _copy_line(words: list[str], home: Path) -> None:
    """A snippet's ``mkdir -p ~/…`` or ``cp FILE ~/…/`` (the file from this
    checkout), done in the tool's home."""
    from curfew_testkit.server import ROOT

    if words[:2] == ["mkdir", "-p"]:
        (home / words[2][2:]).mkdir(parents=True, exist_ok=True)
    elif words[0] == "cp" and len(words) == 3 and words[2].startswith("~/"):
        target = home / words[2][2:]
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / words[1], target)


def _opencode_config(upstream: str) -> str:
    from tests.clients.run import MODEL

    return json.dumps(
        {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake provider",
                    "options": {"baseURL": f"{upstream}/v1", "apiKey": "{env:FAKE_PROVIDER_KEY}"},
                    "models": {MODEL: {}},
                }
            },
            "model": f"fake/{MODEL}",
            "small_model": f"fake/{MODEL}",
        },
        indent=2,
    )


def _stream_shown(stream: str) -> str:
    """What Claude Code shows of a ``stream-json`` run: the answer, then
    each hook's ``systemMessage`` (a warning to the user)."""
    shown: list[str] = []
    answer: list[str] = []
    for line in stream.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("subtype") == "hook_response":
            try:
                output = json.loads(item.get("output") or "null")
            except ValueError:
                output = None
            if isinstance(output, dict) and output.get("systemMessage"):
                shown.append(f"{item.get('hook_event')}: {output['systemMessage']}")
        elif item.get("type") == "result" and isinstance(item.get("result"), str):
            answer.append(item["result"])
    return "\n".join(answer + shown) if answer + shown else stream


def _plain(text: str) -> str:
    """Without terminal colours (OpenCode writes them whatever NO_COLOR says)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _opencode_title(recorded: Any) -> bool:
    """OpenCode's title agent's call (its system prompt says so)."""
    text = recorded.body.decode("utf-8", "replace")
    return "You are a title generator" in text


def _carries(recorded: Any, text: str) -> bool:
    return json.dumps(text, ensure_ascii=False)[1:-1] in recorded.body.decode("utf-8", "replace")


#: What ``codex exec`` (0.171) shows of a hook: its event and outcome, not the
#: block's reason nor a ``systemMessage`` (the words are held by the client's
#: unit tests against Codex's documented output).
CODEX_SHOWS = {
    "off duty": "hook: UserPromptSubmit Blocked",
    "server down": "hook: UserPromptSubmit",
}


def check_hooks(
    state: str, seen: str, code: int | None, reached: list[Any], persona: str, *, tool: str
) -> tuple[list[str], str]:
    """What is wrong with one hooks-only run, and what reached the upstream, in words."""
    problems = [] if code == 0 else [f"exit code {code}"]
    told = CODEX_SHOWS.get(state, "Curfew") if tool == "codex" else "Curfew"
    if tool != "codex" and state == "server down":
        told = "Policy fail_open"  # the outage and the policy applied, in the hook's words
    if state == "off duty":
        if told not in seen:
            problems.append(f"the user is not told ({told!r} not shown)")
        if reached:
            problems.append(f"{len(reached)} call(s) reached the upstream")
        return problems, "nothing" if not reached else f"{len(reached)} call(s)"
    if not reached:
        problems.append("nothing reached the upstream")
    with_persona = sum(1 for recorded in reached if _carries(recorded, persona))
    if state == "winding":
        if not with_persona:
            problems.append("the persona did not reach the upstream")
        return problems, f"{len(reached)} call(s), {with_persona} with the persona"
    if "Hello from the fake" not in seen:
        problems.append("the upstream's reply is not shown")
    if with_persona:
        problems.append(f"{with_persona} call(s) with the persona")
    if state == "server down" and told not in seen:
        problems.append(f"the outage was not said to the user ({told!r} not shown)")
    words = f"{len(reached)} call(s), untouched by Curfew"
    return problems, words + ("; the outage said" if state == "server down" else "")


def hooks_rows(bench: Bench, homes: Path, dead_url: str, keys: list[str]) -> list[Result]:
    """Each hooks row off duty, winding and on duty, then with the server down."""
    from tests.clients.run import STATES, _said

    results: list[Result] = []
    for state in HOOK_STATES:
        bench.travel(STATES[state])
        for key in keys:
            url = bench.app.base_url
            results.append(
                _said(run_hooks_tool(bench, key, state, homes, curfew_url=url, label=state))
            )
    for key in keys:
        results.append(
            _said(
                run_hooks_tool(
                    bench, key, "on duty", homes, curfew_url=dead_url, label="server down"
                )
            )
        )
    return results
