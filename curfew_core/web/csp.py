"""Content-Security-Policy for every response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase

#: Everything the app serves is its own: no CDN, no inline script.
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'self'"
)


class ContentSecurityPolicyMiddleware:
    """Sets the policy unless a view set its own (e.g. an embeddable page).

    Both sync and async: a sync-only middleware would push every request under
    ASGI through a thread hop.
    """

    sync_capable = True
    async_capable = True

    def __init__(
        self,
        get_response: Callable[[HttpRequest], HttpResponseBase]
        | Callable[[HttpRequest], Awaitable[HttpResponseBase]],
    ) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        response = self.get_response(request)
        assert isinstance(response, HttpResponseBase)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await self.get_response(request)  # type: ignore[misc]
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
