"""Saving a user's schedule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from curfew_core.models import UNSAVED_VERSION, AuditEntry, Schedule, ScheduleRevision
from curfew_core.schedules import config as schedule_config
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record


class StaleVersion(Exception):
    """The caller edited an older version; saving would lose someone's change."""

    def __init__(self, *, expected: int, current: int) -> None:
        self.expected = expected
        self.current = current
        super().__init__(
            f"version {expected} is stale: the schedule is at version {current}; "
            "reload it and apply your change again"
        )


def schedule_get_or_create(*, user: User) -> Schedule:
    # Unsaved until the first save: the version readers hand out for a user
    # with no row must still match, or that first save would be refused as stale.
    schedule, _ = Schedule.objects.get_or_create(
        user=user,
        defaults={"config": schedule_config.default_config(), "version": UNSAVED_VERSION},
    )
    return schedule


@transaction.atomic
def schedule_update(
    *,
    user: User,
    changes: Mapping[str, Any],
    expected_version: int | None = None,
    source: str,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> Schedule:
    """Apply ``changes`` (API-shaped settings) to the user's schedule.

    Validates everything first (``ConfigError``) and checks ``expected_version``
    under a row lock (``StaleVersion``); on either, nothing is written. Each
    save keeps a revision and an audit entry (``actor`` through ``door``;
    ``None`` is the system). An empty change set saves nothing.
    """
    schedule_get_or_create(user=user)
    schedule = Schedule.objects.select_for_update().get(user=user)
    if expected_version is not None and expected_version != schedule.version:
        raise StaleVersion(expected=expected_version, current=schedule.version)
    new_config = schedule_config.apply_changes(schedule.config, changes)
    old_config = schedule_config.with_defaults(schedule.config)
    if new_config == old_config:
        return schedule
    if not schedule.revisions.exists():
        # Keep what was there before the first change too.
        ScheduleRevision.objects.create(
            schedule=schedule, version=schedule.version, config=schedule.config, source="initial"
        )
    schedule.config = new_config
    schedule.version += 1
    schedule.save(update_fields=["config", "version", "updated_at"])
    ScheduleRevision.objects.create(
        schedule=schedule, version=schedule.version, config=new_config, source=source
    )
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.SCHEDULE,
        action="saved",
        changes={
            "version": schedule.version,
            "fields": {
                key: {"old": old_config.get(key), "new": new_config.get(key)}
                for key in schedule_config.FIELDS
                if old_config.get(key) != new_config.get(key)
            },
        },
    )
    after_commit(user_id=schedule.user_id)
    return schedule
