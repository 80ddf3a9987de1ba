"""A client that reads a streamed answer very slowly, or not at all (issue 41).

The server's socket buffers fill, the relay waits in the server's send, and
the upstream is read no further: memory stays bounded by the buffers. But a
client that never reads (nor hangs up) held the upstream connection, its
place in the pool and one of its token's upstream slots for ever. Now a
client that takes nothing for ``CURFEW_UPSTREAM_TIMEOUT`` seconds (the stall
the upstream is allowed too) is given up: the upstream is hung up on, the
slot freed, one log line says so. A slow client that keeps reading is not.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from curfew_testkit.server import ServedApp
from tests.proxy.hostile_upstream import HostileUpstream, wait_for

KEY = "sk-upstream-slow-client-key"
STALL = 2
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    fake = HostileUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, hostile: HostileUpstream
) -> Iterator[tuple[ServedApp, str]]:
    app = ServedApp(
        Path(tmp_path_factory.mktemp("slow-client")),
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{hostile.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": KEY,
            "CURFEW_UPSTREAM_TIMEOUT": str(STALL),
            "CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN": "1",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("slow-reader")
    try:
        app.start()
        # No curfew for this user: every call goes upstream.
        headers = {"Authorization": f"Bearer {token}"}
        done = httpx.patch(
            f"{app.base_url}/api/v1/schedule", json={"enabled": False}, headers=headers, timeout=10
        )
        assert done.status_code == 200, done.text
        yield app, token
    finally:
        app.stop()  # never left running (alive but not ready, or refusing)


def open_stream(app: ServedApp, token: str) -> socket.socket:
    """A streaming call on a socket with a small receive buffer, whose answer
    is then read (or not) by the test."""
    body = json.dumps(CHAT).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", app.port))
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def test_a_client_that_reads_nothing_is_given_up_after_the_stall(
    served: tuple[ServedApp, str], hostile: HostileUpstream
) -> None:
    app, token = served
    hostile.reset("slow-sse", size=512 * 1024 * 1024)
    sock = open_stream(app, token)
    try:
        assert wait_for(hostile.hangups, STALL + 8), "the upstream call was held for ever"
        # Bounded while it waited: the buffers, not the answer's 512 MB.
        assert hostile.sent < 64 * 1024 * 1024
        # The token's one upstream slot is free again.
        hostile.reset("ok")
        again = httpx.post(
            f"{app.base_url}/v1/chat/completions",
            json={**CHAT, "stream": False},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert again.status_code == 200, again.text
    finally:
        sock.close()
    log = app.log_path.read_text()
    assert f"read nothing of http://127.0.0.1:{hostile.port}/v1/chat/completions" in log
    assert KEY not in log


def test_a_slow_client_that_keeps_reading_gets_the_whole_answer(
    served: tuple[ServedApp, str], hostile: HostileUpstream
) -> None:
    app, token = served
    size = 2 * 1024 * 1024
    hostile.reset("slow-sse", size=size)
    sock = open_stream(app, token)
    received = bytearray()
    try:
        sock.settimeout(STALL * 4)
        # Slower than the upstream sends (it waits on us), never stalled as long as STALL.
        while not received.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"):
            piece = sock.recv(64 * 1024)
            if not piece:
                break
            received += piece
            time.sleep(0.005)
    finally:
        sock.close()
    assert received.startswith(b"HTTP/1.1 200 ")
    assert received.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert received.count(b"z") >= size * 0.9
