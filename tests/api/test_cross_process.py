"""Writes made in another process reach this one's cached verdicts.

Without Redis each process caches in its own memory, where another process's
cache drop cannot reach: ``manage.py curfew off`` run beside a serving
``make run`` must still be obeyed, within the local entry's short lifetime.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings

from curfew_core.models import ApiToken, Override, Schedule
from curfew_core.store.cache_policy import LOCAL_CACHE_SECONDS, lifetime, shared_cache
from curfew_testkit.server import ServedApp
from tests.api.conftest import local

PEAK = {"at": "2026-09-29T10:00:00+08:00"}
#: What runs without REDIS_URL (CI sets one; these tests are about its absence).
local_memory = override_settings(
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)


@local_memory
@pytest.mark.django_db
def test_a_local_cache_entry_stands_in_for_the_database_only_briefly(
    api: Any, django_assert_num_queries: Any
) -> None:
    assert api.post("/api/v1/verdict", PEAK).json()["reply"] == "。"
    # Another process saves (its cache drop lands in its own memory, not ours).
    Schedule.objects.filter(user=api.user).update(
        config={"off_duty_reply": "changed elsewhere"}, version=7
    )
    Override.objects.create(user=api.user, forced_off_until=local("2099-01-01 09:00"))
    with django_assert_num_queries(0):
        assert api.post("/api/v1/verdict", PEAK).json()["reply"] == "。"  # still cached
    later = time.time() + LOCAL_CACHE_SECONDS + 0.5
    with mock.patch("django.core.cache.backends.locmem.time") as clock:
        clock.time.return_value = later
        verdict = api.post("/api/v1/verdict", PEAK).json()
    assert verdict["override"] == "off"
    assert verdict["reply"] == "明天再说。"


@local_memory
@pytest.mark.django_db
def test_a_token_revoked_elsewhere_stops_working_here_soon(api: Any) -> None:
    assert api.get("/api/v1/state").status_code == 200  # cached
    # Revoked by another process (the settings page served by another worker).
    ApiToken.objects.filter(user=api.user).update(revoked_at=local("2026-09-29 10:00"))
    assert api.get("/api/v1/state").status_code == 200  # this process has not heard
    later = time.time() + LOCAL_CACHE_SECONDS + 0.5
    with mock.patch("django.core.cache.backends.locmem.time") as clock:
        clock.time.return_value = later
        assert api.get("/api/v1/state").status_code == 401


def test_a_shared_cache_keeps_entries_for_the_configured_time(tmp_path: Any) -> None:
    file_cache = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        }
    }
    with local_memory:
        assert not shared_cache()
        assert lifetime(3600) == LOCAL_CACHE_SECONDS
    with override_settings(CACHES=file_cache):
        assert shared_cache()
        assert lifetime(3600) == 3600


def _get(app: ServedApp, token: str, path: str) -> Any:
    request = urllib.request.Request(
        app.base_url + path, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _eventually(check: Any, *, within: float) -> Any:
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.25)


def test_a_command_run_beside_the_server_is_obeyed(served_app: ServedApp) -> None:
    token = served_app.create_user("beside-the-server")
    assert _get(served_app, token, "/api/v1/state")["forced"] is False  # now cached there
    served_app.manage("curfew", "off", "--user", "beside-the-server")
    seen = _eventually(
        lambda: _get(served_app, token, "/api/v1/state")["forced"],
        within=LOCAL_CACHE_SECONDS + 10,
    )
    assert seen is True
