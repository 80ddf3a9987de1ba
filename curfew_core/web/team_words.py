"""The Team page's words: each member's state now and next, the pager, and what
a team policy sets and which of a member's own settings it overrides.

The words describe the settings; the combined verdict itself comes from the
engine (harsher wins), so a test holds the two together: each setting named
here as overridden is one the combined verdict follows the team on.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy

from curfew_core.engine.clock import to_wall
from curfew_core.selectors import web as web_selectors
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web import team_reads
from curfew_core.web.activity import money_text

ROLE_NAMES = {
    "admin": pgettext_lazy("team role", "Admin"),
    "member": pgettext_lazy("team role", "Member"),
}

#: A night's clock, read from noon: the evening's hours come before the morning's,
#: so 22:00 is earlier than 01:00 (the engine's nights belong to their evening).
NOON = 12 * 60


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return (int(hours) * 60 + int(minutes) - NOON) % (24 * 60)


@dataclass(frozen=True, slots=True)
class MemberRow:
    user_id: int
    username: str
    role: str
    role_name: str
    state: str
    state_name: str
    #: "Lights out at 01:00" (or the date when it is not today), or "".
    next_words: str
    you: bool


def _code(state: Any) -> str:
    """A state's code (``winding``), given the engine's ``State`` or its code."""
    return str(getattr(state, "value", state))


def _when(at: dt.datetime, zone: zoneinfo.ZoneInfo, today: dt.date) -> str:
    wall = to_wall(at, zone)
    if wall.date() == today:
        return wall.strftime("%H:%M")
    return wall.strftime("%Y-%m-%d %H:%M")


def member_rows(members: Any, *, tz_name: str, me: int | None = None) -> list[MemberRow]:
    """One row per member on the page, with the state's name and the next
    change in the reader's zone."""
    zone = zoneinfo.ZoneInfo(tz_name)
    today = to_wall(dt.datetime.now(dt.UTC), zone).date()
    rows = []
    for row in members.rows:
        next_words = ""
        if row.next_at is not None and row.next_state:
            when = _when(row.next_at, zone, today)
            if _code(row.next_state) != _code(row.state):
                next_words = _("%(state)s at %(when)s") % {
                    "state": STATE_NAMES.get(_code(row.next_state), row.next_state),
                    "when": when,
                }
            elif _code(row.state) == "winding":
                # The next instant anything changes is the curve's next budget.
                next_words = _("Shorter answers from %(when)s") % {"when": when}
            else:
                next_words = _("No change before %(when)s") % {"when": when}
        rows.append(
            MemberRow(
                user_id=row.user_id,
                username=row.username,
                role=row.role,
                role_name=str(ROLE_NAMES.get(row.role, row.role)),
                state=_code(row.state),
                state_name=str(STATE_NAMES.get(_code(row.state), row.state)),
                next_words=next_words,
                you=row.user_id == me,
            )
        )
    return rows


def next_ms(members: Any) -> int | None:
    """The earliest next change of the members shown, in ms since the epoch
    (the page's script re-reads the card then), or ``None``."""
    upcoming = [row.next_at for row in members.rows if row.next_at is not None]
    return int(min(upcoming).timestamp() * 1000) if upcoming else None


@dataclass(frozen=True, slots=True)
class Pager:
    number: int
    pages: int
    total: int
    first: int
    last: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


