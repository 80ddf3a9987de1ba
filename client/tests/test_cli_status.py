"""``curfew status``: the line in each format, its cache, and its start
without httpx or pydantic while the cache is fresh."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from curfew_cli.config import load
from curfew_cli.main import _parser, _status_options, main
from curfew_cli.status import (
    CACHE_FILE,
    MAX_AGE,
    RETRY,
    Status,
    current,
    read_cache,
    render,
    summarize,
    write_lines,
)
from harness_samples import state
from harness_server import FakeServer, environment


def status(tmp_path: Path, server: FakeServer, *args: str, **env: str) -> str:
    out = io.StringIO()
    assert (
        main(
            ["status", *args],
            env=environment(tmp_path, **env),
            stdout=out,
            transport=server.transport,
        )
        == 0
    )
    return out.getvalue().rstrip("\n")


def test_the_line_says_the_state_the_budget_and_the_next_change(tmp_path: Path) -> None:
    assert status(tmp_path, FakeServer(state=state())) == "sleepy · budget 560 · asleep at 03:00"


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"state": "on-duty", "budget": None, "at": "2026-09-30T05:00:00+00:00"},
            "working · sleepy at 22:00",
        ),
        (
            {"state": "lights-out", "budget": None, "at": "2026-09-29T20:00:00+00:00"},
            "asleep · working at 07:00",
        ),
        (
            {
                "state": "on-duty",
                "override": "overtime",
                "override_until": "2026-09-29T18:00:00+00:00",
            },
            "working · overtime · sleepy at 02:00",
        ),
        ({"state": "off-duty", "override": "off", "override_until": None}, "off duty"),
        ({"dry_run": True}, "sleepy · budget 560 · asleep at 03:00 · only watching"),
        ({"enabled": False}, "curfew off"),
    ],
)
def test_the_line_in_each_state(changes: dict[str, Any], line: str, tmp_path: Path) -> None:
    assert status(tmp_path, FakeServer(state=state(**changes))) == line


def test_formats(tmp_path: Path) -> None:
    summary = summarize(state())
    found = Status(summary)
    assert render(found, "tmux") == "#[fg=yellow]sleepy#[default] · budget 560 · asleep at 03:00"
    assert render(found, "plain", colour=True) == (
        "\x1b[33msleepy\x1b[0m · budget 560 · asleep at 03:00"
    )
    as_json = json.loads(render(found, "json"))
    assert as_json["state"] == "winding"
    assert as_json["words"] == "sleepy"
    assert as_json["line"] == "sleepy · budget 560 · asleep at 03:00"
    assert as_json["next"] == {"state": "lights-out", "at": "03:00"}
    assert as_json["budget"] == 560


def test_colour_only_on_a_terminal(tmp_path: Path) -> None:
    server = FakeServer(state=state())
    assert "\x1b[" not in status(tmp_path, server)  # a pipe (StringIO is no terminal)
    assert "\x1b[33m" in status(tmp_path, server, "--color", "always")  # control

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    main(["status"], env=environment(tmp_path), stdout=out, transport=server.transport)
    assert "\x1b[33m" in out.getvalue()
    out = Terminal()
    main(
        ["status"], env=environment(tmp_path, NO_COLOR="1"), stdout=out, transport=server.transport
    )
    assert "\x1b[" not in out.getvalue()


def test_answered_from_the_cache_while_fresh(tmp_path: Path) -> None:
    server = FakeServer(state=state(valid_until="2100-01-01T00:00:00+00:00"))
    settings, env = load(environment(tmp_path)), environment(tmp_path)
    now = time.time()
    assert current(settings, env, now=now, transport=server.transport).cached is False
    again = current(settings, env, now=now + MAX_AGE - 1, transport=server.transport)
    assert again.cached is True
    assert len(server.requests) == 1
    # Past MAX_AGE (saves and overrides are not predictable), it asks again.
    current(settings, env, now=now + MAX_AGE + 1, transport=server.transport)
    assert len(server.requests) == 2


def test_the_cache_ends_at_valid_until(tmp_path: Path) -> None:
    now = time.time()
    soon = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now + 5))
    server = FakeServer(state=state(valid_until=soon))
    settings, env = load(environment(tmp_path)), environment(tmp_path)
    current(settings, env, now=now, transport=server.transport)
    current(settings, env, now=now + 10, transport=server.transport)
    assert len(server.requests) == 2


def test_another_server_or_token_does_not_read_the_cache(tmp_path: Path) -> None:
    server = FakeServer(state=state(valid_until="2100-01-01T00:00:00+00:00"))
    status(tmp_path, server)
    status(tmp_path, server, CURFEW_TOKEN="cfw_another")
    assert len(server.requests) == 2
    cached = (tmp_path / "cache" / "curfew" / CACHE_FILE).read_text()
    assert "cfw_" not in cached  # the token is not written to the cache


def test_an_outage_is_said_and_not_asked_again_every_time(tmp_path: Path) -> None:
    server = FakeServer(down=True)
    settings, env = load(environment(tmp_path)), environment(tmp_path)
    now = time.time()
    assert render(current(settings, env, now=now, transport=server.transport)) == (
        "curfew: unreachable"
    )
    current(settings, env, now=now + RETRY - 1, transport=server.transport)
    assert len(server.requests) == 1
    current(settings, env, now=now + RETRY + 1, transport=server.transport)
    assert len(server.requests) == 2


def test_a_refused_token_and_no_setup_are_said(tmp_path: Path) -> None:
    assert status(tmp_path, FakeServer(status=401)) == "curfew: token refused"
    env = environment(tmp_path)
    del env["CURFEW_URL"]
    out = io.StringIO()
    main(["status"], env=env, stdout=out)
    assert out.getvalue().startswith("curfew: not set up")


def _run_status(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **environment(tmp_path, CURFEW_URL="http://127.0.0.1:9")}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )


#: Imported only off the cached path (asking the server, or argparse for help;
#: ``json``, and the ``re`` and ``enum`` it brings, to read or write JSON).
SLOW = (
    "httpx",
    "pydantic",
    "curfew_client",
    "argparse",
    "dataclasses",
    "pathlib",
    "zoneinfo",
    "json",
    "re",
    "enum",
)
PROBE = (
    "import sys\n"
    "from curfew_cli.main import main\n"
    "main(['status', '--format', 'plain'])\n"
    f"print(*[name in sys.modules for name in {SLOW!r}])\n"
)


def test_a_fresh_status_imports_neither_httpx_nor_pydantic(tmp_path: Path) -> None:
    env = environment(tmp_path, CURFEW_URL="http://127.0.0.1:9")
    settings = load(env)
    path = tmp_path / "cache" / "curfew" / CACHE_FILE
    write_lines(str(path), settings.identity, Status(summarize(state())), time.time() + 3600)
    lines = _run_status(tmp_path, PROBE).stdout.splitlines()
    assert lines == ["sleepy · budget 560 · asleep at 03:00", " ".join(["False"] * len(SLOW))]
    # Control: with nothing cached it must ask, and then imports httpx and the client.
    path.unlink()
    line, imported = _run_status(tmp_path, PROBE).stdout.splitlines()
    assert line == "curfew: unreachable"
    assert imported.split()[:3] == ["True", "True", "True"]


#: Answers in each shape: a state, overtime, curfew off, only watching, a failure.
SHOWN = [
    Status(summarize(state())),
    Status(summarize(state(state="on-duty", budget=None, override="overtime"))),
    Status(summarize(state(enabled=False))),
    Status(summarize(state(dry_run=True, state="lights-out", budget=None))),
    Status(None, "unreachable"),
    Status(None, "server answered HTTP 502"),
]


@pytest.mark.parametrize("shown", SHOWN)
@pytest.mark.parametrize(
    ("fmt", "colour"), [(f, c) for f in ("plain", "tmux", "json") for c in (False, True)]
)
def test_a_cached_line_is_the_line_rendered(
    shown: Status, fmt: Any, colour: bool, tmp_path: Path
) -> None:
    """The cache keeps the rendered lines: read back, each format and colour
    says what rendering the answer says (its JSON: ``cached``)."""
    path = str(tmp_path / CACHE_FILE)
    now = time.time()
    write_lines(path, "me", shown, now + 5)
    cached = read_cache(path, "me", now)
    assert cached is not None
    assert cached.cached is True
    assert cached.known is shown.known
    assert cached.error == shown.error
    again = Status(shown.summary, shown.error, cached=True)
    assert render(cached, fmt, colour=colour) == render(again, fmt, colour=colour)
    # Control: not past ``until``, nor for another identity.
    assert read_cache(path, "me", now + 5) is None
    assert read_cache(path, "another", now) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        '{"identity": "me", "summary": {}, "until": 1e20}',  # the JSON cache of 0.2.0
        "curfew-status 1\nme\nnan\n\na\nb\nc\nd\n",
        "curfew-status 1\nme\n1e20\n\na\nb\nc\n",  # a line short
        "curfew-status 1\nme\n1e20\n\na\nb\nc\nd",  # cut before its end
        "curfew-status 2\nme\n1e20\n\na\nb\nc\nd\n",
    ],
)
def test_a_cache_it_cannot_read_is_asked_again(text: str, tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    path.write_text(text)
    assert read_cache(str(path), "me", time.time()) is None
    # Control: the same layout, whole and fresh, is read.
    path.write_text("curfew-status 1\nme\n1e20\n\na\nb\nc\nd\n")
    cached = read_cache(str(path), "me", time.time())
    assert cached is not None
    assert render(cached, "tmux") == "c"


def test_a_line_break_from_the_server_is_not_cached(tmp_path: Path) -> None:
    path = str(tmp_path / CACHE_FILE)
    write_lines(path, "me", Status(None, "odd\nanswer"), time.time() + 5)
    assert not os.path.exists(path)


@pytest.mark.parametrize(
    "words",
    [
        ["status"],
        ["status", "--format", "tmux"],
        ["status", "--format=json", "--color", "never"],
        ["status", "--color=always", "--format", "plain"],
    ],
)
def test_the_quick_reading_agrees_with_the_parser(words: list[str]) -> None:
    parsed = _parser().parse_args(words)
    assert _status_options(words) == (parsed.format, parsed.color)


@pytest.mark.parametrize(
    "words", [["status", "--format", "xml"], ["status", "--help"], ["status", "--format"], ["hook"]]
)
def test_anything_else_goes_to_the_parser(words: list[str]) -> None:
    assert _status_options(words) is None
