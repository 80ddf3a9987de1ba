"""What a handler of a token door is given: the request, read, and its caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.http.response import HttpResponseBase

from curfew_core import throttle
from curfew_core.edge.caller import Caller
from curfew_core.edge.scope import Scope, ScopeHeaders

if TYPE_CHECKING:
    from curfew_core.edge.declare import Door


class Refused(Exception):
    """A handler's refusal (a 400, a 404, a 409...): raised anywhere in its
    work, answered by the edge with ``response()``, in the door's shape (the
    API's ``ApiError``)."""

    def response(self) -> HttpResponseBase:
        raise NotImplementedError


@dataclass(slots=True)
class EdgeRequest:
    """A request to a token door, its body read (within the door's limit)."""

    scope: Scope
    door: Door
    method: str
    #: The path routed on (``root_path`` removed).
    path: str
    headers: ScopeHeaders
    body: bytes = b""
    #: The live token's caller (``None`` only on a public route).
    caller: Caller | None = None
    #: The route's path parameters (``{model}``, ``{response_id}``).
    params: dict[str, str] = field(default_factory=dict)
    _address: str | None = None

    @property
    def address(self) -> str:
        """Where it comes from, as the throttles count it (worked out when
        asked: a warm token door never asks)."""
        found = self._address
        if found is None:
            found = self._address = address_of(self.scope, self.headers)
        return found

    @property
    def query_string(self) -> bytes:
        return bytes(self.scope.get("query_string") or b"")

    def the_caller(self) -> Caller:
        """The caller of a token route (the edge checked the token first)."""
        assert self.caller is not None, "a public route has no caller"
        return self.caller

    def __repr__(self) -> str:
        return f"<EdgeRequest {self.method} {self.path}>"


def address_of(scope: Scope, headers: ScopeHeaders) -> str:
    """Where a request comes from, as the throttles count it."""
    return throttle.address_of(scope.get("client"), headers.raw(b"x-forwarded-for"))
