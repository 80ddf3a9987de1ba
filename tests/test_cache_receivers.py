"""Every way a write commits pushes it to the cache (issue 40).

With Redis an entry's freshness is five gateway lifetimes (300 s), so a
committed write must be pushed, not waited for: the services push their own
(``services.after_commit``); a model saved or deleted any other way (the
admin's ``save_model``, a shell, a management command, a cascade) is pushed by
the model signals (``services.cache_receivers``). Here the ORM writes around
the services and a warm verdict sees the change at once, well inside the
freshness bound; a service's save and its signal push once; and the settings
pick the long bound only where pushes reach every process (Redis).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test.utils import CaptureQueriesContext

from curfew_core.models import Override, Schedule, TeamMembership
from curfew_core.selectors import bundles
from curfew_core.selectors.teams import member_key, member_user_id
from curfew_core.services import after_commit as after_commit_module
from curfew_core.services.after_commit import after_commit, on_commit_once
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import team_create
from tests.conftest import ApiClient

ROOT = Path(__file__).resolve().parents[1]
VERDICT = "/api/v1/verdict"
PEAK = {"at": "2026-09-29T10:00:00+08:00"}
#: Far longer than this test takes: only a push can show the change in time.
LONG = 300


@pytest.fixture
def long_freshness(settings: Any) -> None:
    """Each test takes well under the in-memory cache's own 5 s: only a push
    shows a change here."""
    settings.CURFEW_CACHE_FRESH_SECONDS = LONG


@pytest.fixture(autouse=True)
def _empty_cache() -> Any:
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def _verdict(api: ApiClient) -> dict[str, Any]:
    response = api.post(VERDICT, PEAK)
    assert response.status_code == 200, response.content
    return dict(response.json())


@pytest.mark.django_db(transaction=True)
def test_a_schedule_saved_around_the_services_reaches_a_warm_verdict_at_once(
    api: ApiClient, long_freshness: None
) -> None:
    assert _verdict(api)["state"] == "off-duty"  # peak hours, cached now
    assert _verdict(api)["state"] == "off-duty"  # warm
    # What the admin's save_model or a shell does: the model's own save().
    Schedule(user=api.user, config={"peak_shift": False}, version=1).save()
    assert _verdict(api)["state"] == "on-duty"
    row = Schedule.objects.get(user=api.user)
    row.config = {"peak_shift": True}
    row.version = 2
    row.save()
    assert _verdict(api)["state"] == "off-duty"
    row.delete()  # defaults again: peak hours are off duty
    assert _verdict(api)["state"] == "off-duty"


@pytest.mark.django_db(transaction=True)
def test_an_override_saved_and_deleted_around_the_services_is_pushed(
    api: ApiClient, long_freshness: None
) -> None:
    assert _verdict(api)["override"] is None
    _force_off(api.user)
    assert _verdict(api)["override"] == "off"
    Override.objects.get(user=api.user).delete()
    assert _verdict(api)["override"] is None


def _force_off(user: User) -> None:
    from datetime import UTC, datetime

    Override.objects.create(user=user, forced_off_until=datetime(2026, 9, 29, 12, 0, tzinfo=UTC))


@pytest.mark.django_db(transaction=True)
def test_a_team_and_a_membership_changed_around_the_services_are_pushed(
    api: ApiClient, other_user: User, long_freshness: None
) -> None:
    team = team_create(name="night-owls", admin=other_user)
    assert bundles.bundle_for(api.user.pk).team_id is None  # cached: in no team
    membership = TeamMembership.objects.create(team=team, user=api.user)
    assert bundles.bundle_for(api.user.pk).team_id == team.pk
    assert member_user_id(team_id=team.pk, username=api.user.username) == api.user.pk
    before = bundles.team_raw(team.pk)  # cached now
    assert before is not None
    team.refresh_from_db()
    team.members_may_exempt = not team.members_may_exempt
    team.save()
    after = bundles.team_raw(team.pk)
    assert after is not None
    assert after["members_may_exempt"] == team.members_may_exempt
    membership.delete()
    assert bundles.bundle_for(api.user.pk).team_id is None
    # The team key no longer finds them by name (forgotten, read again).
    from django.core.cache import cache

    assert cache.get(member_key(team.pk, api.user.username)) is None


@pytest.mark.django_db(transaction=True)
def test_a_renamed_member_is_not_found_by_the_old_name(
    user: User, other_user: User, long_freshness: None
) -> None:
    team = team_create(name="renamers", admin=other_user)
    TeamMembership.objects.create(team=team, user=user)
    assert member_user_id(team_id=team.pk, username="ada") == user.pk  # cached now
    user.username = "ada-lovelace"
    user.save()
    assert member_user_id(team_id=team.pk, username="ada") is None
    assert member_user_id(team_id=team.pk, username="ada-lovelace") == user.pk
    # A save that cannot rename (sign-in's last_login) does not read the old name.
    with CaptureQueriesContext(transaction.get_connection()) as seen:
        user.save(update_fields=["last_login"])
    assert not [q for q in seen.captured_queries if q["sql"].startswith('SELECT "auth_user"')]
    with CaptureQueriesContext(transaction.get_connection()) as seen:
        user.save()
    assert [q for q in seen.captured_queries if q["sql"].startswith('SELECT "auth_user"')]


@pytest.mark.django_db(transaction=True)
def test_a_service_save_and_its_signal_push_once(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []
    original = after_commit_module.run_after_commit

    def counted(user_id: int, **kwargs: Any) -> None:
        ran.append(user_id)
        original(user_id, **kwargs)

    monkeypatch.setattr(after_commit_module, "run_after_commit", counted)
    schedule_update(user=api.user, changes={"peak_shift": False}, source="test")
    assert ran == [api.user.pk]


@pytest.mark.django_db(transaction=True)
def test_on_commit_once_keeps_steps_of_a_savepoint_rolled_back_apart() -> None:
    ran: list[str] = []

    def step(name: str) -> Any:
        def steps() -> None:
            ran.append(name)

        return steps

    with transaction.atomic():
        try:
            with transaction.atomic():
                on_commit_once("k", step("inner"))
                raise RuntimeError
        except RuntimeError:
            pass
        # The inner one went with its savepoint: this one is registered.
        on_commit_once("k", step("outer"))
        # Registered where it would run whenever these would: one is enough.
        on_commit_once("k", step("again"))
        with transaction.atomic():
            on_commit_once("k", step("nested"))
    assert ran == ["outer"]


@pytest.mark.django_db(transaction=True)
def test_after_commit_merges_only_what_it_covers(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        after_commit_module,
        "run_after_commit",
        lambda user_id, **kw: ran.append((user_id, kw["token_digests"], kw["refresh"])),
    )
    with transaction.atomic():
        after_commit(user_id=user.pk, token_digests=["a"], refresh=False, publish=False)
        after_commit(user_id=user.pk)  # refreshes: not covered by the first
        after_commit(user_id=user.pk, token_digests=["a"])  # not covered: the digest
        after_commit(user_id=user.pk, token_digests=["a"], refresh=False)  # covered
    assert ran == [(user.pk, ("a",), False), (user.pk, (), True), (user.pk, ("a",), True)]


# -- the bound, in the settings ----------------------------------------------------------

INSPECT = """
import json, django
django.setup()
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "fresh": settings.CURFEW_CACHE_FRESH_SECONDS,
    "max_age": settings.CURFEW_VERDICT_MAX_AGE,
    "pool": db.get("OPTIONS", {}).get("pool"),
    "conn_max_age": db["CONN_MAX_AGE"],
    "health": db.get("CONN_HEALTH_CHECKS"),
    "connect_timeout": db.get("OPTIONS", {}).get("connect_timeout"),
}))
"""


def _settings(**env: str) -> dict[str, Any]:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("CURFEW_")}
    for key in ("REDIS_URL", "DATABASE_URL", "CONN_MAX_AGE"):
        base.pop(key, None)
    base.update({"DJANGO_SETTINGS_MODULE": "curfew_site.settings_base", "SECRET_KEY": "x" * 60})
    base.update(env)
    done = subprocess.run(
        [sys.executable, "-c", INSPECT],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_freshness_is_long_only_where_writes_are_pushed_to_every_process() -> None:
    assert _settings()["fresh"] == 5  # no Redis: nothing crosses processes
    pushed = _settings(REDIS_URL="redis://cache.internal:6379/0")
    assert pushed["fresh"] == 5 * pushed["max_age"] == 300
    assert _settings(REDIS_URL="redis://c:6379/0", CURFEW_VERDICT_MAX_AGE="30")["fresh"] == 150
    # The operator's word wins either way.
    assert _settings(REDIS_URL="redis://c:6379/0", CURFEW_CACHE_FRESH_SECONDS="7")["fresh"] == 7
    assert _settings(CURFEW_CACHE_FRESH_SECONDS="60")["fresh"] == 60


def test_postgresql_reads_through_a_pool_of_live_connections() -> None:
    url = "postgres://curfew@db.internal:5432/curfew"
    seen = _settings(DATABASE_URL=url)
    assert seen["pool"] == {"min_size": 2, "max_size": 40, "timeout": 5}
    assert (seen["conn_max_age"], seen["health"], seen["connect_timeout"]) == (0, True, 5)
    assert _settings(DATABASE_URL=url, CURFEW_DATABASE_POOL="8")["pool"]["max_size"] == 8
    # How long a thread waits for a free connection (PostgreSQL away: then its 503).
    assert _settings(DATABASE_URL=url, CURFEW_DATABASE_POOL_WAIT="1.5")["pool"]["timeout"] == 1.5
    # No pool: CONN_MAX_AGE keeps a connection per thread instead (Django's rule).
    assert _settings(DATABASE_URL=url, CURFEW_DATABASE_POOL="0")["pool"] is None
    kept = _settings(DATABASE_URL=url, CONN_MAX_AGE="60")
    assert (kept["pool"], kept["conn_max_age"]) == (None, 60)
    assert _settings()["pool"] is None  # SQLite


@pytest.mark.django_db(transaction=True)
def test_a_refused_push_is_made_again_once_the_cache_answers(
    api: ApiClient, settings: Any, tmp_path: Path
) -> None:
    """A lost push is the one case the long bound covers alone: not while the
    process lives, since it drops what it could not as soon as Redis answers
    (its listener calls ``retry_forgets`` when it is subscribed again)."""
    from curfew_core.store import cache_policy
    from tests.api.refusing_cache import REFUSING

    settings.CACHES = {
        "default": {"BACKEND": "tests.api.refusing_cache.RefusingCache", "LOCATION": str(tmp_path)}
    }
    settings.CURFEW_CACHE_FRESH_SECONDS = LONG
    try:
        assert _verdict(api)["state"] == "off-duty"  # cached
        REFUSING["writes"] = True  # the refresh, and the drop after it, refused
        Schedule(user=api.user, config={"peak_shift": False}, version=1).save()
        REFUSING["writes"] = False
        assert cache_policy.unforgotten() == 1
        assert _verdict(api)["state"] == "off-duty"  # the control: the push was lost
        assert cache_policy.retry_forgets() == 1
        assert cache_policy.unforgotten() == 0
        assert _verdict(api)["state"] == "on-duty"
    finally:
        REFUSING["writes"] = False
        cache_policy._unforgotten.clear()
