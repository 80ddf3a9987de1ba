"""Overtime, force-off, back to schedule and the time machine ("pretend it is ...")."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction

from curfew_core import models
from curfew_core.engine import NIGHT, OverrideError, Schedule, segments
from curfew_core.models import AuditEntry, Override
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.messages import Message
from curfew_core.schedules.override_commands import DEFAULT_PRETEND, OverrideCommand, debug_moment
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record, moment
from curfew_core.services.teams import member_overtime_taken

#: Force-off lasts until the next wake-up; a schedule with no night at all
#: still gets an end, so no override is silently permanent.
_FORCE_OFF_FALLBACK = timedelta(hours=12)


def next_wake_up(now: datetime, schedule: Schedule) -> datetime:
    """When the coming (or current) night ends, by the schedule alone."""
    in_night = False
    for segment in segments(now, now + timedelta(hours=48), schedule):
        if segment.state in NIGHT:
            in_night = True
        elif in_night:
            return segment.start
    return now + _FORCE_OFF_FALLBACK


def _schedule_in_transaction(user: User) -> Schedule:
    """The user's schedule as this transaction sees it, read from the row.

    Not the cache: inside a larger transaction (the config import saves the
    schedule first) the cache may hold the old schedule, and filling it from
    here would cache a row that may yet roll back.
    """
    row = models.Schedule.objects.filter(user=user).only("config").first()
    return schedule_config.build(schedule_config.with_defaults(row.config if row else {}))


@transaction.atomic
def override_apply(
    *,
    user: User,
    command: OverrideCommand,
    now: datetime,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> Override:
    """Apply one override command as of the real instant ``now``.

    Overtime and force-off replace each other (the latest word wins); ``auto``
    clears every override including the time machine, which otherwise ends by
    itself ``command.duration`` after ``now``. Each command leaves an
    audit entry (``actor`` through ``door``; ``None`` is the system).
    """
    override, _ = Override.objects.select_for_update().get_or_create(user=user)
    schedule = _schedule_in_transaction(user)
    if command.verb == "overtime":
        assert command.duration is not None
        override.overtime_until = now + command.duration
        override.forced_off_until = None
        # A team may let members' overtime lift its night, for a while from now.
        member_overtime_taken(user=user, now=now)
    elif command.verb == "off":
        # Measured on the real clock even while the time machine is set.
        override.forced_off_until = next_wake_up(now, schedule)
        override.overtime_until = None
    elif command.verb == "auto":
        override.overtime_until = override.forced_off_until = None
        override.debug_at = override.debug_until = None
    elif command.verb == "debug":
        assert command.moment is not None
        override.debug_at = debug_moment(command.moment, now=now, tz=schedule.timezone)
        override.debug_until = now + (command.duration or DEFAULT_PRETEND)
    elif command.verb == "debug-clear":
        override.debug_at = override.debug_until = None
    else:  # pragma: no cover - OverrideCommand only carries the verbs above
        raise OverrideError(Message("unknown override %(verb)s", verb=repr(command.verb)))
    override.save()
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.OVERRIDE,
        action=command.verb,
        changes={
            "overtime_until": moment(override.overtime_until),
            "forced_off_until": moment(override.forced_off_until),
            "debug_at": moment(override.debug_at),
            "debug_until": moment(override.debug_until),
        },
    )
    after_commit(user_id=user.pk)
    return override
