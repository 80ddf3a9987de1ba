"""Words for people that are not a verdict's: state hints, validation and
override errors in the reader's language, the audit trail's entries (a verdict
in words is ``story``)."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curfew_core.engine import State
from curfew_core.schedules.messages import Message, message_of
from curfew_core.vocabulary import STATE_NAMES, STATE_ORDER

__all__ = [
    "STATE_HINTS",
    "STATE_NAMES",
    "STATE_ORDER",
    "localized",
    "localized_errors",
    "override_error",
]

STATE_HINTS = {
    State.ON_DUTY.value: gettext_lazy("requests pass untouched"),
    State.WINDING.value: gettext_lazy("replies get a shrinking token budget"),
    State.OFF_DUTY.value: gettext_lazy("peak hours: a canned reply, no model call"),
    State.LIGHTS_OUT.value: gettext_lazy("no model call until wake-up"),
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
    ("override", "debug"): gettext_lazy("Pretend mode started"),
    ("override", "debug-clear"): gettext_lazy("Pretend mode stopped"),
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
