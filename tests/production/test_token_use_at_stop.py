"""A token's ``last_used_at`` is written in batches (issue 40), and a served
app stopped the way a process manager stops it (SIGTERM to ``bin/serve``, two
uvicorn workers) writes the uses it noted: the batch writer waits
``USED_FLUSH_SECONDS`` (10 s) between writes, so uses made just before the
stop are written by the stop itself."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from curfew_testkit.server import ServedApp

USERS = 3


def test_a_served_app_stopped_with_sigterm_writes_the_last_uses(tmp_path: Path) -> None:
    app = ServedApp(tmp_path, workers=2)
    app.manage("migrate", "--no-input", "-v0")
    tokens = [app.create_user(f"user-{n}") for n in range(USERS)]
    app.start()
    try:
        started = datetime.now(UTC).replace(tzinfo=None)
        for _ in range(2):
            for token in tokens:
                answer = httpx.post(
                    f"{app.base_url}/api/v1/verdict",
                    json={},
                    headers={"Authorization": f"Bearer {token}", **app.client_headers},
                    timeout=30,
                )
                assert answer.status_code == 200, answer.text
        time.sleep(0.2)
    finally:
        app.terminate()
        code = app.wait_stopped(60)
    assert code == 0
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        used = [
            row[0]
            for row in conn.execute("SELECT last_used_at FROM curfew_core_apitoken").fetchall()
        ]
    assert len(used) == USERS
    assert all(value is not None for value in used), used
    # The uses of this run, not an older stamp.
    assert all(datetime.fromisoformat(value) >= started for value in used), (used, started)
