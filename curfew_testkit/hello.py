"""A raw ASGI hello-world app: the server's floor for the benchmarks.

What any ASGI app pays at least (the server's HTTP parsing, its ``receive``
and ``send``) and nothing else: ``bench/edge_floor.py`` serves it with the very
uvicorn flags the site is served with, and measures the site against it.
"""

from __future__ import annotations

import json
import os
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


def _shape() -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The head and body ``shaped`` answers: ``CURFEW_HELLO_SHAPE``, a JSON
    object ``{"headers": [[name, value], ...], "length": n}`` (latin-1 text)."""
    shape = json.loads(os.environ.get("CURFEW_HELLO_SHAPE") or '{"headers": [], "length": 0}')
    headers = [
        (name.encode("latin-1"), value.encode("latin-1")) for name, value in shape["headers"]
    ]
    return headers, b"x" * int(shape["length"])


#: Read when the module loads: the server process ``edge_floor`` starts with the shape.
SHAPED_HEADERS, SHAPED_BODY = _shape()


async def shaped(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """``app``, answering with another app's head and body length: served
    with a verdict's own, it is the server's floor for that very exchange
    (the request's head and body read, its headers and bytes written),
    so what a verdict costs beyond it is the site's own work."""
    if scope["type"] != "http":
        return
    message = await receive()
    while message.get("more_body"):
        message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": SHAPED_HEADERS})
    await send({"type": "http.response.body", "body": SHAPED_BODY})
