"""The Team page's words: each member's state now and next, the pager, and what
a team policy sets and what it overrides of a member's own schedule.

The words say what the engine says and re-derive no rule (issue 39): a
member's next change is the engine's ``next_change``, and what the team
overrides is the effective plan's share of the week that is the team's alone
(``engine.effective.team_week``); tests hold both to ``decide_member``.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext, pgettext_lazy

from curfew_core.engine.clock import to_wall
from curfew_core.selectors import teams as team_selectors
from curfew_core.selectors import web as web_selectors
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web.activity.totals import money_text
from curfew_core.web.team import reads as team_reads

ROLE_NAMES = {
    "admin": pgettext_lazy("team role", "Admin"),
    "member": pgettext_lazy("team role", "Member"),
}


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
                "state": STATE_NAMES.get(_code(change.state), _code(change.state)),
                "when": _when(change.at, zone, today),
            }
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


def _windows(rows: Iterable[Any]) -> str:
    return ", ".join(f"{start}–{end}" for start, end in rows)


@dataclass(frozen=True, slots=True)
class Policy:
    #: What the team's schedule sets, one sentence each.
    sets: list[str]
    #: What it overrides of the member's own schedule: per group of days alike
    #: ("Mon–Fri", "08:00–09:00 asleep instead of working"), from the engine's
    #: plan (``selectors.teams.team_share``); ``str()`` of one is its line.
    overrides: list[OverrideDays]
    #: The days those lines name, together ("Every day", "Mon–Fri, Sun").
    days: str = ""


def _state_word(state: Any) -> str:
    """A state's name inside a sentence ("asleep"; Chinese has no case)."""
    name = str(STATE_NAMES.get(_code(state), _code(state)))
    return name[:1].lower() + name[1:]


def _span(share: Any, zone: zoneinfo.ZoneInfo) -> str:
    start, end = to_wall(share.start, zone), to_wall(share.end, zone)
    end_text = end.strftime("%H:%M")
    if end - start >= dt.timedelta(days=1):
        end_text = _("%(day)s %(time)s") % {"day": WEEKDAYS_ABBR[end.weekday()], "time": end_text}
    return _("%(start)s–%(end)s %(state)s instead of %(own)s") % {
        "start": start.strftime("%H:%M"),
        "end": end_text,
        "state": _state_word(share.state),
        "own": _(", then ").join(_state_word(state) for state in share.own),
    }


def day_names(days: list[dt.date]) -> str:
    """Days of one week in words: "Every day", "Mon–Fri", "Mon, Wed" (runs
    of three days or more as a range)."""
    if len(days) == 7:
        return _("Every day")
    runs: list[list[dt.date]] = []
    for day in sorted(days):
        if runs and (day - runs[-1][-1]).days == 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    parts: list[str] = []
    for run in runs:
        if len(run) >= 3:
            parts.append(
                _("%(first)s–%(last)s")
                % {
                    "first": WEEKDAYS_ABBR[run[0].weekday()],
                    "last": WEEKDAYS_ABBR[run[-1].weekday()],
                }
            )
        else:
            parts.extend(str(WEEKDAYS_ABBR[day.weekday()]) for day in run)
    return pgettext("between days", ", ").join(parts)


@dataclass(frozen=True, slots=True)
class OverrideDays:
    """Days of the week alike ("Mon–Fri") and the team's spans on each of them."""

    days: str
    spans: tuple[str, ...]

    def __str__(self) -> str:
        return _("%(days)s: %(spans)s") % {
            "days": self.days,
            "spans": pgettext("between spans", "; ").join(self.spans),
        }


def share_words(week: Iterable[Any], *, zone: zoneinfo.ZoneInfo) -> tuple[list[OverrideDays], str]:
    """The team's share of a member's week (``engine.effective.team_week``)
    in words: one group per set of days whose spans read alike, in the order
    of their first day, and the days named, together. Empty when the team is
    harsher nowhere."""
    groups: dict[tuple[str, ...], list[dt.date]] = {}
    for found in week:
        if found.shares:
            spans = tuple(_span(share, zone) for share in found.shares)
            groups.setdefault(spans, []).append(found.day)
    every = [day for days in groups.values() for day in days]
    return (
        [OverrideDays(day_names(days), spans) for spans, days in groups.items()],
        day_names(every) if every else "",
    )


def policy(
    team: Mapping[str, Any], week: Iterable[Any] | None = None, *, tz_name: str = "UTC"
) -> Policy:
    """The team policy in words: what it sets, and what it overrides of the
    member's own schedule: where, this week on the member's clock, the
    engine's plan follows the team's rule because it is harsher than theirs
    (``week``: ``selectors.teams.team_share``; the words re-derive no rule)."""
    sets = []
    if not team.get("enabled", True):
        sets.append(_("The team's schedule is switched off: only your own applies."))
    else:
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
    overrides, days = share_words(week or (), zone=zoneinfo.ZoneInfo(tz_name))
    return Policy(sets, overrides, days)


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
    """The Overview's and Schedule's line: a team policy applies, and on which
    days of this week it overrides one's own schedule."""

    team_name: str
    overrides: list[OverrideDays]
    #: The days it overrides one's own on ("Every day"), or "".
    days: str = ""


def line(membership: Any, user: Any) -> TeamLine:
    found = policy_of(membership, user)
    return TeamLine(membership.team.name, found.overrides, found.days)


def policy_of(membership: Any, user: Any) -> Policy:
    """``policy`` of ``user``'s team now, on their own clock."""
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    week = team_selectors.team_share(user_id=user.pk, now=dt.datetime.now(dt.UTC))
    return policy(team_reads.schedule_of(membership.team)[0], week, tz_name=tz_name)


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
