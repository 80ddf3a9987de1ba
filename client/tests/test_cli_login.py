"""``curfew login URL``: the token from stdin (never argv), checked, stored mode 600."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

from curfew_cli.config import load
from curfew_cli.main import main
from harness_samples import state
from harness_server import URL, FakeServer, environment


def login(tmp_path: Path, server: FakeServer, token: str = "cfw_stored\n") -> tuple[int, str]:
    env = environment(tmp_path)
    del env["CURFEW_URL"], env["CURFEW_TOKEN"]
    out = io.StringIO()
    code = main(
        ["login", URL], env=env, stdin=io.StringIO(token), stdout=out, transport=server.transport
    )
    return code, out.getvalue()


def test_the_token_is_stored_for_its_owner_only(tmp_path: Path) -> None:
    server = FakeServer(state=state())
    code, said = login(tmp_path, server)
    assert code == 0
    token = tmp_path / "config" / "curfew" / "token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    assert token.read_text() == "cfw_stored\n"
    assert "now: winding" in said
    assert "cfw_stored" not in said
    assert server.requests[0].headers["Authorization"] == "Bearer cfw_stored"
    settings = load({"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    assert (settings.url, settings.token) == (URL, "cfw_stored")


def test_a_token_file_left_readable_is_made_private(tmp_path: Path) -> None:
    token = tmp_path / "config" / "curfew" / "token"
    token.parent.mkdir(parents=True)
    token.write_text("old\n")
    token.chmod(0o644)
    assert login(tmp_path, FakeServer(state=state()))[0] == 0
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert token.read_text() == "cfw_stored\n"


def test_a_refused_token_is_not_stored(tmp_path: Path) -> None:
    code, said = login(tmp_path, FakeServer(status=401))
    assert code == 1
    assert "refused" in said
    assert not (tmp_path / "config" / "curfew" / "token").exists()


def test_an_unreachable_server_stores_it_saying_so(tmp_path: Path) -> None:
    code, said = login(tmp_path, FakeServer(down=True))
    assert code == 0
    assert "could not check" in said
    assert (tmp_path / "config" / "curfew" / "token").exists()


def test_no_token_on_the_command_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["login", URL, "cfw_in_argv"], env=environment(tmp_path), stdin=io.StringIO(""))
    assert login(tmp_path, FakeServer(state=state()), token="\n")[0] == 2


def test_environment_wins_over_the_stored_login(tmp_path: Path) -> None:
    login(tmp_path, FakeServer(state=state()))
    env = environment(tmp_path, CURFEW_TOKEN="cfw_from_env")
    assert load(env).token == "cfw_from_env"
