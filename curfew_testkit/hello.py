"""A raw ASGI hello-world app: the server's floor for the benchmarks.

What any ASGI app pays at least (the server's HTTP parsing, its ``receive``
and ``send``) and nothing else: ``bench/edge_floor.py`` serves it with the very
uvicorn flags the site is served with, and measures the site against it.
"""

from __future__ import annotations

from typing import Any

BODY = b'{"status":"ok"}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    message = await receive()
    while message.get("more_body"):
        message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
