"""The installed ``curfew`` command, started as a harness starts it, imports
neither httpx nor pydantic (nor the gateway client) on its warm paths: a
status line answered from its cache, a hook answered from a cached verdict.

Read from ``python -X importtime`` of the installed command itself (the
script pip installs, ``client/scripts/curfew``), so an import added anywhere
on the way (the script, ``curfew_cli.main``, a helper module) is caught, not
only one reached from ``main()``. A warm status line imports no ``re``,
``json`` or ``enum`` either (issue 42: about 10 ms of its 30 ms; the
launcher pip writes for a ``[project.scripts]`` entry point imports ``re``). The forked sender of
a warm hook's reports writes nothing to the hook's stderr (it is detached
first), so what is read is the hook's own start. Each test has its control:
the same command with nothing cached must ask, and there the slow imports
(or urllib's) do show, so the reading of ``-X importtime`` is not blind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curfew_cli import verdicts
from curfew_cli.config import load
from curfew_cli.status import CACHE_FILE, Status, summarize, write_lines
from harness_samples import ASLEEP, SESSION, WORKING, event, state
from harness_server import environment

#: Never on a warm path (the gateway client brings both).
HEAVY = ("httpx", "pydantic", "curfew_client")
#: Never on a warm status line: ``json`` imports ``re``, which imports ``enum``.
LIGHT_ONLY = ("re", "json", "enum")
#: Nothing listens there: a command that asks is told "unreachable" at once.
NOWHERE = "http://127.0.0.1:9"


def _command() -> str:
    found = shutil.which("curfew", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("no curfew command beside this Python (pip install -e ./client)")
    return found


def _names(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says were imported (top names too)."""
    names: set[str] = set()
    for line in stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        name = line.rsplit("|", 1)[1].strip()
        names |= {name, name.split(".")[0]}
    return names


