"""The day plan is memoised per built schedule: a save must show at once."""

from __future__ import annotations

from typing import Any


def _winding_start(api: Any) -> str:
    day = api.get("/api/v1/state").json()["day"]
    return next(
        segment["start"]
        for segment in day
        if segment["state"] == "winding" and segment["start"] != "00:00"
    )


def test_a_saved_curfew_start_shows_in_the_next_day_plan(api: Any) -> None:
    assert _winding_start(api) == "23:00"
    assert _winding_start(api) == "23:00"  # served from the memo now
    response = api.patch("/api/v1/schedule", {"curfew_start": "22:00"})
    assert response.status_code == 200, response.content
    assert _winding_start(api) == "22:00"


def test_each_caller_gets_its_own_copy(api: Any) -> None:
    first = api.get("/api/v1/state").json()["day"]
    from django.utils import timezone

    from curfew_core.selectors import verdicts
    from curfew_core.selectors.bundles import bundle_for

    plan = verdicts.day_plan(bundle_for(api.user.pk), timezone.now())
    plan[0]["state"] = "scribbled"
    assert api.get("/api/v1/state").json()["day"] == first
