"""A PostgreSQL that accepts connections and never answers (a frozen server, a
half-open network path) is an error within seconds, not a wait forever
(issue 41).

Without a connect timeout libpq waits for the server's first reply with no
bound: under ``bin/serve`` every warm verdict whose cached rows needed a
re-read hung (8 clients, 8 s: 3 answers), and so did the ledger's flusher.
Each connection attempt is now bounded (``connect_timeout``, 5 s unless
``DATABASE_URL`` names its own), so the stale-row fallback answers, and the
flusher keeps its batch and retries.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from curfew_testkit.server import ROOT, ServedApp
from tests.faults.conftest import broken_redis

CONNECT = (
    "from django.db import OperationalError, connection\n"
    "try:\n"
    "    connection.ensure_connection()\n"
    "except OperationalError as exc:\n"
    "    print('refused:', type(exc).__name__)\n"
)


@pytest.mark.parametrize("query", ["", "?connect_timeout=2"])
def test_a_postgresql_that_never_answers_is_an_error_within_seconds(
    tmp_path: Path, query: str
) -> None:
    with broken_redis("stalled") as stalled:  # any socket that accepts and never answers
        port = stalled.rsplit(":", 1)[1].split("/")[0]
        url = f"postgres://postgres@127.0.0.1:{port}/curfew_stalled{query}"
        env = ServedApp(tmp_path, env={"DATABASE_URL": url, "REDIS_URL": ""}).env
        try:
            done = subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", CONNECT],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=30,  # the bound is 5 s; without one libpq waits forever
            )
        except subprocess.TimeoutExpired:
            pytest.fail("connecting to a PostgreSQL that never answers did not end")
    assert "refused: OperationalError" in done.stdout, done.stderr[-2000:]