def pager(total: int, number: int, per_page: int) -> Pager:
    """Which page of how many, and the members it shows ("51–100 of 5,000");
    a page beyond the last shows the last (the selector reads it so)."""
    pages = max(1, -(-total // per_page))
    number = min(max(1, number), pages)
    first = (number - 1) * per_page + 1 if total else 0
    return Pager(number, pages, total, first, min(total, number * per_page))


def _windows(rows: Iterable[Any]) -> str:
    return ", ".join(f"{start}–{end}" for start, end in rows)


@dataclass(frozen=True, slots=True)
class Policy:
    #: What the team's schedule sets, one sentence each.
    sets: list[str]
    #: Which of the member's own settings it overrides, one sentence each.
    overrides: list[str]


def policy(team: Mapping[str, Any], own: Mapping[str, Any]) -> Policy:
    """The team policy in words: what it sets, and where it is harsher than
    the member's own schedule (the harsher of the two applies: an earlier
    curfew or lights-out, a later wake-up, peak hours the member has off)."""
    sets = []
    if not team.get("enabled", True):
        sets.append(_("The team's schedule is switched off: only your own applies."))
        return Policy(sets, [])
    sets.append(
        _(
            "Replies wind down from %(start)s, lights out at %(out)s, wake-up at %(wake)s "
            "(%(zone)s)."
        )
        % {
            "start": team["curfew_start"],
            "out": team["lights_out"],
            "wake": team["wake_up"],
            "zone": team["timezone"],
        }
    )
    if team.get("peak_shift") and team.get("peak_windows"):
        sets.append(
            _("Peak hours on workdays: %(windows)s; no model call then.")
            % {"windows": _windows(team["peak_windows"])}
        )
    else:
        sets.append(_("No peak hours."))
    if team.get("holiday_calendar"):
        sets.append(
            _("Holidays and make-up workdays of the %(calendar)s calendar.")
            % {"calendar": team["holiday_calendar"]}
        )
    overrides = []
    if own.get("enabled", True):
        if _minutes(team["curfew_start"]) < _minutes(own["curfew_start"]):
            overrides.append(
                _("Your curfew start (%(own)s): the team's %(team)s is earlier, so it applies.")
                % {"own": own["curfew_start"], "team": team["curfew_start"]}
            )
        if _minutes(team["lights_out"]) < _minutes(own["lights_out"]):
            overrides.append(
                _("Your lights-out (%(own)s): the team's %(team)s is earlier, so it applies.")
                % {"own": own["lights_out"], "team": team["lights_out"]}
            )
        if _minutes(team["wake_up"]) > _minutes(own["wake_up"]):
            overrides.append(
                _("Your wake-up (%(own)s): the team's %(team)s is later, so it applies.")
                % {"own": own["wake_up"], "team": team["wake_up"]}
            )
        team_peaks = team.get("peak_shift") and team.get("peak_windows")
        own_peaks = own.get("peak_shift") and own.get("peak_windows")
        if team_peaks and not own_peaks:
            overrides.append(_("Your peak hours are off: the team's peak hours apply to you."))
        elif team_peaks and [list(w) for w in team["peak_windows"]] != [
            list(w) for w in own["peak_windows"]
        ]:
            overrides.append(_("The team's peak hours apply beside your own."))
        if team.get("timezone") != own.get("timezone"):
            overrides.append(
                _("The team's times are read in %(zone)s, not in your zone.")
                % {"zone": team["timezone"]}
            )
    else:
        overrides.append(_("Your own schedule is switched off: the team's applies to you."))
    return Policy(sets, overrides)


def money(savings: Any) -> str:
    amount = getattr(savings, "money", Decimal(0))
    return f"{money_text(amount)} {getattr(savings, 'currency', '')}".strip()


#: The team services' refusals by their stable code, in the reader's language
#: (the services' own messages are the API's English).
TEAM_ERRORS = {
    "already_in_team": gettext_lazy(
        "%(name)s is already in the team %(team)s: a person belongs to one team at most. "
        "They must leave it first."
    ),
    "last_admin": gettext_lazy(
        "%(name)s is the last admin of the team and cannot leave or stop being one: "
        "make another member an admin first."
    ),
    "invalid_invite": gettext_lazy(
        "This invite link is not valid: it was used, revoked or has expired. "
        "Ask an admin of the team for a new one."
    ),
    "not_member": gettext_lazy("%(name)s is not a member of this team."),
    "not_team_admin": gettext_lazy("Only an admin of the team can change it."),
}


def team_error(exc: Any, **params: str) -> str:
    """A refusal of the team services, in the reader's language when its code
    is known (``params`` fill in the names), else as the service said it."""
    words = TEAM_ERRORS.get(getattr(exc, "code", ""))
    if words is None:
        return str(exc)
    try:
        return str(words) % {"name": "", "team": "", **params}
    except (KeyError, ValueError, TypeError):
        return str(exc)


@dataclass(frozen=True, slots=True)
class TeamLine:
    """The Overview's and Schedule's line: a team policy applies, and how much
    of one's own it overrides."""

    team_name: str
    overrides: list[str]


def line(membership: Any, user: Any) -> TeamLine:
    team_config = team_reads.schedule_of(membership.team)[0]
    own = web_selectors.saved_schedule(user).config
    return TeamLine(membership.team.name, policy(team_config, own).overrides)


def overtime_until(team: Any, *, tz_name: str) -> str:
    """When the team's overtime ("release night") ends, on the reader's clock,
    or "" when there is none now."""
    until = getattr(team, "overtime_until", None)
    if until is None or until <= dt.datetime.now(dt.UTC):
        return ""
    return _when(
        until,
        zoneinfo.ZoneInfo(tz_name),
        to_wall(dt.datetime.now(dt.UTC), zoneinfo.ZoneInfo(tz_name)).date(),
    )
