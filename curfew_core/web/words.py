"""The verdict in words, for people (translated; the API keeps its codes)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from curfew_core.engine import State, Verdict, decide
from curfew_core.engine.clock import to_wall
from curfew_core.engine.schedule import Schedule
from curfew_core.schema.messages import Message, message_of
from curfew_core.vocabulary import STATE_NAMES, STATE_ORDER, progress_percent

__all__ = [
    "STATE_HINTS",
    "STATE_NAMES",
    "STATE_ORDER",
    "NowWords",
    "describe",
    "holds_until",
    "local_time",
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
    parameters, see ``curfew_core.schema.messages``) so the API can keep the
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


@dataclass(frozen=True, slots=True)
class NowWords:
    state: str
    state_name: str
    headline: str
    detail: str
    override: str
    schedule_state: str
    schedule_name: str
    overridden: bool
    reason: str
    valid_until: str
    as_of: str
    time_machine: bool


def local_time(instant: dt.datetime, schedule: Schedule, *, today: dt.date | None = None) -> str:
    wall = to_wall(instant, schedule.timezone)
    if today is not None and wall.date() != today:
        return wall.strftime("%Y-%m-%d %H:%M")
    return wall.strftime("%H:%M")


def holds_until(verdict: Verdict, schedule: Schedule) -> dt.datetime:
    """Until when what the card shows holds, for a person to read.

    ``valid_until`` is a cache hint: the first moment *any* field of the
    verdict may change. That is not what a person asks. With an override in
    force, what holds (on duty, or lights out) holds until the override ends,
    whatever the schedule does meanwhile. Under the time machine the engine
    only bounds the hint by the real clock; the card reads every time on the
    time machine's clock, so the schedule is asked again as of that moment.
    """
    if verdict.override_until is not None:
        return verdict.override_until
    if verdict.debug_at is not None:
        return decide(verdict.debug_at, schedule).valid_until
    return verdict.valid_until


def describe(verdict: Verdict, schedule: Schedule, *, now: dt.datetime) -> NowWords:
    """What is happening, what the schedule alone says, and why."""
    today = to_wall(verdict.at, schedule.timezone).date()
    state = verdict.state.value
    if verdict.state is State.WINDING and verdict.budget is not None:
        pct = progress_percent(verdict.progress or 0)
        headline = _("Replies are capped at %(budget)s tokens.") % {"budget": verdict.budget}
        detail = _("%(pct)s%% of the way through the night.") % {"pct": pct}
    elif verdict.state is State.OFF_DUTY:
        headline = _("Gateways answer “%(reply)s” without calling the model.") % {
            "reply": schedule.off_duty_reply
        }
        detail = _("Peak billing hours.")
    elif verdict.state is State.LIGHTS_OUT:
        headline = _("Gateways answer “%(reply)s” without calling the model.") % {
            "reply": schedule.lights_out_reply
        }
        detail = _("Lights out until wake-up.")
    else:
        headline = _("Requests pass untouched.")
        detail = ""
    if verdict.dry_run:
        detail = " ".join(
            part for part in (detail, _("Dry run: decided and reported, never acted on.")) if part
        )
    override = ""
    if verdict.override == "overtime" and verdict.override_until is not None:
        minutes = max(0, round((verdict.override_until - now).total_seconds() / 60))
        override = ngettext(
            "Overtime until %(until)s (%(minutes)s minute left).",
            "Overtime until %(until)s (%(minutes)s minutes left).",
            minutes,
        ) % {"until": local_time(verdict.override_until, schedule, today=today), "minutes": minutes}
    elif verdict.override == "off" and verdict.override_until is not None:
        override = _("Forced off until %(until)s.") % {
            "until": local_time(verdict.override_until, schedule, today=today)
        }
    return NowWords(
        state=state,
        state_name=str(STATE_NAMES[state]),
        headline=headline,
        detail=detail,
        override=override,
        schedule_state=verdict.schedule_state.value,
        schedule_name=str(STATE_NAMES[verdict.schedule_state.value]),
        # An override in force is named even when the schedule happens to
        # agree (overtime while on duty): "no override changes it" would lie.
        overridden=verdict.override is not None or verdict.state is not verdict.schedule_state,
        reason=verdict.reason,
        valid_until=local_time(holds_until(verdict, schedule), schedule, today=today),
        as_of=to_wall(verdict.at, schedule.timezone).strftime("%Y-%m-%d %H:%M"),
        time_machine=verdict.debug_at is not None,
    )


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
