"""An ASGI HTTP scope read as the edge reads it, whatever server built it.

The ASGI spec lets a server pass ``server`` and ``client`` as any two-item
iterable (uvicorn: tuples; Daphne: lists), or ``None``, or leave them out;
headers as any iterable of two-item iterables; ``path`` including the
``root_path`` the app is mounted at. ``make run`` once answered HTML 500 on
every token door because a list ``server`` went into a dict key: everything
here takes every shape the spec allows (``tests/edge/test_scope_shapes.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Headers = list[tuple[bytes, bytes]]


def route_path(scope: Mapping[str, Any]) -> str:
    """The path the app routes on: ``path`` without the ``root_path`` the app
    is mounted at (ASGI 3 servers include it in ``path``)."""
    path: str = scope.get("path") or "/"
    root = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def server_key(scope: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """``server`` as a hashable value (a tuple), or ``None`` when not given."""
    server = scope.get("server")
    return None if server is None else tuple(server)


def header(scope: Mapping[str, Any], name: bytes) -> bytes | None:
    """A request header's first value (``name`` lower case)."""
    for key, value in scope.get("headers") or ():
        if bytes(key).lower() == name:
            return bytes(value)
    return None


def headers_named(scope: Mapping[str, Any], names: tuple[bytes, ...]) -> list[bytes | None]:
    """``[header(scope, name) for name in names]`` in one pass over the headers."""
    found: list[bytes | None] = [None] * len(names)
    left = len(names)
    for key, value in scope.get("headers") or ():
        name = bytes(key).lower()
        if name in names:
            index = names.index(name)
            if found[index] is None:
                found[index] = bytes(value)
                left -= 1
                if not left:
                    break
    return found


class ScopeHeaders(Mapping[str, str]):
    """A request's headers from its ASGI scope, read as Django's
    ``request.headers`` reads them: any case, ``_`` for ``-`` in the asked
    name, a name sent with ``_`` ignored (Django's guard against spoofing by
    the ambiguity), repeated headers joined with commas."""

    __slots__ = ("_found", "_raw")

    def __init__(self, raw: Iterable[Any]) -> None:
        self._raw = raw if isinstance(raw, list | tuple) else list(raw)
        #: Every header, decoded: made when first needed (most requests ask for
        #: their token's header alone, see ``get``).
        self._found: dict[str, str] | None = None

    @classmethod
    def of(cls, scope: Mapping[str, Any]) -> ScopeHeaders:
        return cls(scope.get("headers") or ())

    def _all(self) -> dict[str, str]:
        found = self._found
        if found is None:
            found = {}
            for raw_name, raw_value in self._raw:
                name = bytes(raw_name).decode("latin-1").lower()
                if "_" in name:
                    continue
                value = bytes(raw_value).decode("latin-1")
                found[name] = f"{found[name]},{value}" if name in found else value
            self._found = found
        return found

    def __getitem__(self, name: str) -> str:
        return self._all()[name.replace("_", "-").lower()]

    def get(self, name: str, default: Any = None) -> Any:
        # Mapping's own ``get`` goes through ``__getitem__`` and an exception.
        wanted = name.replace("_", "-").lower()
        if self._found is None and wanted.isascii():
            # One name, before anything else was asked: the raw names compared
            # as bytes (no latin-1 letter lowers to an ASCII one, and a name
            # sent with ``_`` cannot match), only the matches decoded.
            key = wanted.encode()
            values = [
                bytes(value).decode("latin-1")
                for raw_name, value in self._raw
                if bytes(raw_name).lower() == key
            ]
            return ",".join(values) if values else default
        return self._all().get(wanted, default)

    def any_named(self, prefix: bytes) -> bool:
        """Whether any header's name starts with ``prefix`` (lower case ASCII):
        one pass over the raw names, nothing decoded."""
        return any(bytes(name).lower().startswith(prefix) for name, _ in self._raw)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())
