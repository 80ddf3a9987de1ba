"""The proxy under ASGI: Django's own handler, without the browser middleware.

Every request under ``/v1/`` is a bearer-token (or ``x-api-key``) API call.
Through the site's stack it walked sessions, locale, CSRF, auth, messages,
htmx and WhiteNoise, none of which it uses, and two sync-only middleware
(outage, CSP) put the whole chain in a worker thread, from which the async
proxy view was called back on the event loop (measured: a passed request's
added latency to the upstream's first byte was about 2-3 trivial views).

:class:`ProxyHandler` is Django's ``ASGIHandler`` (the same request object,
body spooling, disconnect handling, streaming, signals and URL resolution
through ``ROOT_URLCONF``, so the proxy's views, error shapes and
``handler500`` are the ones Django's test client sees) with one async
middleware instead of the list: what still applies to an API answer is done
there, by Django's own middleware methods:

- the ``Host`` check (``ALLOWED_HOSTS``; Django's 400 as before);
- the HTTPS redirect, HSTS, ``nosniff``, referrer and opener policies
  (``SecurityMiddleware``) and ``X-Frame-Options``;
- a content security policy that allows nothing (a JSON or SSE answer is
  never a page), unless a view set its own;
- a storage outage in a view is a 503 in the door's shape (``outage``), as
  ``OutageMiddleware`` does (the proxy's views answer their own outages first).

:class:`ProxyRoute` sends ``/v1/…`` here and everything else to Django's app;
``curfew_site.asgi`` puts it behind ``BodyGuard``, so the body limits and the
early token check stay in front, and behind the proxy's lean route
(``proxy.lean``), which answers a warm short-circuit itself and hands every
other call here untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction, markcoroutinefunction
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix

from curfew_core import outage
from curfew_core.http_headers import ApiAnswers

Scope = dict[str, Any]
ASGIApp = Callable[..., Awaitable[None]]
#: Django's ``convert_exception_to_response`` (async here; its stubs say either).
GetResponse = Callable[[HttpRequest], Any]

#: What the proxy serves (Django's URL resolver maps the rest of the path).
PREFIX = "/v1/"


class ProxyMiddleware:
    """The only middleware a proxy request walks (async, no thread hop)."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        if not iscoroutinefunction(get_response):
            raise TypeError("the proxy's handler is async")
        self.get_response = get_response
        # Their hooks only read settings and the request: called inline here.
        self.answers = ApiAnswers()
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request.get_host()  # DisallowedHost: Django's 400, as before
        redirect = self.answers.redirect(request)
        if redirect is not None:
            return redirect
        try:
            response: HttpResponseBase = await self.get_response(request)
        except outage.OUTAGES:
            response = outage.unavailable(request)
        self.answers.finish(request, response)
        if isinstance(response, HttpResponse) and "Content-Length" not in response:
            response.headers["Content-Length"] = str(len(response.content))
        return response


class RequestThread(ThreadPoolExecutor):
    """A one-thread executor that runs Django's request signals *on its own
    thread*, and only for a request that used it: ``request_started`` before
    the request's first job; ``request_finished`` is sent by the response's
    ``close``, which then runs here too (:meth:`ProxyHandler.__call__`). Their
    handlers tidy this thread's database connection, the only one a proxy
    request touches; a warm request, judged on the event loop, never wakes
    the thread at all."""

    #: Whether the current request ran anything here.
    used = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if not self.used:
            self.used = True

            def first() -> Any:
                signals.request_started.send(sender=ProxyHandler)
                return fn(*args, **kwargs)

            return super().submit(first)
        return super().submit(fn, *args, **kwargs)

    def end_request(self, closed: bool) -> None:
        """The request is over (``closed``: its response was closed, which sent
        ``request_finished``): the next one starts afresh."""
        if self.used and not closed:
            super().submit(signals.request_finished.send, sender=ProxyHandler)
        self.used = False


class Executors:
    """Idle one-thread executors, reused request after request.

    Django's handler gives every request a ``ThreadSensitiveContext``, whose
    executor starts a thread for the request's first sync call (the signals'
    handlers, the token check and verdict) and, on exit, another thread to
    join it: two thread starts per request, before and after the answer.
    Here a request borrows an idle executor instead (its thread, and the
    database connection Django keeps per thread, live on, as under WSGI):
    still one thread per request in flight, one call at a time on it.
    """

    def __init__(self, keep: int) -> None:
        #: Idle executors kept beyond this many are shut down (a burst's threads end).
        self.keep = keep
        self._idle: list[RequestThread] = []

    def take(self) -> RequestThread:
        try:
            return self._idle.pop()
        except IndexError:
            return RequestThread(max_workers=1, thread_name_prefix="curfew-proxy")

    def give_back(self, executor: RequestThread, *, closed: bool = False) -> None:
        executor.end_request(closed)
        if len(self._idle) < self.keep:
            self._idle.append(executor)
        else:
            executor.shutdown(wait=False)

    def idle(self) -> int:
        return len(self._idle)


class ProxyHandler(ASGIHandler):
    """Django's ASGI handler with :class:`ProxyMiddleware` as its only
    middleware, and a borrowed executor per request (:class:`Executors`)."""

    def __init__(self, keep_threads: int = 64) -> None:
        self.executors = Executors(keep_threads)
        super().__init__()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"the proxy serves HTTP, not {scope['type']}")
        executor = self.executors.take()
        closed = False
        try:
            # Django's handler waits for every task it starts: once out of
            # this block, nothing of the request runs on the executor.
            async with ThreadSensitiveContext(executor=executor):
                response = await self.handle(scope, receive, send)
            if response is not None:
                # ``close`` sends ``request_finished``: on the request's thread
                # if it had work there (its handlers tidy that thread), inline
                # if not (nothing to tidy on the event loop's thread).
                if executor.used:
                    await asyncio.get_running_loop().run_in_executor(executor, response.close)
                else:
                    response.close()
                closed = True
        finally:
            self.executors.give_back(executor, closed=closed)

    async def handle(self, scope: Scope, receive: Any, send: Any) -> HttpResponseBase | None:
        """Django's ``ASGIHandler.handle``, without its two trips to a thread
        for the request signals (they run on the request's thread when it had
        work there, :class:`RequestThread`); the answer, sent, is returned for
        the caller to close (``None``: nothing to close)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return None
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            assert error_response is not None  # Django gives one or the other
            await self.send_response(error_response, send)
            return error_response

        async def process_request() -> HttpResponseBase:
            response: HttpResponseBase = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):
                await self.send_response(response, send)  # else: the client went away
            return response

        # As Django: a disconnect while the answer is made cancels it.
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request()),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        body_file.close()
        return None if tasks[1].cancelled() else tasks[1].result()

    def load_middleware(self, is_async: bool = False) -> None:
        if not is_async:
            raise TypeError("the proxy is served under ASGI only")
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        inner = convert_exception_to_response(self._get_response_async)  # type: ignore[attr-defined]
        self._middleware_chain = convert_exception_to_response(ProxyMiddleware(inner))


class ProxyRoute:
    """``/v1/…`` to :class:`ProxyHandler`, everything else to ``app`` (Django's)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.proxy = ProxyHandler()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith(PREFIX):
            await self.proxy(scope, receive, send)
        else:
            await self.app(scope, receive, send)
