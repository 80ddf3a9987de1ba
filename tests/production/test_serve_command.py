"""``bin/serve`` refuses what it cannot run safely, before touching anything.

(The full command, prepare and run, is exercised by the load test.)
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from curfew_testkit.server import ROOT


def serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "bin" / "serve"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_will_not_start_without_a_secret_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    done = serve(env=env)
    assert done.returncode != 0
    assert "SECRET_KEY must be set" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()  # nothing migrated


def test_an_unknown_mode_is_refused_with_the_usage(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    done = serve("start", env=env)
    assert done.returncode == 2
    assert "usage: bin/serve [prepare|run]" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()
