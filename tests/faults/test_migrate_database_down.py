"""``manage.py migrate`` (``bin/serve prepare`` runs it) with a database that
does not answer: one line saying where it asked and what the driver said,
never the password, exit 1, and nothing of Django's traceback
(``curfew_core/management/commands/migrate.py``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A password that must never be printed.
PASSWORD = "s3cret-not-for-logs"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def migrate(database_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SECRET_KEY": "test-migrate-database-down",
        "CURFEW_DATABASE_POOL_WAIT": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_postgresql_away_is_one_line_naming_where_it_asked_never_the_password():
    port = closed_port()
    done = migrate(f"postgres://curfew:{PASSWORD}@127.0.0.1:{port}/curfew_nowhere")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    (said,) = lines
    assert said.startswith("CommandError: the database curfew_nowhere at 127.0.0.1:")
    assert f":{port} ('default') does not answer" in said
    assert "Connection refused" in said
    assert "Nothing was changed" in said
    assert "Traceback" not in done.stderr
    assert PASSWORD not in done.stdout + done.stderr


def test_a_database_that_answers_is_migrated_as_django_does(tmp_path: Path):
    # The control: the same command, the same way, with a database there.
    done = migrate(f"sqlite:///{tmp_path / 'db.sqlite3'}", "--plan")
    assert done.returncode == 0, done.stderr
    assert "Planned operations:" in done.stdout
    assert "does not answer" not in done.stdout + done.stderr
