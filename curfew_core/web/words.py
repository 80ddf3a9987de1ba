"""Words for people that are not a verdict's: state hints, validation and
override errors in the reader's language, the audit trail's entries (a verdict
in words is ``schedule.story``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy

from curfew_core.engine import State
from curfew_core.schedules.messages import Message, message_of
from curfew_core.vocabulary import (
    STATE_HINTS,
    STATE_NAMES,
    STATE_ORDER,
    reason_part,
    reason_words,
)

__all__ = [
    "STATE_HINTS",
    "STATE_NAMES",
    "STATE_ORDER",
    "TEAM_STATE_HINTS",
    "band_words",
    "localized",
    "localized_errors",
    "override_error",
    "reason_part",
    "reason_words",
]


#: The legend's hints on the team's schedule, which sets every member's day
#: (and which no member's own schedule can loosen): a hint that speaks of the
#: reader's own AI says the members' there; the others are the same words.
TEAM_STATE_HINTS: dict[str, Promise] = {
    **STATE_HINTS,
    State.ON_DUTY.value: gettext_lazy("the members' AI answers as usual"),
}


def band_words(*, team: bool = False) -> dict[str, Any]:
    """What the day band (``_band.html``) names its states with: a person's
    words, or with ``team`` the team's schedule's (``TEAM_STATE_HINTS``;
    ``team_schedule`` also picks the team's words in the band's tags)."""
    return {
        "state_order": STATE_ORDER,
        "state_names": STATE_NAMES,
        "state_hints": TEAM_STATE_HINTS if team else STATE_HINTS,
        "team_schedule": team,
    }


def localized(message: str) -> str:
    """A validation message in the active language. The validation layer
    builds its messages as ``Message`` (English text plus template and
    parameters, see ``curfew_core.schedules.messages``) so the API can keep the
    English while the page says them in the reader's language."""
    if not isinstance(message, Message):
        return message
    params = {
        key: localized(value) if isinstance(value, Message) else value
        for key, value in message.params.items()
    }
    template = _(message.template)
    return template % params if params else template


def override_error(exc: BaseException) -> str:
    """An override's error (``OverrideError``) in the active language; the
    API says ``str(exc)``, the English."""
    return localized(message_of(exc))


def localized_errors(errors: Mapping[str, str]) -> dict[str, str]:
    """Each field's message in the active language (see ``localized``)."""
    return {key: localized(message) for key, message in errors.items()}


#: What an audit entry says happened, in the reader's language (the stored
#: codes stay English: the API and the admin read them).
AUDIT_WHAT = {
    ("schedule", "saved"): gettext_lazy("Schedule saved"),
    ("override", "overtime"): gettext_lazy("Overtime started"),
    ("override", "off"): gettext_lazy("Switched off by hand"),
    ("override", "auto"): gettext_lazy("Back to schedule"),
    ("override", "debug"): gettext_lazy("Pretend started"),
    ("override", "debug-clear"): gettext_lazy("Pretend ended"),
    ("token", "created"): gettext_lazy("Key created"),
    ("token", "revoked"): gettext_lazy("Key revoked"),
    ("account", "password changed"): gettext_lazy("Password changed"),
    ("account", "signed out other sessions"): gettext_lazy("Other sessions signed out"),
    ("account", "language saved"): gettext_lazy("Language saved"),
    ("account", "signed up"): gettext_lazy("Signed up"),
    ("prices", "prices saved"): gettext_lazy("Prices saved"),
    # The team layer's changes (services/teams.py), shown on the Team page.
    ("team", "created"): gettext_lazy("Team created"),
    ("team", "member added"): gettext_lazy("Member added"),
    ("team", "role changed"): gettext_lazy("Role changed"),
    ("team", "member removed"): gettext_lazy("Member removed"),
    ("team", "invite created"): gettext_lazy("Invite link made"),
    ("team", "invite revoked"): gettext_lazy("Invite link revoked"),
    ("team", "invite accepted"): gettext_lazy("Joined by invite link"),
    ("team", "schedule saved"): gettext_lazy("Team schedule saved"),
    ("team", "overtime"): gettext_lazy("Release night started"),
    ("team", "overtime ended"): gettext_lazy("Release night ended"),
    ("team", "key created"): gettext_lazy("Team key created"),
    ("team", "key revoked"): gettext_lazy("Team key revoked"),
}
#: The channels by their English names (``AuditEntry.Channel`` labels).
AUDIT_CHANNELS = {
    "settings page": gettext_lazy("settings page"),
    "API": gettext_lazy("API"),
    "command line": gettext_lazy("command line"),
    "admin": gettext_lazy("admin"),
    "system": gettext_lazy("system"),
}


