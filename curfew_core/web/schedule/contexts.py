"""Assembling what the Overview and the Schedule section show: the now card,
a page-only look at another moment, the band, and the schedule form's live
preview (a team's schedule page draws the same). Reads only; the views write."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.http import QueryDict
from django.utils import dateformat
from django.utils.translation import gettext as _

from curfew_core.engine import Curve, State, TeamSide
from curfew_core.engine.clock import to_wall
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import override_commands
from curfew_core.schema.query import Problem, QueryReader
from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.bundles import UserBundle, overrides_active
from curfew_core.selectors.heads_up import LEAD_MINUTES, next_payload
from curfew_core.selectors.outlook import curfew_applies, outlook_of
from curfew_core.selectors.verdicts import user_band, verdict_for, verdict_payload
from curfew_core.vocabulary import STATE_NAMES
from curfew_core.web import words
from curfew_core.web.schedule import charts, story
from curfew_core.web.schedule.choices import zone_label
from curfew_core.web.schedule.schedule_form import Candidate, ScheduleForm, candidate

BAND_VIEWS = ("day", "week")


def chart_text() -> charts.ChartText:
    return charts.ChartText(
        budget=_("Answer length"),
        anchor=_("Anchor"),
        now=_("Now"),
        lights_out=str(STATE_NAMES[State.LIGHTS_OUT.value]),
        on_duty=str(STATE_NAMES[State.ON_DUTY.value]),
        tokens=_("tokens"),
        with_team=_("With your team: what gateways get"),
        axis=_("Answer length (tokens)"),
        empty_window=_("No winding: the night goes straight to lights-out."),
        ignored={
            Curve.EASE_IN.value: _("ignored by ease-in (only the first and last count)"),
            Curve.STEP.value: _("ignored by step (lights-out starts here)"),
        },
        drag_help=_(
            "Answer length through the night. Drag an anchor, or use the keys: Left and "
            "Right choose an anchor, Up and Down change its tokens (Shift: more), "
            "Page Up and Page Down (or Alt with Left and Right) move it %(step)s minutes."
        )
        % {"step": charts.TIME_STEP_MINUTES},
        announce=_("Anchor %(n)s: %(time)s, %(tokens)s tokens"),
    )


#: The instants in a verdict's JSON (``VerdictAnswer``).
VERDICT_INSTANTS = ("at", "valid_until", "override_until", "debug_at")


def on_wall_clock(payload: dict[str, Any], tz: dt.tzinfo) -> dict[str, Any]:
    """The verdict JSON with its instants on the user's clock: the same
    instants (ISO 8601 with the offset, as a gateway would parse them), read
    in the zone the whole page is read in, not in the API's UTC."""
    shown = dict(payload)
    for key in VERDICT_INSTANTS:
        value = shown.get(key)
        if isinstance(value, str):
            shown[key] = dt.datetime.fromisoformat(value).astimezone(tz).isoformat()
    return shown


def now_context(user: User, now: dt.datetime, *, at: dt.datetime | None = None) -> dict[str, Any]:
    """The now card: the verdict in force, or as of ``at`` (a page-only
    preview: the schedule read at that moment, nothing stored)."""
    verdict, bundle = verdict_for(user_id=user.pk, now=now, at=at)
    # What comes next, from the moment the card is about (a preview's, the
    # time machine's or now), read off the engine's effective plan.
    outlook = outlook_of(bundle, now=now, at=at if at is not None else verdict.debug_at)
    active = overrides_active(bundle, now)
    debug_local = ""
    if active["debug_at"] is not None:
        debug_local = to_wall(active["debug_at"], bundle.schedule.timezone).strftime(
            "%Y-%m-%dT%H:%M"
        )
    return {
        # The moment the page is about: now, the preview's or the time machine's.
        "as_of": verdict.at,
        "as_of_local": to_wall(verdict.at, bundle.schedule.timezone),
        "now": story.describe(verdict, bundle.schedule, now=now if at is None else at),
        "story": story.tell(verdict, outlook, enabled=curfew_applies(bundle)),
        "details": json.dumps(
            on_wall_clock(
                verdict_payload(
                    verdict, now=now if at is None else at, timezone=bundle.config["timezone"]
                ),
                bundle.schedule.timezone,
            ),
            ensure_ascii=False,
            indent=2,
        ),
        "active": active,
        "debug_local": debug_local,
        "timezone": bundle.config["timezone"],
        # The place, as people name it (the zone id is behind Details).
        "timezone_place": zone_label(bundle.config["timezone"]),
        "enabled": bundle.config["enabled"],
        "schedule": bundle.schedule,
        # The bands are the user's as the state API draws them (a team's side too).
        "bundle": bundle,
        # What changes next, for the heads-up (page.js); not in a preview.
        "heads_up": None
        if at is not None
        else {
            "at": verdict.at.astimezone(dt.UTC).isoformat(),
            "next": next_payload(verdict, outlook, enabled=curfew_applies(bundle)),
        },
        "heads_up_minutes": LEAD_MINUTES,
    }


@dataclass(frozen=True, slots=True)
class Look:
    """The overview's page-only preview: which moment, as typed, and what was wrong."""

    at: dt.datetime | None
    #: For the picker (``YYYY-MM-DDTHH:MM``), empty for now.
    value: str
    #: The scrubber's position on the shown day, minutes since midnight.
    minute: int | None
    error: str


