"""A served app stopped the way a process manager stops it (SIGTERM to
``bin/serve``, two uvicorn workers) writes what it noted: the tokens' last
uses (written in batches every ``USED_FLUSH_SECONDS``, 10 s) and the ledger's
decisions (here held for 100 s), both by the stop itself.

uvicorn drains its requests and then dies of the re-raised signal, where no
exit hook runs: a write still waiting then was lost. The stop is its ASGI
lifespan's ``shutdown`` (``edge.lifespan``), which the server waits for. So
the test holds SQLite's write lock across the stop: the server must still be
up when it is released, and the writes must land after it."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from curfew_testkit.server import ServedApp

USERS = 3
#: How long the write lock is held after SIGTERM: well past an idle uvicorn's
#: drain (milliseconds), well within SQLite's busy wait (5 s).
HELD_SECONDS = 1.5


def test_a_served_app_stopped_with_sigterm_writes_the_last_uses(tmp_path: Path) -> None:
    app = ServedApp(tmp_path, env={"CURFEW_LEDGER_FLUSH_SECONDS": "100"}, workers=2)
    app.manage("migrate", "--no-input", "-v0")
    tokens = app.create_users(*(f"user-{n}" for n in range(USERS)))
    app.start()
    lock = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None, timeout=30)
    try:
        started = datetime.now(UTC).replace(tzinfo=None)
        for _ in range(2):
            for token in tokens.values():
                answer = httpx.post(
                    f"{app.base_url}/api/v1/verdict",
                    json={},
                    headers={"Authorization": f"Bearer {token}", **app.client_headers},
                    timeout=30,
                )
                assert answer.status_code == 200, answer.text
        # The control: nothing of this run written while the server runs.
        assert lock.execute("SELECT COUNT(*) FROM curfew_core_decision").fetchone() == (0,)
        lock.execute("BEGIN IMMEDIATE")  # no other writer until it ends
        app.terminate()
        time.sleep(HELD_SECONDS)
        assert app.process is not None
        assert app.process.poll() is None, "the server ended before its last writes"
        lock.execute("ROLLBACK")
    finally:
        lock.close()
        app.terminate()
        code = app.wait_stopped(60)
    assert code == 0
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        used = [
            row[0]
            for row in conn.execute("SELECT last_used_at FROM curfew_core_apitoken").fetchall()
        ]
        decisions = conn.execute("SELECT COUNT(*) FROM curfew_core_decision").fetchone()
    assert len(used) == USERS
    assert all(value is not None for value in used), used
    # The uses of this run, not an older stamp.
    assert all(datetime.fromisoformat(value) >= started for value in used), (used, started)
    assert decisions == (2 * USERS,)
