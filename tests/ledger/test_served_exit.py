"""A served app stopped the way a process manager stops it (SIGTERM to
``bin/serve``, two uvicorn workers) writes every decision it buffered: the
flusher is set to wait 100 s, so only each worker's stop can have written
them (its ASGI lifespan's ``shutdown``, ``edge.lifespan``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from curfew_testkit.server import ServedApp

CALLS = 6


def test_a_served_app_stopped_with_sigterm_writes_its_buffer(tmp_path: Path) -> None:
    app = ServedApp(tmp_path, env={"CURFEW_LEDGER_FLUSH_SECONDS": "100"}, workers=2)
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("night-owl")
    app.manage("curfew", "off", "--user", "night-owl")
    app.start()
    try:
        for _ in range(CALLS):
            answer = httpx.post(
                f"{app.base_url}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                headers={"Authorization": f"Bearer {token}", **app.client_headers},
                timeout=30,
            )
            assert answer.headers["X-Curfew-Action"] == "short-circuit"
        with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
            # The control: nothing written while the server runs.
            assert conn.execute("SELECT COUNT(*) FROM curfew_core_decision").fetchone() == (0,)
    finally:
        app.terminate()
        code = app.wait_stopped(60)
    assert code == 0
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        rows = conn.execute("SELECT origin, action, state FROM curfew_core_decision").fetchall()
        hours = conn.execute("SELECT SUM(requests_not_sent) FROM curfew_core_decisionhour")
        not_sent = hours.fetchone()
    assert rows == [("chat", "short-circuit", "lights-out")] * CALLS
    assert not_sent == (CALLS,)
