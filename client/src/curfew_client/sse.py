"""Server-sent events as every protocol here writes them: one writer.

OpenAI's chat and legacy completions name no events and end with ``[DONE]``;
the Responses and Messages APIs name every event (their SDKs dispatch on the
name) and end with their own last event.

A canned answer (its stream, or its one JSON document) is the same every time
but for a few values (ids, the time, the model, the text, the settings a
Responses answer echoes), so each shape encodes it once, with a :func:`hole`
where each of those goes, as a :class:`Template`, and fills the holes per
request with the values' JSON: the very bytes :func:`stream` (or
``json.dumps``) gives with the values in, without encoding the same structure
again on every short-circuit.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

CONTENT_TYPE = "text/event-stream; charset=utf-8"
#: The end of an OpenAI chat or completions stream.
DONE = b"data: [DONE]\n\n"
#: ``json.dumps(data, ensure_ascii=False)``, without building an encoder per
#: event (a canned Responses stream is nine events, each echoing the request).
_encode = json.JSONEncoder(ensure_ascii=False).encode
#: What ``_encode`` writes a string as (``ensure_ascii=False``), alone or inside.
_string = json.encoder.encode_basestring


def event(data: Mapping[str, Any], name: str | None = None) -> bytes:
    """One event carrying a JSON object, named when ``name`` is given."""
    head = f"event: {name}\n".encode() if name is not None else b""
    return head + b"data: " + _encode(data).encode() + b"\n\n"


def stream(events: Iterable[tuple[str | None, Mapping[str, Any]]], *, done: bool) -> bytes:
    """The whole body for ``(name, data)`` pairs, ending ``[DONE]`` when ``done``."""
    return b"".join(event(data, name) for name, data in events) + (DONE if done else b"")


# -- templates ------------------------------------------------------------------

#: A hole as the encoder writes it: NUL is always escaped, and nothing but the
#: template's own holes is in the text this is searched in.
_HOLE = re.compile(r'"\\u0000([a-z_]+)\\u0000"')
_NAME = re.compile(r"[a-z_]+")


def hole(name: str) -> str:
    """A stand-in for a per-request value in the events a :class:`Template` is
    built from: a string no request value is (NUL-delimited), found again in
    the encoded events. ``name`` is lower-case letters and underscores."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"a hole's name is lower-case letters and underscores, not {name!r}")
    return f"\0{name}\0"


def value(data: Any) -> str:
    """``data`` as JSON text, exactly as the writer encodes it inside an event
    (what fills a hole)."""
    # The encoder's own answers for the commonest values, without its set-up.
    kind = type(data)
    if kind is str:
        return _string(data)
    if data is None:
        return "null"
    if kind is bool:
        return "true" if data else "false"
    if kind is int:
        return int.__repr__(data)
    if (kind is list or kind is dict) and not data:
        return "[]" if kind is list else "{}"
    return _encode(data)


class Template:
    """Encoded text with holes (:func:`hole`), filled per request by name.

    Every string the events carry is encoded once, here; a hole stands for one
    whole JSON value (quotes and all), so filling it with :func:`value`'s text
    gives exactly what encoding the events with that value in gives."""

    __slots__ = ("_pieces", "_values", "names")

    def __init__(self, encoded: str) -> None:
        pieces = _HOLE.split(encoded)  # text, name, text, name, ..., text
        holes = pieces[1::2]
        self.names = frozenset(holes)
        self._pieces = pieces  # a copy per fill, its holes overwritten
        # ``itemgetter`` of two names or more gives a tuple (of one, the value).
        self._values: Callable[[Mapping[str, str]], tuple[str, ...]] = (
            operator.itemgetter(*holes)
            if len(holes) > 1
            else lambda values: tuple(values[name] for name in holes)
        )

    @classmethod
    def of_stream(
        cls, events: Iterable[tuple[str | None, Mapping[str, Any]]], *, done: bool
    ) -> Template:
        """The template of :func:`stream`'s body for ``events``."""
        return cls(stream(events, done=done).decode())

    @classmethod
    def of_json(cls, data: Any) -> Template:
        """The template of ``data`` as one JSON document (``json.dumps(data,
        ensure_ascii=False)``): a non-streamed answer."""
        return cls(_encode(data))

    def fill(self, values: Mapping[str, str]) -> bytes:
        """The text with each hole replaced by ``values[name]`` (JSON text, see
        :func:`value`), UTF-8; ``KeyError`` for a hole left without a value."""
        pieces = self._pieces.copy()
        pieces[1::2] = self._values(values)
        return "".join(pieces).encode()