def look_at(params: QueryDict, *, tz_name: str, now: dt.datetime) -> Look:
    """``?at=2026-12-01T23:30`` (the picker) or ``?day=…&minute=…`` (the
    scrubber), in the user's zone; a bad moment says so, naming the
    parameter, and shows now."""
    zone = zoneinfo.ZoneInfo(tz_name)
    query = QueryReader(params)
    text, name = query.raw("at"), "at"
    day_text = query.raw("day")
    if not text and day_text and query.raw("minute"):
        minute = query.whole_or_none(
            "minute",
            low=0,
            high=24 * 60 - 1,
            message=_("The time on the day must be between 00:00 and 23:59."),
        )
        if minute is None:
            return Look(None, "", None, str(query.problems[0]))
        text, name = f"{day_text}T{minute // 60:02d}:{minute % 60:02d}", "day"
    if not text:
        return Look(None, "", None, "")
    try:
        local = dt.datetime.fromisoformat(text)
    except ValueError:
        problem = Problem(name, _("“%(text)s” is not a date and time.") % {"text": text[:40]})
        return Look(None, "", None, str(problem))
    if local.tzinfo is None:
        local = local.replace(tzinfo=zone)
    if not FIRST_BAND_DATE <= local.date() <= LAST_BAND_DATE:
        problem = Problem(name, _("%(text)s is out of range.") % {"text": text[:40]})
        return Look(None, "", None, str(problem))
    wall = to_wall(local, zone)
    return Look(
        local.astimezone(dt.UTC),
        wall.strftime("%Y-%m-%dT%H:%M"),
        wall.hour * 60 + wall.minute,
        "",
    )


def band_for(
    bundle: UserBundle, at: dt.datetime, *, day: dt.date, view: str
) -> list[web_selectors.BandDay]:
    """The user's day (or week) band, with ``at`` marked: for a team member
    the two schedules together, as ``GET /api/v1/state``'s ``day`` and the
    capsule's band draw it (``verdicts.user_band``)."""
    return user_band(bundle, day, now=at, view=view)


#: Dates the band may be drawn for: the days a verdict may be asked about.
#: The engine looks days around a date; near ``date.min``/``date.max`` that
#: overflows (OverflowError), so the ends are refused like a bad date.
FIRST_BAND_DATE = override_commands.EARLIEST_MOMENT.date()
LAST_BAND_DATE = (override_commands.LATEST_MOMENT - dt.timedelta(days=1)).date()


def parse_band(params: QueryDict, default: dt.date) -> tuple[dt.date, str, str]:
    """The band's date and view from the query or form; a bad one says so,
    naming the parameter."""
    query = QueryReader(params)
    view = query.choice(
        "band_view",
        BAND_VIEWS,
        default="day",
        message=_("The band shows a day or a week; showing the day."),
    )
    day = query.date(
        "band_date",
        first=FIRST_BAND_DATE,
        last=LAST_BAND_DATE,
        default=default,
        bad=_("“%(text)s” is not a date; showing %(day)s."),
        out_of_range=_("%(text)s is out of range (%(first)s to %(last)s); showing %(day)s."),
        values={
            "first": FIRST_BAND_DATE.isoformat(),
            "last": LAST_BAND_DATE.isoformat(),
            "day": default.isoformat(),
        },
    )
    return day, view, " ".join(str(problem) for problem in query.problems)


@dataclass(frozen=True, slots=True)
class Preview:
    candidate: Candidate
    figure: dict[str, Any]
    table: list[tuple[str, int | None]]
    night_start: str
    night_end: str
    band: list[web_selectors.BandDay]
    band_date: dt.date
    band_view: str
    band_error: str
    #: Where the drawn curve gets longer toward lights-out: warned, not refused.
    rising: list[tuple[str, str]]
    #: Whether a team's night is drawn too (a member's page): the band is the
    #: two together and the chart has a "with your team" line.
    with_team: bool = False


def preview(
    saved: dict[str, Any],
    form: ScheduleForm,
    *,
    at: dt.datetime,
    params: QueryDict,
    team: TeamSide | None = None,
) -> Preview:
    """The chart and band for what the form says (saved or not). With
    ``team`` (a member's team side) both show what gateways would get with
    the edit: the band is the two schedules together (harsher wins, as
    ``GET /api/v1/state`` draws it) and the chart adds the engine's line
    with the team's night beside the member's own curve."""
    result = candidate(saved, form)
    schedule = schedule_config.build(result.config)
    day, view, band_error = parse_band(params, to_wall(at, schedule.timezone).date())
    # The night being edited (or chosen), not only tonight's (issue 39).
    night = charts.night_of(schedule, charts.evening_to_draw(saved, schedule, day, params))
    figure = charts.curve_figure(schedule, night, now=at, text=chart_text(), team=team)
    theirs = team.schedule if team is not None else None
    if view == "week":
        band = web_selectors.band_week(schedule, day, now=at, team=theirs)
    else:
        band = [web_selectors.band_day(schedule, day, now=at, team=theirs)]
    return Preview(
        candidate=result,
        figure=figure,
        table=charts.budget_table(schedule, night),
        # Localised weekday names (Django's, so Chinese pages say 星期二).
        night_start=dateformat.format(night.start, "D H:i"),
        night_end=dateformat.format(night.lights_out, "D H:i"),
        band=band,
        band_date=day,
        band_view=view,
        band_error=band_error,
        rising=schedule_config.rising_parts(result.config),
        with_team=team is not None,
    )


def preview_context(
    preview: Preview, form: ScheduleForm, keys: Iterable[str], *, team: bool = False
) -> dict[str, Any]:
    """What the schedule form's preview fragment is drawn from (a person's
    form and a team's alike): the preview, the form's problems by field in
    ``keys``, and the states' words (the team's, with ``team``: ``band_words``)."""
    return {
        "preview": preview,
        "form": form,
        "live_errors": preview.candidate.errors,
        "row_problems": preview.candidate.row_problems,
        "field_errors": [(key, preview.candidate.errors.get(key, "")) for key in keys],
        "oob": True,
        **words.band_words(team=team),
        "hours": range(25),
    }
