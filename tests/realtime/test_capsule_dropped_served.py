"""A handshake dropped before the first push writes no traceback (issue 41,
finding 2: two ERROR tracebacks, ~3.7 KB, per dropped handshake; 500 of
them in 0.8 s added 1.86 MB to the log, with a public embed token).

Served by uvicorn, as in production: raw handshakes that close at once,
then the log is read. The control group: a socket that stays gets its state,
so the dropped ones reached the consumer too.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from collections.abc import Iterator

import pytest
from websockets.sync.client import connect

from curfew_testkit.server import ServedApp
from tests.readme.doors import Served

DROPS = 50


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = ServedApp(tmp_path_factory.mktemp("dropped"), env={"CURFEW_MANIFEST_STATIC": "0"})
    app.prepare()
    app.start()
    yield app
    app.stop()


def _drop(app: ServedApp, token: str) -> None:
    with socket.create_connection(("127.0.0.1", app.port)) as raw:
        key = base64.b64encode(os.urandom(16)).decode()
        raw.sendall(
            (
                f"GET /ws/capsule/?token={token} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )


def test_dropped_handshakes_write_no_traceback(served: ServedApp) -> None:
    user = Served.of(served)
    before = served.log_path.stat().st_size
    for _ in range(DROPS):
        _drop(served, user.embed_token)
    # The control: a socket that stays is served its state.
    url = f"ws://127.0.0.1:{served.port}/ws/capsule/?token={user.embed_token}"
    with connect(url, open_timeout=10) as kept:
        assert "state" in json.loads(kept.recv(timeout=10))
    time.sleep(1)  # the dropped ones' consumers have run by now
    with served.log_path.open("rb") as log:
        log.seek(before)
        added = log.read().decode(errors="replace")
    assert "Traceback" not in added, added[:2000]
    assert "ERROR" not in added, added[:2000]
    # At most one short line a connection (uvicorn's own "[accepted]" ones).
    assert len(added) < DROPS * 200, len(added)
