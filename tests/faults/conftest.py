"""Faults: a storage service that refuses connections, and what each door answers.

Port 1 on loopback: nothing listens there (binding it needs root), so every
connection is refused at once, as when Redis or PostgreSQL is down.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

REFUSED_REDIS_URL = "redis://127.0.0.1:1/0"
UNREACHABLE_DATABASE_URL = "postgres://postgres@127.0.0.1:1/curfew_down"


@contextmanager
def broken_redis(how: str) -> Iterator[str]:
    """A Redis URL that fails ``how``: ``refused`` (nothing listens), ``stalled``
    (connects, never answers a command) or ``hangs-up`` (connects, then closes)."""
    if how == "refused":
        yield REFUSED_REDIS_URL
        return
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    port = server.getsockname()[1]
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            if how == "hangs-up":
                conn.close()
            else:
                held.append(conn)  # read nothing, answer nothing

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()
