"""The ledger under faults, in a served process with its real flusher (issue 23).

- A row the database refuses (a trigger refuses one session's rows) is
  dropped, and every other decision, of that flush and after, is written.
- A database that refuses every write for a while loses nothing: once it
  takes writes again, recording resumes by itself.
- A worker killed outright (SIGKILL) under load loses only the decisions it
  answered within ``LOSS_BOUND`` of the kill, the bound docs/subsystems/ledger.md states.

One uvicorn process over one SQLite file, production settings, the flusher
at its default second. Each verdict carries its own session id, so a stored
row names the answer it came from.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from curfew_testkit.loadgen import build_request, read_response
from curfew_testkit.server import ServedApp

#: What a crash may lose: the decisions answered within this long of it.
LOSS_BOUND = 1.0
ENV = {"REDIS_URL": "", "CURFEW_THROTTLE": "0", "CURFEW_MANIFEST_STATIC": "0"}


def _served(workdir: Path) -> tuple[ServedApp, dict[str, str]]:
    app = ServedApp(workdir, env=ENV)
    app.manage("migrate", "--no-input", "-v0")
    tokens = {name: app.create_user(name) for name in ("ada", "grace")}
    app.start()
    return app, tokens


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedApp, dict[str, str]]]:
    app, tokens = _served(tmp_path_factory.mktemp("chaos"))
    yield app, tokens
    app.stop()


def _db(app: ServedApp) -> sqlite3.Connection:
    return sqlite3.connect(app.workdir / "db.sqlite3", timeout=10, isolation_level=None)


def _sessions(app: ServedApp, prefix: str) -> set[str]:
    with _db(app) as conn:
        rows = conn.execute(
            "SELECT session FROM curfew_core_decision WHERE session LIKE ?", (f"{prefix}%",)
        )
        return {row[0] for row in rows}


def _verdict(app: ServedApp, token: str, session: str) -> None:
    answer = httpx.post(
        f"{app.base_url}/api/v1/verdict",
        json={"session_id": session},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


def _until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(condition())  # type: ignore[operator]


def test_a_row_the_database_refuses_is_dropped_and_the_rest_written(
    served: tuple[ServedApp, dict[str, str]],
) -> None:
    app, tokens = served
    with _db(app) as conn:
        conn.execute(
            "CREATE TRIGGER chaos_poison BEFORE INSERT ON curfew_core_decision "
            "WHEN NEW.session = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
        )
    try:
        _verdict(app, tokens["ada"], "poison")
        for n in range(10):
            _verdict(app, tokens["grace"], f"grace-{n}")
        wanted = {f"grace-{n}" for n in range(10)}
        assert _until(lambda: _sessions(app, "grace-") == wanted, 5)
        # Recording goes on after it, for the very user whose row was refused.
        _verdict(app, tokens["ada"], "ada-after")
        assert _until(lambda: _sessions(app, "ada-after") == {"ada-after"}, 5)
        assert _sessions(app, "poison") == set()
        log = app.log_path.read_text()
        assert "the database refused a decision; dropped it" in log
        assert "'poison'" in log
    finally:
        with _db(app) as conn:
            conn.execute("DROP TRIGGER chaos_poison")


def test_a_database_refusing_every_write_for_a_while_loses_nothing(
    served: tuple[ServedApp, dict[str, str]],
) -> None:
    app, tokens = served
    logged = len(app.log_path.read_text())
    with _db(app) as conn:
        conn.execute(
            "CREATE TRIGGER chaos_refuse BEFORE INSERT ON curfew_core_decision "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    try:
        for n in range(20):
            _verdict(app, tokens["ada" if n % 2 else "grace"], f"refused-{n}")
        time.sleep(2.5)  # two ticks and more: each flush refused
        assert _sessions(app, "refused-") == set()  # the control: it did refuse
    finally:
        with _db(app) as conn:
            conn.execute("DROP TRIGGER chaos_refuse")
    # Nobody restarts anything: the next ticks write all of them.
    wanted = {f"refused-{n}" for n in range(20)}
    assert _until(lambda: _sessions(app, "refused-") == wanted, 5)
    # Nothing was dropped as a bad row: the database refused them all alike.
    log = app.log_path.read_text()[logged:]
    assert "a batch could not be written; kept and retried" in log
    assert "refused a decision" not in log


def _load_then_kill(
    app: ServedApp, token: str, *, clients: int, kill_after: float
) -> tuple[dict[str, float], float]:
    """Verdicts from ``clients`` keep-alive clients, each with its own session,
    until the server is killed (SIGKILL) ``kill_after`` seconds in; returns
    when each was answered and when the kill came (``time.time()``)."""
    assert app.process is not None
    pid = app.process.pid
    answered: dict[str, float] = {}
    killed_at = 0.0

    async def client(number: int) -> None:
        host, port, _ = build_request("POST", f"{app.base_url}/api/v1/verdict")
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            return
        n = 0
        try:
            while not killed_at:
                session = f"load-{number}-{n}"
                body = json.dumps({"session_id": session}).encode()
                _, _, payload = build_request(
                    "POST",
                    f"{app.base_url}/api/v1/verdict",
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                    },
                    body=body,
                )
                writer.write(payload)
                status, _, _ = await read_response(reader)
                if status == 200 and not killed_at:
                    answered[session] = time.time()
                n += 1
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def kill() -> None:
        nonlocal killed_at
        await asyncio.sleep(kill_after)
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)

    async def run() -> None:
        await asyncio.gather(kill(), *(client(n) for n in range(clients)))

    asyncio.run(run())
    return answered, killed_at


def test_a_killed_worker_loses_at_most_the_last_second_under_load(
    tmp_path: Path,
) -> None:
    app, tokens = _served(tmp_path)
    try:
        answered, killed_at = _load_then_kill(
            app,
            tokens["ada"],
            clients=int(os.environ.get("CHAOS_CLIENTS", "50")),
            kill_after=float(os.environ.get("CHAOS_SECONDS", "3")),
        )
    finally:
        app.wait_stopped(10)
    stored = _sessions(app, "load-")
    assert len(answered) > 500, "the load was too light to show anything"
    assert stored <= set(answered), "rows of answers the client never saw"
    lost = {s: killed_at - when for s, when in answered.items() if s not in stored}
    oldest = max(lost.values(), default=0.0)
    print(
        f"\nanswered {len(answered)}, stored {len(stored)}, lost {len(lost)}; "
        f"the oldest lost was answered {oldest:.3f} s before the kill"
    )
    assert oldest <= LOSS_BOUND, (
        f"lost {len(lost)} decisions, the oldest answered {oldest:.2f} s before the kill"
    )
