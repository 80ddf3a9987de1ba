"""What changed lately, across processes (read by the capsule watcher)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import CharField, Value

from curfew_core.models import ApiToken, Override, Schedule

#: (table, user id, stamp, token digest): one committed change.
Change = tuple[str, int, datetime, str]


def _blank(text: str) -> Value:
    return Value(text, output_field=CharField())


def recent_changes(since: datetime, *, limit: int) -> list[Change]:
    """Every change stamped after ``since``: one query, at most ``limit`` rows.

    Schedules and overrides by ``updated_at``, revoked tokens by ``revoked_at``.
    """
    schedules = Schedule.objects.order_by().filter(updated_at__gt=since)
    overrides = Override.objects.order_by().filter(updated_at__gt=since)
    revoked = ApiToken.objects.order_by().filter(revoked_at__gt=since)
    query = schedules.values_list(_blank("schedule"), "user_id", "updated_at", _blank("")).union(
        overrides.values_list(_blank("override"), "user_id", "updated_at", _blank("")),
        revoked.values_list(_blank("token"), "user_id", "revoked_at", "digest"),
        all=True,
    )
    return [tuple(row) for row in query[:limit]]
