"""A Redis that accepts connections and then never answers (a stalled server, a
black-holed network path) must not hang the service: every Redis call has a
deadline, and the API answers 503 in its JSON shape with ``Retry-After``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from curfew_testkit.server import ServedApp


class BlackHole:
    """A TCP server that accepts, reads and never writes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.conns.append(conn)

    def __enter__(self) -> BlackHole:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=2)
        for conn in self.conns:
            conn.close()
        self.sock.close()


@pytest.fixture
def stalled_app(tmp_path: Path) -> Iterator[tuple[ServedApp, str]]:
    with BlackHole() as hole:
        app = ServedApp(tmp_path, env={"CURFEW_MANIFEST_STATIC": "0"})
        app.manage("migrate", "--no-input", "-v0")
        token = app.create_user("ada")
        app.env["REDIS_URL"] = f"redis://127.0.0.1:{hole.port}/0"
        app.env["CURFEW_REDIS_TIMEOUT"] = "1"
        app.start()
        try:
            yield app, token
        finally:
            app.stop()


def test_a_stalled_redis_is_a_prompt_503_not_a_hang(stalled_app: tuple[ServedApp, str]) -> None:
    app, token = stalled_app
    started = time.monotonic()
    response = httpx.post(
        f"{app.base_url}/api/v1/verdict",
        json={},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    waited = time.monotonic() - started
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"] == "unavailable"
    assert int(response.headers["Retry-After"]) > 0
    # Not a benchmark: a bound far above the configured Redis deadline, far
    # below "forever" (without a deadline this request never returns).
    # Not a benchmark: the configured deadline (1 s) holds, well below
    # redis-py's own 5 s default, with room for a loaded machine.
    assert waited < 4, waited