def python_alone() -> set[str]:
    """What this Python imports starting with nothing to run (``site`` and
    the ``.pth`` files of this environment): not the command's doing."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return _names(done.stderr)


def imported(tmp_path: Path, words: list[str], stdin: str = "", **env: str) -> tuple[str, set[str]]:
    """What the console script printed, and every module it imported (top names too)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", _command(), *words],
        input=stdin,
        env={**os.environ, **environment(tmp_path, CURFEW_URL=NOWHERE), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = _names(done.stderr)
    assert "curfew_cli.main" in names, done.stderr[-2000:]  # the reading is not empty
    return done.stdout, names


def test_a_warm_status_line_imports_no_httpx_no_pydantic(tmp_path: Path) -> None:
    settings = load(environment(tmp_path, CURFEW_URL=NOWHERE))
    cached = tmp_path / "cache" / "curfew" / CACHE_FILE
    write_lines(str(cached), settings.identity, Status(summarize(state())), time.time() + 3600)
    out, names = imported(tmp_path, ["status"])
    assert out == "sleepy · budget 560 · asleep at 03:00\n"
    assert names.isdisjoint(HEAVY), sorted(names & set(HEAVY))
    # Control: nothing cached, it asks the server (through the gateway client).
    cached.unlink()
    out, names = imported(tmp_path, ["status"])
    assert out == "curfew: unreachable\n"
    assert set(HEAVY) <= names


@pytest.mark.parametrize(
    ("words", "line"),
    [
        (["status"], "sleepy · budget 560 · asleep at 03:00"),
        (
            ["status", "--format", "tmux"],
            "#[fg=yellow]sleepy#[default] · budget 560 · asleep at 03:00",
        ),
        (
            ["status", "--format=plain", "--color=always"],
            "\x1b[33msleepy\x1b[0m · budget 560 · asleep at 03:00",
        ),
        (["status", "--format", "json"], '"line": "sleepy · budget 560 · asleep at 03:00"'),
    ],
)
def test_a_warm_status_line_imports_no_re_json_or_enum(
    words: list[str], line: str, tmp_path: Path
) -> None:
    """The installed command as a status bar starts it, its cache fresh: it
    reads a file of lines and prints one (issue 42: ``re``, from pip's entry
    point launcher or from ``json``, cost about 10 ms of the 30)."""
    settings = load(environment(tmp_path, CURFEW_URL=NOWHERE))
    cached = tmp_path / "cache" / "curfew" / CACHE_FILE
    write_lines(str(cached), settings.identity, Status(summarize(state())), time.time() + 3600)
    out, names = imported(tmp_path, words)
    assert line in out
    own = names - python_alone()
    assert own.isdisjoint(LIGHT_ONLY), sorted(own & set(LIGHT_ONLY))
    # Control: nothing cached, it asks the server, and its JSON imports them.
    cached.unlink()
    out, names = imported(tmp_path, words)
    assert "unreachable" in out
    assert set(LIGHT_ONLY) <= names - python_alone()


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_a_warm_hook_imports_no_httpx_no_pydantic(tool: str, tmp_path: Path) -> None:
    settings = load(environment(tmp_path, CURFEW_URL=NOWHERE))
    cache = str(tmp_path / "cache" / "curfew")
    far = {**ASLEEP, "valid_until": "2099-01-01T00:00:00+00:00"}
    file = verdicts.path(cache, settings.identity, SESSION, False)
    verdicts.write(file, settings.identity, SESSION, False, far, time.time())
    sent = json.dumps(event(tool, "PreToolUse"))
    out, names = imported(tmp_path, ["hook", tool], sent)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert names.isdisjoint(HEAVY), sorted(names & set(HEAVY))
    assert "urllib.request" not in names  # it asked nothing
    # Control: nothing cached, it asks (urllib), still without the heavy ones.
    os.unlink(file)
    out, names = imported(tmp_path, ["hook", tool], sent)
    assert "fail_open" in json.loads(out)["systemMessage"]
    assert "urllib.request" in names
    assert names.isdisjoint(HEAVY)


def test_a_warm_hook_that_passes_imports_no_datetime(tmp_path: Path) -> None:
    """Only a block says until when (``datetime``): a pass reads the cached
    ``until`` the cold path wrote, in epoch seconds."""
    settings = load(environment(tmp_path, CURFEW_URL=NOWHERE))
    cache = str(tmp_path / "cache" / "curfew")
    far = {**WORKING, "valid_until": "2099-01-01T00:00:00+00:00"}
    file = verdicts.path(cache, settings.identity, SESSION, False)
    verdicts.write(file, settings.identity, SESSION, False, far, time.time())
    sent = json.dumps(event("claude-code", "PreToolUse"))
    out, names = imported(tmp_path, ["hook", "claude-code"], sent)
    assert out == ""  # working: nothing to say
    assert "urllib.request" not in names  # answered from the cache
    assert "datetime" not in names
    # Control: asleep, the tool call is denied saying until when, with datetime.
    asleep = {**ASLEEP, "valid_until": far["valid_until"]}
    verdicts.write(file, settings.identity, SESSION, False, asleep, time.time())
    out, names = imported(tmp_path, ["hook", "claude-code"], sent)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "datetime" in names


def test_a_warm_hook_tells_the_users_hour_without_importing_zoneinfo(tmp_path: Path) -> None:
    """Until when, in the user's zone (issue 42) on a machine in UTC: the cold
    path wrote the time in the user's zone beside the verdict, so a warm
    block reads it and needs no ``zoneinfo``."""
    settings = load(environment(tmp_path, CURFEW_URL=NOWHERE))
    cache = str(tmp_path / "cache" / "curfew")
    # 00:00 UTC is 08:00 in Shanghai.
    asleep = {**ASLEEP, "timezone": "Asia/Shanghai", "valid_until": "2099-01-01T00:00:00+00:00"}
    file = verdicts.path(cache, settings.identity, SESSION, False)
    verdicts.write(file, settings.identity, SESSION, False, asleep, time.time())
    sent = json.dumps(event("claude-code", "UserPromptSubmit"))
    out, names = imported(tmp_path, ["hook", "claude-code"], sent, TZ="UTC")
    assert "asleep until Thu 08:00." in json.loads(out)["reason"]
    assert "urllib.request" not in names  # answered from the cache
    assert "zoneinfo" not in names
    # Control: an older server's verdict names no zone: the machine's (UTC) it is.
    older = {key: value for key, value in asleep.items() if key != "timezone"}
    verdicts.write(file, settings.identity, SESSION, False, older, time.time())
    out, names = imported(tmp_path, ["hook", "claude-code"], sent, TZ="UTC")
    assert "asleep until Thu 00:00." in json.loads(out)["reason"]
