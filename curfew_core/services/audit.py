"""Recording who changed what, inside the change's own transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from curfew_core.models import AuditEntry, Team

Channel = AuditEntry.Channel


def _actor_name(actor: User | None) -> str:
    return actor.get_username() if actor is not None else "system"


def moment(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def changed_fields(
    old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """Each of ``keys`` whose value differs, as an entry stores a change:
    ``{"old": ..., "new": ...}`` (``selectors.audit`` reads it so)."""
    return {
        key: {"old": old.get(key), "new": new.get(key)}
        for key in keys
        if old.get(key) != new.get(key)
    }


def audit_record(
    *,
    user: User,
    actor: User | None,
    channel: str,
    subject: str,
    action: str,
    changes: Mapping[str, Any],
    team: Team | None = None,
) -> AuditEntry:
    """One audit row (of ``team``, for a team's change). ``changes`` must be
    JSON and hold no secret (callers pass names, prefixes and settings, never a
    raw token or a digest)."""
    if channel not in Channel.values:
        raise ValueError(f"unknown channel {channel!r}; use one of {', '.join(Channel.values)}")
    return AuditEntry.objects.create(
        user=user,
        team=team,
        actor=actor,
        actor_name=_actor_name(actor),
        channel=channel,
        subject=subject,
        action=action,
        changes=dict(changes),
    )
