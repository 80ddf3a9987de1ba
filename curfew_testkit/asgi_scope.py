"""An ASGI HTTP scope as a server builds it, for driving the app in-process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def http_scope(
    method: str,
    path: str,
    headers: Sequence[tuple[bytes, bytes]],
    *,
    query: bytes = b"",
    client: tuple[str, int] = ("127.0.0.1", 5000),
) -> dict[str, Any]:
    """What uvicorn hands the app for ``method path?query`` with ``headers``
    (the test server's name, plain HTTP/1.1)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": list(headers),
        "client": client,
        "server": ("testserver", 80),
    }