def audit_what(subject: str, action: str) -> str:
    """``Key revoked`` for ``("token", "revoked")``; an unknown pair as stored."""
    words = AUDIT_WHAT.get((subject, action))
    return str(words) if words is not None else f"{subject} {action}"


def audit_channel(channel: str) -> str:
    words = AUDIT_CHANNELS.get(channel)
    return str(words) if words is not None else channel


# -- what an audit entry changed ------------------------------------------------

#: Names for what overrides, accounts and price tables store (a schedule's
#: settings are named by their declared labels).
#: A team's roles by their stored value, as the Team page and the audit say them.
ROLE_NAMES = {
    "admin": pgettext_lazy("team role", "Admin"),
    "member": pgettext_lazy("team role", "Member"),
}
_AUDIT_KEYS = {
    "overtime_until": gettext_lazy("Overtime until"),
    "forced_off_until": gettext_lazy("Off until"),
    "debug_at": gettext_lazy("Pretend it is"),
    "debug_until": gettext_lazy("Pretend ends"),
    "sessions": gettext_lazy("Sessions signed out"),
    "language": gettext_lazy("Language"),
    "username": gettext_lazy("Name"),
    "input_per_million": gettext_lazy("Price per million tokens read"),
    "output_per_million": gettext_lazy("Price per million tokens written"),
    "currency": gettext_lazy("Currency"),
    "discount_rate": gettext_lazy("Off-peak discount"),
    "discount_windows": gettext_lazy("Off-peak hours"),
    **ROLE_NAMES,
    "role": gettext_lazy("Role"),
    "invite": gettext_lazy("Invite"),
}
_TOKEN_KINDS = {
    "api": gettext_lazy("Access key"),
    "embed": gettext_lazy("Capsule key"),
    "team": gettext_lazy("Team key"),
}
#: Long values (a persona, tier texts) are cut; the admin shows them whole.
_AUDIT_CHARS = 60


def _audit_key(subject: str, key: str) -> str:
    # A team's schedule save names its settings as the team's schedule page does.
    if subject in ("schedule", "team"):
        from curfew_core.schedules.declaration import labels_of

        label = labels_of(team=subject == "team").get(key)
        if label is not None:
            return _(label)
    words = _AUDIT_KEYS.get(key)
    return str(words) if words is not None else key


def _day_name(day: str) -> str:
    """``Saturday`` for ``sat`` (Django's own names, in the active language)."""
    from django.utils.dates import WEEKDAYS

    codes = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
    return str(WEEKDAYS[codes.index(day)]) if day in codes else day


def _audit_value(key: str, value: Any) -> str:
    """A stored value as a person reads it: on/off, ``09:00–12:00``, a list
    joined, a language by its name; nothing as a dash."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return _("on") if value else _("off")
    if key == "role" and value in ROLE_NAMES:
        # A team role by its name in the reader's language, as the Team page says it.
        return str(ROLE_NAMES[value])
    if key == "language" and isinstance(value, str):
        from django.conf import settings

        return str(dict(settings.LANGUAGES).get(value, value))
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, list) and len(item) == 2:
                first, second = item
                joiner = "–" if isinstance(second, str) else " "
                parts.append(f"{first}{joiner}{second}")
            else:
                parts.append(str(item))
        text = ", ".join(parts)
    elif isinstance(value, dict):
        text = "; ".join(
            f"{day}: {'/'.join(str(t) for t in times.values())}"
            if isinstance(times, dict)
            else f"{day}: {times}"
            for day, times in value.items()
        )
    else:
        text = str(value)
    return text if len(text) <= _AUDIT_CHARS else text[: _AUDIT_CHARS - 1] + "…"


def audit_lines(row: Any) -> list[str]:
    """What an audit row changed, one line each, in the active language:
    ``Gets sleepy at: 23:00 → 22:30``, ``Pretend it is: 2026-09-29 01:30``."""
    lines = []
    for item in getattr(row, "items", ()):
        if item.key == "token":
            kind, name = item.extra
            label = _TOKEN_KINDS.get(kind)
            lines.append(
                f"{label if label is not None else kind} “{name or _('unnamed')}” ({item.new})"
            )
            continue
        name = _audit_key(row.subject, item.key)
        day = getattr(item, "day", "")
        if day:
            # One line per day a per-day edit changed (``selectors.audit``).
            name = f"{_day_name(day)}: {name}"
        if item.old is None and row.subject != "schedule" and not day:
            lines.append(f"{name}: {_audit_value(item.key, item.new)}")
        else:
            old, new = _audit_value(item.key, item.old), _audit_value(item.key, item.new)
            lines.append(f"{name}: {old} → {new}")
    return lines
