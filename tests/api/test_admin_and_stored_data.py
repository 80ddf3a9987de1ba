"""The admin cannot store what breaks a user's verdicts, and stored data never 500s.

Issue 9, item 14: the admin's override form saved ``debug_at`` 9999-12-31,
after which every verdict of that user answered 500 until ``auto``. Overrides,
schedules and tokens are read-only in the admin (its only writes are actions
that call the services); and a moment out of the engine's range that is
already stored (from before, or written around the services) is ignored by
the selectors instead of failing the verdict.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.models import ApiToken, Override, Schedule
from curfew_testkit.asgi_client import Client
from tests.api.conftest import stored

FAR = datetime(9999, 12, 31, 12, 0, tzinfo=UTC)
ANCIENT = datetime(1, 1, 2, tzinfo=UTC)


@pytest.fixture
def staff(db: None) -> Client:
    admin = User.objects.create_superuser("root", password="correct horse battery")
    client = Client()
    client.force_login(admin)
    return client


@pytest.mark.django_db
def test_the_admin_cannot_save_a_bad_override(staff: Client, user: User) -> None:
    override = Override.objects.create(user=user)
    before = stored(user)
    url = f"/admin/curfew_core/override/{override.pk}/change/"
    assert staff.get(url).status_code == 200  # the control: staff can see it
    response = staff.post(
        url,
        {
            "user": user.pk,
            "debug_at_0": "9999-12-31",
            "debug_at_1": "12:00:00",
            "overtime_until_0": "",
            "overtime_until_1": "",
            "forced_off_until_0": "",
            "forced_off_until_1": "",
        },
    )
    assert response.status_code == 403
    assert staff.post("/admin/curfew_core/override/add/", {"user": user.pk}).status_code == 403
    assert stored(user) == before


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["schedule", "override", "apitoken"])
def test_schedules_overrides_and_tokens_are_read_only_in_the_admin(
    staff: Client, user: User, api: Any, model: str
) -> None:
    api.patch("/api/v1/schedule", {"curve": "step"})
    api.post("/api/v1/overrides", {"off": True})
    row = {"schedule": Schedule, "override": Override, "apitoken": ApiToken}[model]
    obj = row.objects.filter(user=user).first()
    assert obj is not None
    change = staff.get(f"/admin/curfew_core/{model}/{obj.pk}/change/")
    assert change.status_code == 200
    assert b'name="_save"' not in change.content  # nothing to save
    assert staff.get(f"/admin/curfew_core/{model}/add/").status_code == 403
    assert (
        staff.post(f"/admin/curfew_core/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert row.objects.filter(pk=obj.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["debug_at", "overtime_until", "forced_off_until"])
@pytest.mark.parametrize("moment", [FAR, ANCIENT])
def test_a_stored_moment_out_of_range_does_not_500_a_verdict(
    api: Any, field: str, moment: datetime
) -> None:
    Override.objects.create(user=api.user, **{field: moment})
    for path, body in [
        ("/api/v1/verdict", {}),
        ("/api/v1/verdict", {"at": "2026-09-29T10:00:00+08:00"}),
    ]:
        response = api.post(path, body)
        assert response.status_code == 200, response.content
    assert api.get("/api/v1/state").status_code == 200


@pytest.mark.django_db
def test_the_settings_page_survives_a_stored_moment_out_of_range(user: User) -> None:
    Override.objects.create(user=user, debug_at=FAR)
    page = Client()
    page.force_login(user)
    assert page.get("/").status_code == 200
