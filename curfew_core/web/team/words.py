"""The Team page's words: each member's state now and next, the pager, the
savings in money, a refused change's reason, the team's overtime. What a team
policy sets and overrides of a member's own schedule is ``schedule.team_line``
(the Overview and Schedule say it too).

The words say what the engine says and re-derive no rule (issue 39): a
member's next change is the engine's ``next_change``; tests hold it to
``decide_member``.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curfew_core.engine.clock import to_wall
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web.activity.totals import money_words
from curfew_core.web.schedule.team_line import state_code
from curfew_core.web.words import ROLE_NAMES


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
    #: The member is pretending it is another moment: the state is that
    #: moment's (marked on the page, as the member's own pages mark it).
    pretending: bool = False


def _when(at: dt.datetime, zone: zoneinfo.ZoneInfo, today: dt.date) -> str:
    wall = to_wall(at, zone)
    if wall.date() == today:
        return wall.strftime("%H:%M")
    return wall.strftime("%Y-%m-%d %H:%M")


def member_rows(
    members: Any,
    changes: Mapping[int, Any],
    *,
    tz_name: str,
    me: int | None = None,
) -> list[MemberRow]:
    """One row per member on the page, with the state's name and the next
    change of state in the reader's zone: the engine's (``changes``: each
    row's ``MemberRow.next``, ``Change`` or ``None``, by user id)."""
    zone = zoneinfo.ZoneInfo(tz_name)
    today = to_wall(dt.datetime.now(dt.UTC), zone).date()
    rows = []
    for row in members.rows:
        change = changes.get(row.user_id)
        next_words = ""
        if change is not None:
            next_words = _("%(state)s at %(when)s") % {
                "state": STATE_NAMES.get(state_code(change.state), state_code(change.state)),
                "when": _when(change.at, zone, today),
            }
        rows.append(
            MemberRow(
                user_id=row.user_id,
                username=row.username,
                role=row.role,
                role_name=str(ROLE_NAMES.get(row.role, row.role)),
                state=state_code(row.state),
                state_name=str(STATE_NAMES.get(state_code(row.state), row.state)),
                next_words=next_words,
                you=row.user_id == me,
                pretending=getattr(row, "pretending", None) is not None,
            )
        )
    return rows


def next_ms(changes: Mapping[int, Any]) -> int | None:
    """The earliest next change of the members shown, in ms since the epoch
    (the page's script re-reads the card then), or ``None``."""
    upcoming = [change.at for change in changes.values() if change is not None]
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


def money(savings: Any) -> str:
    """The team's money saved, by the Activity page's rule (``money_words``):
    "not known" where turns were answered with nothing to price them by."""
    return money_words(savings)


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
