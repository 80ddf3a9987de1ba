"""Who is asking, read from a request's ``X-Curfew-*`` headers, declared once.

A gateway (or Curfew's own proxy, which delegates here) forwards the scope its
clients name: ``X-Curfew-Session`` (a session id, for exempt sessions),
``X-Curfew-Purpose`` (a purpose always passes) and ``X-Curfew-Subagent``
(``1``/``0``, ``true``/``false``, ``yes``/``no``). One reading, so the proxy
and every gateway built on this client accept and refuse the same headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SESSION_HEADER = "X-Curfew-Session"
PURPOSE_HEADER = "X-Curfew-Purpose"
SUBAGENT_HEADER = "X-Curfew-Subagent"
#: The longest session id or purpose taken (the API's own bound on both).
MAX_HEADER_TEXT = 200
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"", "0", "false", "no"})


@dataclass(frozen=True, slots=True)
class Scope:
    """The scope of one model call: the arguments of ``verdict()`` besides the budget."""

    session_id: str | None = None
    purpose: str | None = None
    subagent: bool = False


class ScopeHeaderError(ValueError):
    """A header that is not a scope; ``header`` names it (a 400's ``param``)."""

    def __init__(self, message: str, header: str) -> None:
        super().__init__(message)
        self.header = header


def _lookup(headers: Mapping[str, str], name: str) -> str:
    """``name``'s value whatever the case of the keys (a plain ``dict`` included).

    Case-insensitive mappings (Django's ``request.headers``, httpx's,
    Starlette's) answer the direct lookup, an absent name included; only a
    ``dict`` (whose keys keep their case) falls back to a scan, so an absent
    header, the usual case, costs no walk over the others.
    """
    value = headers.get(name)
    if value is None and isinstance(headers, dict):
        wanted = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == wanted), None)
    return "" if value is None else str(value)


def _text(headers: Mapping[str, str], name: str) -> str | None:
    value = _lookup(headers, name).strip()
    if len(value) > MAX_HEADER_TEXT:
        raise ScopeHeaderError(f"{name} must be at most {MAX_HEADER_TEXT} characters", name)
    return value or None


def scope_from_headers(headers: Mapping[str, str]) -> Scope:
    """The scope ``headers`` name; absent headers mean no session, no purpose,
    not a subagent. Raises ``ScopeHeaderError`` (a ``ValueError`` naming the
    header) for text longer than ``MAX_HEADER_TEXT`` or a subagent flag that is
    not 1/0/true/false/yes/no (any case)."""
    subagent = _lookup(headers, SUBAGENT_HEADER).strip().lower()
    if subagent not in _TRUE | _FALSE:
        raise ScopeHeaderError(
            f"{SUBAGENT_HEADER} must be 1 or 0 (true/false), not {subagent[:40]!r}",
            SUBAGENT_HEADER,
        )
    return Scope(
        session_id=_text(headers, SESSION_HEADER),
        purpose=_text(headers, PURPOSE_HEADER),
        subagent=subagent in _TRUE,
    )
