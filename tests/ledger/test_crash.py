"""A killed process loses at most the last second of decisions.

A child process (its own SQLite file, production settings, the real flusher)
records a decision every 50 ms; it is killed with SIGKILL (no exit hook runs).
Every decision it recorded more than ``LOSS_BOUND`` seconds before the kill is
in the database: the flusher wrote it within a second of its recording.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from curfew_testkit.server import ROOT

#: The flusher writes every second; half a second more for its own batch.
LOSS_BOUND = 1.5


def _migrated(tmp_path: Path, flush_seconds: str) -> tuple[Path, dict[str, str]]:
    db = tmp_path / "db.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "curfew_site.settings",
        "SECRET_KEY": "crash-test-key-0123456789-abcdefghijklmnopqrstuvwxyz-0123",
        "CURFEW_DEBUG": "0",
        "DATABASE_URL": f"sqlite:///{db}",
        "REDIS_URL": "",
        "CURFEW_LEDGER_FLUSH_SECONDS": flush_seconds,
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    return db, env


def _sessions(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT session FROM curfew_core_decision")}


def test_a_killed_process_loses_at_most_the_last_second(tmp_path: Path) -> None:
    db, env = _migrated(tmp_path, "1")
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.ledger.crash_child"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    recorded: dict[int, float] = {}
    try:
        # Record for about three seconds (three flushes at least).
        first: float | None = None
        for line in child.stdout:
            n, when = line.split()
            recorded[int(n)] = float(when)
            first = first or float(when)
            if float(when) - first > 3.2:
                break
    finally:
        killed_at = time.monotonic()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    stored = _sessions(db)
    due = {n for n, when in recorded.items() if when < killed_at - LOSS_BOUND}
    assert len(due) >= 20, "the child recorded for long enough"
    missing = sorted(n for n in due if f"s{n}" not in stored)
    assert not missing, f"recorded over {LOSS_BOUND}s before the kill but lost: {missing}"
    # Stored rows are real recordings of the child, nothing else.
    assert stored <= {f"s{n}" for n in recorded}


def test_a_process_that_exits_writes_what_it_buffered(tmp_path: Path) -> None:
    # The flusher would wait 100 s: only the exit hook can have written them.
    db, env = _migrated(tmp_path, "100")
    subprocess.run(
        [sys.executable, "-m", "tests.ledger.crash_child", "5"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert _sessions(db) == {f"s{n}" for n in range(5)}
