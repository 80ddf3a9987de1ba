"""A team policy as a member reads it: what the team's schedule sets, and
where this week it overrides their own (the Overview's and Schedule's line,
and the Team page's policy card).

The words say what the engine says and re-derive no rule (issue 39): what
the team overrides is the effective plan's share of the week that is the
team's alone (``engine.effective.team_week``).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from curfew_core.engine.clock import to_wall
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors import teams as team_selectors
from curfew_core.selectors import web as web_selectors
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web.schedule.choices import calendar_name, zone_label


def state_code(state: Any) -> str:
    """A state's code (``winding``), given the engine's ``State`` or its code."""
    return str(getattr(state, "value", state))


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
    name = str(STATE_NAMES.get(state_code(state), state_code(state)))
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
                "zone": zone_label(team["timezone"]),
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
                % {"calendar": calendar_name(team["holiday_calendar"])}
            )
    overrides, days = share_words(week or (), zone=zoneinfo.ZoneInfo(tz_name))
    return Policy(sets, overrides, days)


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
    return policy(schedule_of(membership.team)[0], week, tz_name=tz_name)


def schedule_of(team: Any) -> tuple[dict[str, Any], int]:
    """The team's schedule as the Schedule page's form reads a person's:
    the declared settings only (the team's own rules are beside them), and
    the version a save is checked against."""
    read = team_selectors.team_schedule(team)
    config = {key: read[key] for key in schedule_config.FIELDS if key in read}
    return config, int(read["version"])
