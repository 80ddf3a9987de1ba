"""Reads of the audit trail: a user's recent changes, in plain words."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from curfew_core.models import AuditEntry
from curfew_core.schedules.values import NIGHT_KEYS

#: Long values (a persona, a list of tier texts) are cut for the summary; the
#: admin shows them whole.
_VALUE_CHARS = 60
#: The week's days as per-day settings name them, in order.
WEEKDAY_ORDER = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class AuditItem:
    """One thing an entry changed, for a page to say in its own words: the
    setting or field (``curfew_start``, ``debug_until``) and its values
    already shown (instants on the user's clock, long values cut)."""

    key: str
    #: JSON values as stored (an instant already as ``_local`` text).
    old: Any
    new: Any
    #: For a key saying a value that is not a change (a token's kind and name).
    extra: tuple[str, ...] = ()
    #: Of a per-day setting (``weekdays``): the day this item is about
    #: (``"sat"``); ``key`` is then the time that changed on it.
    day: str = ""


@dataclass(frozen=True, slots=True)
class AuditRow:
    at: dt.datetime
    subject: str
    action: str
    channel: str
    actor: str
    #: The stored facts as one English line each (the admin's words).
    details: tuple[str, ...]
    #: The same facts, structured (``web.words.audit_lines`` says them).
    items: tuple[AuditItem, ...] = ()


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


#: A night's times in the order people read them (curfew start, lights-out, wake-up).
_NIGHT_ORDER = {name: n for n, name in enumerate(NIGHT_KEYS)}


_DayChange = tuple[str, str, Any, Any]


def _per_day(key: str, old: Any, new: Any) -> list[_DayChange] | None:
    """A per-day setting's change (``weekdays``: ``{"sat": {"curfew_start":
    "22:30"}}``) as ``(day, key, old, new)``, one for each time of each day
    that changed, days in the week's order: every day an edit changed, never
    cut after the first. ``None`` for a setting that is not per day."""
    if not (_is_map(old) and _is_map(new)) or not (old or new):
        return None
    before, after = old or {}, new or {}
    days = _week_days(before, after)
    if days is None:
        return None
    out: list[_DayChange] = []
    for day in days:
        out += _day_changes(key, day, before.get(day), after.get(day))
    return out


def _is_map(value: Any) -> bool:
    """A stored per-day value: a mapping, or nothing (``None``)."""
    return isinstance(value, dict | type(None))


def _week_days(before: dict[str, Any], after: dict[str, Any]) -> list[str] | None:
    """The days named on either side, in the week's order; ``None`` if a key
    is not a day of the week (then the setting is not per day)."""
    days = [*before, *(day for day in after if day not in before)]
    if not all(day in WEEKDAY_ORDER for day in days):
        return None
    order = {day: n for n, day in enumerate(WEEKDAY_ORDER)}
    days.sort(key=lambda day: order.get(day, len(order)))
    return days


def _day_changes(key: str, day: str, was: Any, now: Any) -> list[_DayChange]:
    """One day's changes: each time that changed, a night's times in their
    own order (not the stored one: PostgreSQL's jsonb keeps keys by length,
    lights_out before curfew_start); a day's value that is not a mapping
    changes as a whole, under ``key``."""
    if was == now:
        return []
    if not (_is_map(was) and _is_map(now)):
        return [(day, key, was, now)]
    was, now = was or {}, now or {}
    inner = [*was, *(name for name in now if name not in was)]
    inner.sort(key=lambda name: (_NIGHT_ORDER.get(name, len(_NIGHT_ORDER)), name))
    return [
        (day, name, was.get(name), now.get(name))
        for name in inner
        if was.get(name) != now.get(name)
    ]


def _field_items(key: str, change: dict[str, Any]) -> list[AuditItem]:
    days = _per_day(key, change.get("old"), change.get("new"))
    if days is None:
        return [AuditItem(key, change.get("old"), change.get("new"))]
    return [AuditItem(name, old, new, day=day) for day, name, old, new in days]


def _field_lines(key: str, change: dict[str, Any]) -> list[str]:
    days = _per_day(key, change.get("old"), change.get("new"))
    if days is None:
        return [f"{key}: {_value(change.get('old'))} → {_value(change.get('new'))}"]
    return [f"{key} {day} {name}: {_value(old)} → {_value(new)}" for day, name, old, new in days]


def _local(value: Any, tz: zoneinfo.ZoneInfo) -> str:
    """A stored instant (ISO text) as the user's wall clock; anything else as it is."""
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
        if moment.tzinfo is not None:
            return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    return str(value)


def _said(
    entry: AuditEntry, tz: zoneinfo.ZoneInfo
) -> tuple[tuple[str, ...], tuple[AuditItem, ...]]:
    """An entry's facts twice, side by side for each subject: as English lines
    (``AuditRow.details``) and as items (``AuditRow.items``)."""
    changes = entry.changes or {}
    if entry.subject == AuditEntry.Subject.SCHEDULE:
        fields = changes.get("fields", {})
        return (
            tuple(line for key, change in fields.items() for line in _field_lines(key, change)),
            tuple(item for key, change in fields.items() for item in _field_items(key, change)),
        )
    if entry.subject == AuditEntry.Subject.OVERRIDE:
        shown = [(key, _local(value, tz)) for key, value in changes.items() if value is not None]
        return (
            tuple(f"{key}: {local}" for key, local in shown),
            tuple(AuditItem(key, None, local) for key, local in shown),
        )
    if entry.subject == AuditEntry.Subject.TOKEN:
        kind, name, prefix = changes.get("kind"), changes.get("name"), changes.get("prefix")
        return (
            (f"{kind} token “{name or 'unnamed'}” ({prefix}…)",),
            (AuditItem("token", None, f"{prefix}…", extra=(str(kind or ""), str(name or ""))),),
        )
    if entry.subject in (AuditEntry.Subject.ACCOUNT, AuditEntry.Subject.PRICES):
        # Counts, choices and prices only: neither service stores a secret.
        return (
            tuple(
                f"{key}: {_value(value.get('old')) or '—'} → {_value(value.get('new')) or '—'}"
                if isinstance(value, dict)
                else f"{key}: {_value(value)}"
                for key, value in changes.items()
            ),
            tuple(
                AuditItem(key, value.get("old"), value.get("new"))
                if isinstance(value, dict)
                else AuditItem(key, None, value)
                for key, value in changes.items()
            ),
        )
    if entry.subject == AuditEntry.Subject.TEAM:
        return _team_said(changes, tz)
    return (), ()


def _team_said(
    changes: dict[str, Any], tz: zoneinfo.ZoneInfo
) -> tuple[tuple[str, ...], tuple[AuditItem, ...]]:
    """A team change as lines and as items (for ``web.words.audit_lines``):
    its member, role, invite or key, and a schedule save's fields as a
    person's (never a secret: none is stored)."""
    lines: list[str] = []
    items: list[AuditItem] = []

    def say(line: str, item: AuditItem) -> None:
        lines.append(line)
        items.append(item)

    if "member" in changes:
        say(f"member: {_value(changes['member'])}", AuditItem("member", None, changes["member"]))
    if "old" in changes and "new" in changes and not isinstance(changes["old"], dict):
        say(
            f"role: {_value(changes['old'])} → {_value(changes['new'])}",
            AuditItem("role", changes["old"], changes["new"]),
        )
    elif "role" in changes:
        say(f"role: {_value(changes['role'])}", AuditItem("role", None, changes["role"]))
    if "admin" in changes:
        say(f"admin: {_value(changes['admin'])}", AuditItem("admin", None, changes["admin"]))
    if "invite" in changes:
        invite = f"{changes['invite']}…"
        say(f"invite: {invite}", AuditItem("invite", None, invite))
    if "prefix" in changes:
        name, prefix = changes.get("name"), f"{changes['prefix']}…"
        say(
            f"key “{name or 'unnamed'}” ({prefix})",
            AuditItem("token", None, prefix, extra=("team", str(name or ""))),
        )
    if "overtime_until" in changes:
        until = changes["overtime_until"]
        local = _local(until, tz) if until else None
        say(f"overtime until: {local or '—'}", AuditItem("overtime_until", None, local))
    for key, change in (changes.get("fields") or {}).items():
        lines.extend(_field_lines(key, change))
        items.extend(_field_items(key, change))
    return tuple(lines), tuple(items)


def audit_recent(user: User, limit: int = 10, *, tz: str = "UTC") -> list[AuditRow]:
    """The user's latest changes, newest first, on the user's own clock ``tz``
    (never a secret: none is stored)."""
    zone = zoneinfo.ZoneInfo(tz)
    entries = AuditEntry.objects.filter(user=user).order_by("-created_at", "-id")[:limit]
    return [audit_row(entry, zone) for entry in entries]


def audit_row(entry: AuditEntry, zone: zoneinfo.ZoneInfo) -> AuditRow:
    """One entry as a page shows it, on the clock ``zone`` (a team's audit too)."""
    details, items = _said(entry, zone)
    return AuditRow(
        at=entry.created_at.astimezone(zone),
        subject=entry.subject,
        action=entry.action,
        channel=entry.get_channel_display(),
        actor=entry.actor_name,
        details=details,
        items=items,
    )
