"""Server-sent events as every protocol here writes them: one writer.

OpenAI's chat and legacy completions name no events and end with ``[DONE]``;
the Responses and Messages APIs name every event (their SDKs dispatch on the
name) and end with their own last event.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

CONTENT_TYPE = "text/event-stream; charset=utf-8"
#: The end of an OpenAI chat or completions stream.
DONE = b"data: [DONE]\n\n"
#: ``json.dumps(data, ensure_ascii=False)``, without building an encoder per
#: event (a canned Responses stream is nine events, each echoing the request).
_encode = json.JSONEncoder(ensure_ascii=False).encode


def event(data: Mapping[str, Any], name: str | None = None) -> bytes:
    """One event carrying a JSON object, named when ``name`` is given."""
    head = f"event: {name}\n".encode() if name is not None else b""
    return head + b"data: " + _encode(data).encode() + b"\n\n"


def stream(events: Iterable[tuple[str | None, Mapping[str, Any]]], *, done: bool) -> bytes:
    """The whole body for ``(name, data)`` pairs, ending ``[DONE]`` when ``done``."""
    return b"".join(event(data, name) for name, data in events) + (DONE if done else b"")
