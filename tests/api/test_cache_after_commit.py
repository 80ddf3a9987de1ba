"""A committed write is a success, and no cache hides it for more than seconds.

Issue 9, item 2: with a shared cache (Redis), a refresh that failed after the
commit answered 503 for a saved write, and the old entry was served for its
whole TTL (an hour), so read-then-PATCH loops got 409 forever. Here the cache
refuses the writer's refresh (a fake backend, and a real Redis client on a
closed port), or the process "dies" between the commit and the refresh; the
save still answers success, the schedule API shows the committed version at
once, and verdicts follow within the configured bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections

from curfew_core.models import Schedule
from curfew_core.services.schedules import schedule_update
from curfew_testkit.asgi_client import Client
from tests.api.refusing_cache import REFUSING
from tests.conftest import ApiClient
from tests.web.forms import as_post, form_fields

VERDICT = "/api/v1/verdict"
PEAK = {"at": "2026-09-29T10:00:00+08:00"}
BOUND = 1
CLOSED_PORT_REDIS = "redis://127.0.0.1:9/0"  # discard: nothing listens on loopback


class Wall:
    """The cache's clock (``curfew_core.store.cache_policy.clock``), moved by hand."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Wall:
    clock = Wall()
    monkeypatch.setattr("curfew_core.store.cache_policy.clock", clock, raising=False)
    return clock


@pytest.fixture
def refusing_cache(settings: Any, tmp_path: Any) -> Iterator[None]:
    """A shared cache (every process would see it) whose writes can be refused."""
    settings.CACHES = {
        "default": {"BACKEND": "tests.api.refusing_cache.RefusingCache", "LOCATION": str(tmp_path)}
    }
    settings.CURFEW_CACHE_FRESH_SECONDS = BOUND
    REFUSING["writes"] = False
    yield
    REFUSING["writes"] = False


def _state(api: ApiClient) -> str:
    response = api.post(VERDICT, PEAK)
    assert response.status_code == 200, response.content
    return str(response.json()["state"])


@pytest.mark.django_db(transaction=True)
def test_a_save_whose_cache_refresh_is_refused_answers_200_and_shows_within_the_bound(
    api: ApiClient, refusing_cache: None, wall: Wall
) -> None:
    assert _state(api) == "off-duty"  # cached now (peak hours)
    version = api.get("/api/v1/schedule").json()["version"]
    REFUSING["writes"] = True  # the writer's refresh (set, then delete) is refused
    response = api.patch("/api/v1/schedule", {"peak_shift": False, "version": version})
    REFUSING["writes"] = False
    assert response.status_code == 200, response.content
    saved = response.json()["version"]
    assert saved == version + 1
    assert Schedule.objects.get(user=api.user).version == saved  # committed
    # The control: the refusal really left the old entry in the cache.
    assert _state(api) == "off-duty"
    # The schedule API reads the committed row: a read-then-PATCH loop heals at once.
    assert api.get("/api/v1/schedule").json()["version"] == saved
    stale = api.patch("/api/v1/schedule", {"curve": "step", "version": version})
    assert stale.status_code == 409
    assert f"at version {saved}" in stale.json()["message"]
    assert api.patch("/api/v1/schedule", {"curve": "step", "version": saved}).status_code == 200
    # Verdicts follow within the bound, not the entry's lifetime.
    wall.advance(BOUND + 0.01)
    assert _state(api) == "on-duty"


@pytest.mark.django_db(transaction=True)
def test_a_save_whose_cache_is_refused_outright_still_succeeds_at_the_page_and_command(
    user: User, settings: Any
) -> None:
    """A real Redis client against a closed port: every cache call is refused."""
    page = Client()
    page.force_login(user)
    html = page.get("/schedule/").content.decode()
    form = as_post(form_fields(html, "schedule-form"), curve="step")
    settings.CACHES = {
        "default": {
            "BACKEND": "curfew_core.store.redis_cache.SharedRedisCache",
            "LOCATION": CLOSED_PORT_REDIS,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    response = page.post("/schedule/", form)
    assert response.status_code == 302, response.content[:500]
    row = Schedule.objects.get(user=user)
    assert row.version == 1
    saved = schedule_update(user=user, changes={"curve": "linear"}, source="test")
    assert saved.version == 2


def _drop_after_commit_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the process were killed right after the commit: no hook runs."""
    wrapper = type(connections["default"])
    monkeypatch.setattr(
        wrapper, "run_and_clear_commit_hooks", lambda self: self.run_on_commit.clear()
    )


@pytest.mark.django_db(transaction=True)
def test_killed_between_commit_and_refresh_the_old_entry_goes_within_the_bound(
    api: ApiClient, refusing_cache: None, wall: Wall, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _state(api) == "off-duty"
    with monkeypatch.context() as killed:
        _drop_after_commit_hooks(killed)
        schedule_update(user=api.user, changes={"peak_shift": False}, source="test")
    assert Schedule.objects.get(user=api.user).config["peak_shift"] is False  # committed
    assert _state(api) == "off-duty"  # the control: nothing refreshed the cache
    assert api.get("/api/v1/schedule").json()["peak_shift"] is False
    wall.advance(BOUND + 0.01)
    assert _state(api) == "on-duty"


@pytest.fixture
def stalled_redis() -> Iterator[str]:
    """A port that accepts connections and never answers (a stalled Redis)."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)  # never accepted: the kernel completes the handshake, nobody reads
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"


@pytest.mark.django_db(transaction=True)
def test_a_save_whose_cache_refresh_stalls_still_succeeds(
    user: User, settings: Any, stalled_redis: str
) -> None:
    page = Client()
    page.force_login(user)
    html = page.get("/schedule/").content.decode()
    form = as_post(form_fields(html, "schedule-form"), curve="step")
    settings.CACHES = {
        "default": {
            "BACKEND": "curfew_core.store.redis_cache.SharedRedisCache",
            "LOCATION": stalled_redis,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    response = page.post("/schedule/", form)
    assert response.status_code == 302, response.content[:500]
    assert Schedule.objects.get(user=user).config["curve"] == "step"


def test_production_redis_calls_time_out_instead_of_hanging() -> None:
    """Without a socket timeout a stalled Redis hangs the after-commit refresh
    (and so the saved write's answer) for good."""
    import json
    import subprocess
    import sys

    from curfew_testkit.server import ROOT

    env = {
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "x" * 50,
        "REDIS_URL": "redis://127.0.0.1:6379/2",
        "DJANGO_SETTINGS_MODULE": "curfew_site.settings",
    }
    script = (
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.CACHES['default']['OPTIONS']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    options = json.loads(done.stdout)
    assert 0 < options["socket_timeout"] <= 10
    assert 0 < options["socket_connect_timeout"] <= 10
