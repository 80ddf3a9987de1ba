"""What the ASGI routes in front of Django share: Django's own head checks and
answer headers, the body read, and an answer sent.

The verdict API's lean route (``api.lean``) and the proxy's
(``proxy.lean``) answer without Django's handler. What the site's middleware
did that still applies to an API answer is done here by Django's own code,
once per distinct request head (:class:`Fronts`): the ``Host`` check and the
HTTPS redirect (a request that fails either is handed to Django, which
answers it as before), the security headers, and a policy that allows
nothing (``http_headers.API_POLICY``: a JSON answer is never a page).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.http.response import HttpResponseBase

from curfew_core.asgi_limits import scope_header
from curfew_core.http_headers import ApiAnswers

Scope = dict[str, Any]
Message = dict[str, Any]
Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class Front:
    """What a request head decides before any view (see :class:`Fronts`)."""

    #: Django answers it (a disallowed ``Host``, an HTTPS redirect).
    to_django: bool
    #: The headers every answer to such a head carries.
    headers: tuple[tuple[bytes, bytes], ...]


#: Distinct request heads kept (scheme, server, and the headers that decide):
#: a deployment sees a handful.
_FRONT_KEPT = 256
_FRONT_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-port", b"x-forwarded-proto")


class Fronts:
    """Django's checks and answer headers for a request head, remembered per head."""

    def __init__(self) -> None:
        self._fronts: dict[tuple[Any, ...], Front] = {}
        self._answers = ApiAnswers()

    def __call__(self, scope: Scope) -> Front:
        key = (
            scope.get("scheme"),
            scope.get("server"),
            *(scope_header(scope, name) for name in _FRONT_HEADERS),
        )
        front = self._fronts.get(key)
        if front is None:
            front = self._decide(scope)
            if len(self._fronts) >= _FRONT_KEPT:
                self._fronts.clear()
            self._fronts[key] = front
        return front

    def _decide(self, scope: Scope) -> Front:
        """Django's own checks and headers for this head (once per distinct head)."""
        request = ASGIRequest({**scope, "method": "GET"}, BytesIO())
        try:
            request.get_host()
        except DisallowedHost:
            return Front(True, ())
        if self._answers.redirect(request) is not None:
            return Front(True, ())  # the HTTPS redirect
        response = HttpResponse()
        self._answers.finish(request, response)
        return Front(
            False,
            tuple(
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in response.items()
                if name.lower() != "content-type"
            ),
        )


class ScopeHeaders(Mapping[str, str]):
    """A request's headers from its ASGI scope, read as Django's
    ``request.headers`` reads them: any case, ``_`` for ``-`` in the asked
    name, a name sent with ``_`` ignored (Django's guard against spoofing by
    the ambiguity), repeated headers joined with commas."""

    __slots__ = ("_found",)

    def __init__(self, scope: Scope) -> None:
        found: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            if "_" in name:
                continue
            value = raw_value.decode("latin-1")
            found[name] = f"{found[name]},{value}" if name in found else value
        self._found = found

    def __getitem__(self, name: str) -> str:
        return self._found[name.replace("_", "-").lower()]

    def get(self, name: str, default: Any = None) -> Any:
        # Mapping's own ``get`` goes through ``__getitem__`` and an exception.
        return self._found.get(name.replace("_", "-").lower(), default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)


def converted(response: HttpResponseBase) -> tuple[int, Headers, bytes]:
    """A whole Django answer as ASGI's status, headers and body."""
    headers = [
        (name.lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in response.items()
    ]
    return response.status_code, headers, response.content  # type: ignore[attr-defined]


async def read_body(receive: Callable[[], Any]) -> bytes | None:
    """The whole body (``BodyGuard`` in front has bounded it), or ``None`` if
    the client disconnected first."""
    chunks = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_answer(
    send: Callable[[Message], Any], front: Front, status: int, headers: Headers, content: bytes
) -> None:
    """A whole answer, with the head's headers and its length."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                *headers,
                *front.headers,
                (b"content-length", str(len(content)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})
