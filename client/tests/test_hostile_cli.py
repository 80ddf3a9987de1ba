"""The ``curfew`` command against hostile files, input and servers (issue 41).

- ``curfew login``: the token file is 600 and a file of its own, also when a
  file with a wider mode or a symbolic link to elsewhere held its name;
- ``CURFEW_URL`` (or ``curfew login URL``) that is not ``http(s)://`` is
  refused before anything is asked or stored;
- a hook event nested past Python's stack is no event (no traceback);
- a server answering garbage, or trickling its answer, is a status line that
  says so (no traceback, no process held).
"""

from __future__ import annotations

import io
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from curfew_cli.main import main
from wire_samples import STATE, WINDING

NOT_HTTP = ["file:///etc/passwd", "ftp://curfew", "/etc/passwd", "http://", "javascript:x"]


def env_for(tmp_path: Path, **more: str) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        **more,
    }


def server(state: dict[str, Any] = STATE, verdict: dict[str, Any] = WINDING) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=state if request.url.path.endswith("/state") else verdict)

    return httpx.MockTransport(handler)


def run(argv: list[str], env: dict[str, str], stdin: str = "", transport: Any = None) -> Any:
    out = io.StringIO()
    code = main(argv, env=env, stdin=io.StringIO(stdin), stdout=out, transport=transport)
    return code, out.getvalue()


def test_login_replaces_a_symlink_and_writes_nothing_through_it(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    folder = tmp_path / "config" / "curfew"
    folder.mkdir(parents=True)
    victim = tmp_path / "elsewhere"
    victim.write_text("someone else's file\n")
    victim.chmod(0o644)
    (folder / "token").symlink_to(victim)
    (folder / "url").symlink_to(victim)
    code, said = run(["login", "http://curfew"], env, "cfw_secret\n", server())
    assert code == 0, said
    assert victim.read_text() == "someone else's file\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    token = folder / "token"
    assert not token.is_symlink()
    assert token.read_text() == "cfw_secret\n"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert sorted(os.listdir(folder)) == ["token", "url"]  # no temporary file left


def test_login_narrows_a_wider_token_file(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    folder = tmp_path / "config" / "curfew"
    folder.mkdir(parents=True)
    (folder / "token").write_text("old\n")
    (folder / "token").chmod(0o666)
    assert run(["login", "http://curfew"], env, "cfw_new\n", server())[0] == 0
    assert stat.S_IMODE((folder / "token").stat().st_mode) == 0o600
    assert (folder / "token").read_text() == "cfw_new\n"


@pytest.mark.parametrize("url", NOT_HTTP)
def test_login_refuses_an_address_that_is_not_http(tmp_path: Path, url: str) -> None:
    asked: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(500)

    transport = httpx.MockTransport(handler)
    code, said = run(["login", url], env_for(tmp_path), "cfw_secret\n", transport)
    assert code == 2
    assert "http:// or https://" in said
    assert "nothing stored" in said
    assert not (tmp_path / "config").exists()
    assert asked == []


@pytest.mark.parametrize("url", NOT_HTTP)
def test_status_and_hook_refuse_a_curfew_url_that_is_not_http(tmp_path: Path, url: str) -> None:
    env = env_for(tmp_path, CURFEW_URL=url, CURFEW_TOKEN="cfw_t")
    code, said = run(["status"], env, "", server())
    assert code == 0
    assert said == "curfew: CURFEW_URL is not http(s)://\n"
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s"})
    code, said = run(["hook", "claude-code"], env, event, server())
    assert code == 0
    assert "http:// or https://" in json.loads(said)["systemMessage"]


@pytest.mark.parametrize("raw", ["[" * 200_000, '{"a":' * 100_000, "\x00", "not json"])
def test_a_hook_event_that_is_no_json_is_said_not_raised(tmp_path: Path, raw: str) -> None:
    env = env_for(tmp_path, CURFEW_URL="http://curfew", CURFEW_TOKEN="cfw_t")
    code, said = run(["hook", "claude-code"], env, raw, server())
    assert code == 0
    assert "not JSON" in json.loads(said)["systemMessage"]


GARBAGE_STATES = [
    {"timezone": "Not/AZone"},
    {"timezone": "../../../../etc/passwd"},
    {"timezone": ""},
    {"at": "9999-12-31T23:59:59-23:59"},
    {"override": "off", "override_until": "9999-12-31T23:59:59-23:59"},
]


@pytest.mark.parametrize("garbage", GARBAGE_STATES, ids=lambda over: ",".join(over))
def test_a_garbage_state_is_a_status_line_not_a_traceback(
    tmp_path: Path, garbage: dict[str, Any]
) -> None:
    env = env_for(tmp_path, CURFEW_URL="http://curfew", CURFEW_TOKEN="cfw_t")
    code, said = run(["status"], env, "", server(state={**STATE, **garbage}))
    assert code == 0
    assert said == "curfew: not a Curfew server\n"


def test_a_trickling_state_answer_does_not_hold_the_status_bar(tmp_path: Path) -> None:
    sent = [0]

    def trickle() -> Iterator[bytes]:
        while sent[0] < 10_000:  # 100 s if read to its end
            time.sleep(0.01)
            sent[0] += 1
            yield b" "

    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=trickle()))
    env = env_for(tmp_path, CURFEW_URL="http://curfew", CURFEW_TOKEN="cfw_t")
    code, said = run(["status"], env, "", transport)
    assert code == 0
    assert said == "curfew: unreachable\n"
    assert sent[0] < 1000
