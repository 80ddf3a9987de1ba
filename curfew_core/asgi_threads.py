"""Sync work from the ASGI routes in front of Django, as Django's handler runs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core import signals

T = TypeVar("T")


async def in_request_thread(sender: type, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` as Django's handler runs a sync view: in the
    request's own thread (a fresh one per request, or the caller's thread
    under ``async_to_sync``, as in a test), between the request signals, whose
    handlers tidy that thread's database connection (Django's test client
    disconnects them; channels' ``database_sync_to_async`` would close the
    connection regardless, and with it a test's transaction)."""

    def call() -> T:
        signals.request_started.send(sender=sender)
        try:
            return function(*args)
        finally:
            signals.request_finished.send(sender=sender)

    async with ThreadSensitiveContext():
        return await sync_to_async(call, thread_sensitive=True)()
