"""``make run`` as the README writes it, on a fresh checkout, and its verdict ``curl``.

Issue 21: on a fresh clone ``make run`` served every API and proxy door an
HTML 500 while the suite, which never ran that server, passed. So this test
runs the README's own command in a fresh ``git clone`` of the committed HEAD
(nothing the working tree has that a clone lacks), on a free port through the
Makefile's own ``PORT``, with nothing of this test run in its environment. It
makes its own ``.venv`` there: a real install of the pinned requirements, from
the package index through pip's cache, which takes about one to two minutes.
Then it reads the demo token ``make run`` prints, runs the README's verdict
``curl`` command itself (its text, taken from README.md), drives every door
(``tests/readme/doors.py``: the API, each proxy door with the real openai and
anthropic SDKs, the sign-in page and its static files, the capsule's socket),
checks that an edited template is served without a restart (auto-reload), and
that stopping it ends every process it started.

Without git, make or curl the test fails. Without a reachable package index it
is skipped locally with the reason, and fails in CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from curfew_testkit.server import free_port, wait_for_http
from tests.conftest import require
from tests.readme.doors import Served, assert_no_secret_logged, drive_every_door

#: The checkout under test: this file is tests/readme/ in it.
REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: What the README's examples call the server.
README_ADDRESS = "http://127.0.0.1:8000"
#: ``make run`` installs the pinned requirements first: a fresh install.
START_TIMEOUT = 420.0


# -- what the README says ---------------------------------------------------------------


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.M | re.S)
    assert found, f"README.md has no section {title!r}"
    return found.group(1)


def code_blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", section, re.M | re.S)


def readme_make_run() -> list[str]:
    """``make run`` from "Two commands", without its comment."""
    [block] = code_blocks(readme_section("Two commands"), "sh")
    [line] = [line for line in block.splitlines() if line.startswith("make run")]
    return line.split("#", 1)[0].split()


def readme_verdict_curl() -> tuple[str, str, dict[str, object]]:
    """From "Asking for a verdict": the token placeholder's prefix, the ``curl``
    command (with its continuation lines) and the answer the README shows."""
    section = readme_section("Asking for a verdict")
    block = code_blocks(section, "sh")[0]
    placeholder = re.search(r"^TOKEN=(\w+?_)", block, re.M)
    assert placeholder, block
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("curl "))
    end = start
    while lines[end].rstrip().endswith("\\"):
        end += 1
    command = "\n".join(lines[start : end + 1])
    shown = json.loads(code_blocks(section, "json")[0])
    return placeholder.group(1), command, shown


# -- a fresh machine --------------------------------------------------------------------


def fresh_environment() -> dict[str, str]:
    """This process's environment without what a fresh machine's shell would
    not have: this run's settings, its virtualenv, make's own variables."""
    dropped = {
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "DJANGO_SETTINGS_MODULE",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        # The Makefile's own ``?=`` variables: the test sets only PORT, on the command line.
        "PYTHON",
        "VENV",
        "HOST",
        "PORT",
    }
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith(("CURFEW_", "PYTEST_"))
    }
    if sys.prefix != sys.base_prefix:  # this run's virtualenv is on no fresh machine's PATH
        ours = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    return env


def package_index(env: dict[str, str]) -> str:
    """The index pip installs from (pip's own configuration, else PyPI)."""
    if env.get("PIP_INDEX_URL"):
        return env["PIP_INDEX_URL"]
    listed = subprocess.run(
        ["python3", "-m", "pip", "config", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    found = re.search(r"^(?:global|install)\.index-url='([^']+)'", listed, re.M)
    return found.group(1) if found else "https://pypi.org/simple"


def index_problem(index: str) -> str | None:
    """Why pip could not reach ``index`` now, or None."""
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/pip/", timeout=15):
            return None
    except (OSError, urllib.error.URLError) as error:
        return str(error)


def clone_head(destination: Path) -> Path:
    """A fresh clone of this repository's committed HEAD."""
    git = shutil.which("git")
    assert git, "git is needed to clone the checkout under test"
    head = subprocess.run(
        [git, "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    checkout = destination / "curfew"
    subprocess.run(
        [git, "clone", "--quiet", "--no-checkout", str(REPO), str(checkout)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    subprocess.run(
        [git, "checkout", "--quiet", "--detach", head],
        cwd=checkout,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return checkout


# -- the running command ----------------------------------------------------------------


def group_members(group: int) -> list[int]:
    """Live (not zombie) processes in process group ``group``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state != "Z":
            members.append(int(entry.name))
    return members


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class MakeRun:
    checkout: Path
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    token: str = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_output(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log(), re.M)
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"make run exited ({self.process.returncode}):\n{self.log()}")
            time.sleep(0.5)
        raise AssertionError(f"make run printed no {pattern!r} in {timeout}s:\n{self.log()}")

    def manage(self, *args: str) -> str:
        """``python3 manage.py ...`` in the checkout, as README "From a terminal" runs it."""
        done = subprocess.run(
            ["python3", "manage.py", *args],
            cwd=self.checkout,
            env=fresh_environment(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def stop(self) -> list[str]:
        """SIGTERM to the whole process group (make, uvicorn's reloader and its
        server child), as Ctrl-C in the terminal would reach them all; what was
        wrong with the stop, if anything."""
        problems = []
        group = self.process.pid  # its own session: the group leader is make
        if self.process.poll() is None:
            os.killpg(group, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                problems.append("make did not exit within 20 s of SIGTERM")
        deadline = time.monotonic() + 10
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = group_members(group)
        if left:
            problems.append(f"processes left running after the stop: {left}")
            os.killpg(group, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if port_open(self.port):
            problems.append(f"port {self.port} still answers")
        return problems


@pytest.fixture(scope="session")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    """``make run PORT=<free port>`` in a fresh clone, started, its token read."""
    assert shutil.which("make"), "make is needed: the README's command is `make run`"
    env = fresh_environment()
    index = package_index(env)
    problem = index_problem(index)
    require(problem is None, f"no package index at {index} for make run's install: {problem}")
    checkout = clone_head(tmp_path_factory.mktemp("fresh-clone"))
    assert not (checkout / ".venv").exists()
    port = free_port()
    log_path = checkout.parent / "make-run.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*readme_make_run(), f"PORT={port}"],
            cwd=checkout,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own: the stop reaches every child
        )
    running = MakeRun(checkout, process, port, log_path)
    try:
        running.token = running.wait_for_output(r"^demo API token: (\S+)$", START_TIMEOUT)[1]
        running.wait_for_output(rf"^Curfew is at http://127\.0\.0\.1:{port}/ ", 60)
        wait_for_http(
            f"{running.base_url}/api/v1/openapi.json",
            process,
            log_path,
            timeout=60,
            label="make run",
        )
        yield running
    finally:
        running.stop()


def test_make_run_as_the_readme_writes_it_serves_every_door(make_run: MakeRun) -> None:
    prefix, command, shown = readme_verdict_curl()
    assert make_run.token.startswith(prefix), "the printed token is what the README shows"
    assert (make_run.checkout / ".venv" / "bin" / "python").exists(), "its own virtualenv"
    assert "Started reloader process" in make_run.log(), "served by uvicorn, reloading"
    embed = make_run.manage("curfew", "embed-token", "--user", "demo").strip().splitlines()[-1]
    served = Served(make_run.base_url, make_run.token, embed)

    def the_readme_curl(served: Served) -> None:
        """README "Asking for a verdict", its text run by bash: only the port differs."""
        assert README_ADDRESS in command, command
        done = subprocess.run(
            ["bash", "-c", command.replace(README_ADDRESS, served.base_url)],
            env={**fresh_environment(), "TOKEN": served.token},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        # Every field the README shows, as shown ("…" elides a middle, "..." the rest).
        for key, value in shown.items():
            if key == "...":
                continue
            if isinstance(value, str) and "…" in value:
                head, tail = (part.strip() for part in value.split("…", 1))
                assert answer[key].startswith(head), key
                assert answer[key].endswith(tail), key
            else:
                assert answer[key] == value, (key, answer[key], value)

    def an_edited_template_without_a_restart(served: Served) -> None:
        """uvicorn's reloader watches templates too (Django caches them in debug)."""
        template = make_run.checkout / "templates" / "curfew" / "login.html"
        marker = f"<!-- edited {secrets.token_hex(4)} -->"
        block = "{% block content %}"
        text = template.read_text(encoding="utf-8")
        assert block in text
        template.write_text(text.replace(block, block + marker, 1), encoding="utf-8")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if marker in httpx.get(f"{served.base_url}/login/", timeout=5).text:
                    return
            except httpx.HTTPError:
                pass  # between the old server and the new one
            time.sleep(0.5)
        tail = make_run.log()[-800:]
        raise AssertionError(f"the edited template was not served in 60 s:\n{tail}")

    drive_every_door(
        served,
        also={
            "the README's verdict curl": the_readme_curl,
            "auto-reload (a template edit)": an_edited_template_without_a_restart,
        },
    )
    # make run prints its demo token once, on purpose (README); nothing else may.
    assert_no_secret_logged(make_run.log(), served, allowed=("demo API token: ",))
    assert make_run.stop() == [], make_run.log()
