"""The verdict's hot path: no database once warm, and a change is seen at once.
Also the day plan a status display draws."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from curfew_core.models import Schedule
from curfew_core.schedules.override_commands import from_words
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.store.cache_policy import bundle_key
from tests.api.conftest import FrozenClock, local

VERDICT = "/api/v1/verdict"
PEAK = {"at": "2026-09-29T10:00:00+08:00"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", VERDICT, PEAK),
        ("post", VERDICT, {}),
        ("get", "/api/v1/state", None),
    ],
)
def test_warm_reads_make_zero_queries(
    api: Any, django_assert_num_queries: Any, method: str, path: str, body: Any
) -> None:
    def call() -> Any:
        return api.get(path) if method == "get" else api.post(path, body)

    # Control: the cold call does go to the database (the counter counts).
    with CaptureQueriesContext(connection) as cold:
        assert call().status_code == 200
    assert len(cold.captured_queries) > 0
    with django_assert_num_queries(0):
        response = call()
    assert response.status_code == 200
    with django_assert_num_queries(0):
        assert call().status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_schedule_api_reads_the_committed_row_not_the_cache(api: Any) -> None:
    """Not a hot path: a client reads the version it will PATCH with, so it must
    be the row's (a stale cache entry here made read-then-PATCH loops 409 forever)."""
    assert api.patch("/api/v1/schedule", {"curve": "step"}).json()["version"] == 1
    assert api.get("/api/v1/schedule").json()["version"] == 1
    Schedule.objects.filter(user=api.user).update(version=5)  # around the services
    assert api.get("/api/v1/schedule").json()["version"] == 5


@pytest.mark.django_db(transaction=True)
def test_a_patch_is_seen_by_the_very_next_verdict(api: Any, django_assert_num_queries: Any) -> None:
    assert api.post(VERDICT, PEAK).json()["state"] == "off-duty"
    with django_assert_num_queries(0):
        assert api.post(VERDICT, PEAK).json()["state"] == "off-duty"
    assert api.patch("/api/v1/schedule", {"peak_shift": False}).status_code == 200
    assert api.post(VERDICT, PEAK).json()["state"] == "on-duty"
    with django_assert_num_queries(0):  # and warm again
        assert api.post(VERDICT, PEAK).json()["state"] == "on-duty"


@pytest.mark.django_db(transaction=True)
def test_an_override_is_seen_by_the_very_next_verdict(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    assert api.post(VERDICT, {}).json()["action"] == "pass"
    api.post("/api/v1/overrides", {"off": True})
    assert api.post(VERDICT, {}).json()["action"] == "short-circuit"
    api.post("/api/v1/overrides", {"auto": True})
    assert api.post(VERDICT, {}).json()["action"] == "pass"


@pytest.mark.django_db
def test_the_cache_is_dropped_when_the_save_commits(
    api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The drop waits for the commit: until then a reader still finds the
    committed rows in the cache (never a row that might yet roll back).

    What the cache holds is read directly: a verdict read here, inside the
    test's own transaction, would see the uncommitted row whenever it went to
    the database for any reason (a loaded machine's clock, once in CI), which
    a reader on its own connection never does."""
    assert api.inner.post(VERDICT, PEAK).json()["state"] == "off-duty"
    committed = cache.get(bundle_key(api.user.pk))
    assert committed is not None
    assert committed["config"]["peak_shift"] is True
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        schedule_update(user=api.user, changes={"peak_shift": False}, source="test")
        assert cache.get(bundle_key(api.user.pk)) == committed
    assert callbacks
    after = cache.get(bundle_key(api.user.pk))
    assert after is None or after["config"]["peak_shift"] is False
    assert api.inner.post(VERDICT, PEAK).json()["state"] == "on-duty"


@pytest.mark.django_db
def test_a_rolled_back_save_leaves_no_trace_in_the_cache(api: Any) -> None:
    """An override applied inside a transaction that later fails (as the
    config import does) must not cache the schedule it saw uncommitted."""
    before = api.get("/api/v1/schedule").json()
    cache.clear()  # cold: the next read inside the transaction would fill it

    def save_then_fail() -> None:
        with transaction.atomic():
            schedule_update(user=api.user, changes={"timezone": "Europe/London"}, source="test")
            override_apply(
                user=api.user,
                command=from_words(["debug", "01:30"]),
                now=local("2026-09-29 20:00"),
            )
            raise RuntimeError("something later in the same transaction failed")

    with pytest.raises(RuntimeError):
        save_then_fail()
    assert api.get("/api/v1/schedule").json() == before
    assert api.get("/api/v1/state").json()["debug_at"] is None


# -- the day plan -------------------------------------------------------------

WORKDAY = [
    ("00:00", "03:00", "winding", False),
    ("03:00", "09:00", "lights-out", False),
    ("09:00", "12:00", "off-duty", True),
    ("12:00", "14:00", "on-duty", False),
    ("14:00", "18:00", "off-duty", True),
    ("18:00", "23:00", "on-duty", False),
    ("23:00", "24:00", "winding", False),
]
VALLEY_DAY = [
    ("00:00", "03:00", "winding", False),
    ("03:00", "09:00", "lights-out", False),
    ("09:00", "23:00", "on-duty", False),
    ("23:00", "24:00", "winding", False),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        ("2026-09-29 12:30", WORKDAY),  # Tuesday
        ("2026-09-27 12:30", VALLEY_DAY),  # Sunday
        ("2026-10-01 12:30", VALLEY_DAY),  # National Day (a Thursday)
        ("2026-10-09 12:30", WORKDAY),  # the Friday after: a normal workday
    ],
)
def test_day_plan_segments(
    api: Any, clock: FrozenClock, moment: str, expected: list[tuple[str, str, str, bool]]
) -> None:
    clock.set(local(moment))
    day = api.get("/api/v1/state").json()["day"]
    assert [(s["start"], s["end"], s["state"], s["peak"]) for s in day] == expected


@pytest.mark.django_db
def test_day_plan_follows_an_extra_holiday(api: Any, clock: FrozenClock) -> None:
    api.patch("/api/v1/schedule", {"extra_holidays": ["2026-10-09"]})
    clock.set(local("2026-10-09 12:30"))
    day = api.get("/api/v1/state").json()["day"]
    assert [(s["start"], s["end"], s["state"], s["peak"]) for s in day] == VALLEY_DAY


@pytest.mark.django_db
def test_day_plan_of_the_time_machine_day(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-27 12:30"))  # Sunday
    api.post("/api/v1/overrides", {"debug": "2026-09-29 12:30"})
    day = api.get("/api/v1/state").json()["day"]
    assert [(s["start"], s["end"], s["state"], s["peak"]) for s in day] == WORKDAY
