"""Fixtures for the settings page: a signed-in browser-less client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import TestCase

from curfew_testkit.asgi_client import Client


class PageClient:
    """Django's test client, signed in, running after-commit hooks.

    Tests run inside a transaction that never commits, so the services'
    cache drops (which wait for the commit) would never happen; running the
    hooks makes each request see the state a real one would.
    """

    def __init__(self, user: User | None) -> None:
        self.user = user
        self.client = Client()
        if user is not None:
            self.client.force_login(user)

    def _run(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with TestCase.captureOnCommitCallbacks(execute=True):
            return call(*args, **kwargs)

    def get(self, path: str, data: Any = None, *, htmx: bool = False, **extra: Any) -> Any:
        if htmx:
            extra["HTTP_HX_REQUEST"] = "true"
        return self._run(self.client.get, path, data, **extra)

    def post(self, path: str, data: Any = None, *, htmx: bool = False, **extra: Any) -> Any:
        if htmx:
            extra["HTTP_HX_REQUEST"] = "true"
        return self._run(self.client.post, path, data or {}, **extra)


@pytest.fixture
def page(user: User) -> PageClient:
    return PageClient(user)


@pytest.fixture
def anonymous(db: None) -> PageClient:
    return PageClient(None)
