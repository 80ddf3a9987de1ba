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


_SEQUENCES = (list, tuple)


class ScopeHeaders(Mapping[str, str]):
    """A request's headers from its ASGI scope, read as Django's
    ``request.headers`` reads them: any case, ``_`` for ``-`` in the asked
    name, a name sent with ``_`` ignored (Django's guard against spoofing by
    the ambiguity), repeated headers joined with commas.

    The raw list is walked once, when made (``raw``): everything the edge
    asks of a request head (its host, length, token, forwarded address) is a
    dict lookup after that, where each question used to walk the list again
    (a fifth of the edge's own work on a warm verdict)."""

    __slots__ = ("_found", "_named", "_raw")

    def __init__(self, raw: Iterable[Any]) -> None:
        self._raw = raw if isinstance(raw, _SEQUENCES) else list(raw)
        #: Every header by its lower-case raw name, repeats joined with commas
        #: (as Django joins them into ``META``), nothing decoded.
        named: dict[bytes, bytes] = {}
        for raw_name, raw_value in self._raw:
            # ``bytes()`` only of what is not bytes already (a ``bytearray``):
            # a call per name and value was half of reading a head.
            name = (raw_name if raw_name.__class__ is bytes else bytes(raw_name)).lower()
            value = raw_value if raw_value.__class__ is bytes else bytes(raw_value)
            if name in named:
                named[name] = named[name] + b"," + value
            else:
                named[name] = value
        self._named = named
        #: Every header, decoded: made when first needed (most requests ask for
        #: their token's header alone, see ``get``).
        self._found: dict[str, str] | None = None

    @classmethod
    def of(cls, scope: Mapping[str, Any]) -> ScopeHeaders:
        return cls(scope.get("headers") or ())

    def raw(self, name: bytes) -> bytes | None:
        """A header's raw value, repeats joined with commas (``name``: lower-case
        ASCII); ``None`` when not sent."""
        return self._named.get(name)

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
        if wanted.isascii():
            # Raw names lowered as bytes: no latin-1 letter lowers to an ASCII
            # one, and a name sent with ``_`` cannot match one asked without.
            value = self._named.get(wanted.encode())
            return default if value is None else value.decode("latin-1")
        return self._all().get(wanted, default)

    def any_named(self, prefix: bytes) -> bool:
        """Whether any header's name starts with ``prefix`` (lower case ASCII):
        nothing decoded."""
        return any(name.startswith(prefix) for name in self._named)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())
