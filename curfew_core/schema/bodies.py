"""Reading a client's JSON body strictly: every way it can be bad is a
:class:`BadBody` with a message for the client, never an exception that
escapes as a 500.

``json.loads`` alone lets through what breaks later (a lone surrogate cannot be
encoded back to UTF-8, ``Infinity``/``NaN`` are not JSON) and raises more than
``JSONDecodeError`` (``ValueError`` past Python's int-digit limit,
``RecursionError`` on deep nesting).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: A ``\\u`` escape of a UTF-16 surrogate somewhere in the text: only then can a
#: parsed string hold a lone surrogate (a valid pair decodes to one character).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class BadBody(ValueError):
    """The body is not what the door accepts; the message says why."""


def _no_constants(name: str) -> Any:
    raise BadBody(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadBody(f"the number {text[:20]}… is out of range")
    return value


def _lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` as a JSON object (UTF-8, finite numbers, valid Unicode), or BadBody."""
    if not raw.strip():
        raise BadBody("the request body is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(f"the request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        body = json.loads(text, parse_constant=_no_constants, parse_float=_finite)
    except BadBody:
        raise
    except RecursionError:
        raise BadBody("the request body is nested too deeply") from None
    except ValueError as exc:
        # JSONDecodeError, and the int-digit limit ("Exceeds the limit ...").
        raise BadBody(f"the request body is not valid JSON ({str(exc)[:200]})") from None
    if not isinstance(body, dict):
        raise BadBody(f"the request body must be a JSON object, not {type(body).__name__}")
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate(body):
        raise BadBody("the request body holds a lone UTF-16 surrogate (invalid Unicode)")
    return body
