"""Saving a user's schedule."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import translation
from django.utils.translation import gettext

from curfew_core.models import UNSAVED_VERSION, AuditEntry, Schedule, ScheduleRevision
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.account import preferred_language
from curfew_core.selectors.web import fields_changed_since
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record, changed_fields


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


def informative_replies() -> dict[str, str]:
    """Replies that say what happened and when it ends, in the active language
    (issue 24 item 4): a bare "。" at peak hours reads as a broken tool to
    someone who did not set Curfew up. ``{until}`` is filled by the engine."""
    return {
        "off_duty_reply": gettext("Curfew: peak hours until {until}."),
        "lights_out_reply": gettext("Curfew: lights out until {until}."),
    }


def persona_for(language: str) -> dict[str, Any]:
    """The tired persona and its tier texts in ``language`` (a Django code):
    Chinese for ``zh*``, English otherwise."""
    persona, tiers = schedule_config.PERSONA_PRESETS[
        "zh" if language.lower().startswith("zh") else "en"
    ]
    return {"tired_persona": persona, "tier_texts": list(tiers)}


def schedule_create_for_new_account(*, user: User) -> Schedule:
    """A new account's schedule: the defaults, with informative replies and
    the tired persona in the account's language (its preference, else the
    language active now).

    Written as version 1 with its revision, not left to the unsaved defaults:
    version 0 means "no row, the declared defaults" to every cache, and the
    declared defaults keep the seed's terse replies, so accounts made before
    this keep exactly what they read."""
    language = preferred_language(user) or translation.get_language() or "en"
    with translation.override(language):
        config = {
            **schedule_config.default_config(),
            **informative_replies(),
            # The sleepy voice in the account's language too: a Chinese
            # persona on an English account reads as a bug (issue 25).
            **persona_for(language),
        }
    schedule = Schedule.objects.create(user=user, config=config, version=UNSAVED_VERSION + 1)
    ScheduleRevision.objects.create(
        schedule=schedule, version=schedule.version, config=config, source="new account"
    )
    return schedule


def schedule_start_on_sign_in(*, user: User) -> Schedule | None:
    """A person signing in who has no schedule yet (made by ``createsuperuser``
    or the admin, or before accounts got one) gets a new account's: replies
    and persona in their language, not the declared defaults' Chinese ones.
    Until then gateways got those defaults; from now on they get what the
    page shows. Someone with a schedule keeps it untouched (None)."""
    if Schedule.objects.filter(user=user).exists():
        return None
    defaults = schedule_config.default_config()
    try:
        with transaction.atomic():
            schedule = schedule_create_for_new_account(user=user)
            _audit_saved(
                user,
                schedule,
                defaults,
                schedule.config,
                schedule.config,
                actor=None,
                channel=AuditEntry.Channel.SYSTEM,
            )
    except IntegrityError:
        return None  # another sign-in made it meanwhile
    after_commit(user_id=user.pk)
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
    own_settings: Collection[str] | None = None,
) -> Schedule:
    """Apply ``changes`` (API-shaped settings) to the user's schedule.

    Validates everything first (``ConfigError``) and checks ``expected_version``
    under a row lock (``StaleVersion``); on either, nothing is written. Each
    save keeps a revision and an audit entry (``actor`` through ``door``;
    ``None`` is the system). An empty change set saves nothing.

    ``own_settings``: the save is of these settings only (a section of the
    page): a newer version is then a conflict only if it changed one of them.
    """
    schedule_get_or_create(user=user)
    schedule = Schedule.objects.select_for_update().get(user=user)
    if expected_version is not None and _stale(user, expected_version, schedule, own_settings):
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
    _audit_saved(
        user, schedule, old_config, new_config, schedule_config.FIELDS, actor=actor, channel=channel
    )
    after_commit(user_id=schedule.user_id)
    return schedule


def _audit_saved(
    user: User,
    schedule: Schedule,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    keys: Iterable[str],
    *,
    actor: User | None,
    channel: str,
) -> None:
    """A save's entry: the version it made and each of ``keys`` it changed
    (``selectors.audit`` reads them)."""
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.SCHEDULE,
        action="saved",
        changes={"version": schedule.version, "fields": changed_fields(old, new, keys)},
    )


def _stale(
    user: User, expected: int, schedule: Schedule, own_settings: Collection[str] | None
) -> bool:
    """Whether a save made on version ``expected`` would lose someone's
    change. A save of some settings only loses one if a save since changed
    one of them; a version not on record (none posted, or a made-up one)
    says nothing about what changed since: a conflict, never a silent
    overwrite."""
    if expected == schedule.version:
        return False
    if own_settings is None:
        return True
    changed = fields_changed_since(user, expected)
    return changed is None or not set(changed).isdisjoint(own_settings)
