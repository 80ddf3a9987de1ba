"""Helpers for the API, service and command tests: a frozen clock and
snapshots of what a user has stored (to prove bad input changed nothing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any
from unittest import mock
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User

from curfew_core.models import Override, Schedule, ScheduleRevision

SHANGHAI = ZoneInfo("Asia/Shanghai")


def local(text: str) -> datetime:
    """``"2026-09-29 10:00"`` as an aware instant in the default zone."""
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)


class FrozenClock:
    """``django.utils.timezone.now`` pinned to an instant the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def set(self, instant: datetime) -> None:
        self.now = instant

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    """Freeze the real clock (views and services read ``timezone.now()``)."""
    frozen = FrozenClock(local("2026-09-29 20:00"))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


class CommittingApi:
    """The shared ``ApiClient``, with each request's commit callbacks run when it ends.

    pytest-django wraps a test in a transaction that never commits, so the
    cache drops and events queued "on commit" would never fire and the next
    request would read a stale cache. Running them as each request returns is
    what autocommit does in production (the view's service commits before the
    view answers). Tests about that timing itself use ``transaction=True``.
    """

    def __init__(
        self, inner: Any, capture: Callable[..., AbstractContextManager[list[Any]]]
    ) -> None:
        self.inner = inner
        self.user = inner.user
        self.token = inner.token
        self._capture = capture

    def _run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._capture(execute=True):
            return getattr(self.inner, method)(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("get", *args, **kwargs)

    def post(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("post", *args, **kwargs)

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("patch", *args, **kwargs)


@pytest.fixture
def api(api: Any, django_capture_on_commit_callbacks: Any) -> CommittingApi:
    return CommittingApi(api, django_capture_on_commit_callbacks)


@pytest.fixture
def other_api(other_api: Any, django_capture_on_commit_callbacks: Any) -> CommittingApi:
    return CommittingApi(other_api, django_capture_on_commit_callbacks)


def stored(user: User) -> dict[str, Any]:
    """Everything a user has saved, read straight from the database."""
    row = Schedule.objects.filter(user=user).first()
    override = Override.objects.filter(user=user).first()
    return {
        "config": None if row is None else row.config,
        "version": None if row is None else row.version,
        "revisions": list(
            ScheduleRevision.objects.filter(schedule__user=user).values_list("version", "source")
        ),
        "override": None
        if override is None
        else (
            override.overtime_until,
            override.forced_off_until,
            override.debug_at,
            override.debug_until,
        ),
    }
