"""The shared schedule cache under a read/write race (several processes)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.selectors import bundles
from curfew_core.services.schedules import schedule_update


@pytest.mark.django_db(transaction=True)
def test_a_reader_that_loaded_before_a_save_cannot_put_the_old_rows_back(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reader B misses the cache and reads the rows; writer A commits a save
    before B stores what it read. B's stale rows must not win."""
    real_load = bundles._load_joined  # the user's rows and their team's, one query
    calls: list[int] = []

    def load_then_lose_the_race(user_id: int) -> tuple[dict[str, Any], Any]:
        rows = real_load(user_id)
        if not calls:
            calls.append(user_id)
            # Another worker saves and commits right after this reader's query.
            schedule_update(user=user, changes={"curfew_start": "22:00"}, source="test")
        return rows

    monkeypatch.setattr(bundles, "_load_joined", load_then_lose_the_race)
    first = bundles.bundle_for(user.pk)
    assert first.config["curfew_start"] == "23:00"  # what it read, before the save
    bundles._built.clear()  # another process: no memo of its own
    assert bundles.bundle_for(user.pk).config["curfew_start"] == "22:00"
