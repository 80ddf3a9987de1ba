"""A verdict in words: the one module that turns the engine's answers into
what a person reads (the now card and the overview's story).

The first screen of the settings page: a headline for now, a countdown to
the next change, the steps of the next day (working normally → gets sleepy
→ asleep → working), and tomorrow's peak hours. Everything is read off the
engine: the verdict for now, and for what follows the user's effective plan
(``engine.effective``, read through ``selectors.outlook``: their own
schedule, overrides and, for a team member, the team's side, harsher wins),
with each step's reply and budgets from the verdict at its instants. Nothing
here reads a reply or a budget from the schedule, or walks a schedule, so
the words cannot promise what gateways will not get (issue 39). Budgets are
described as answer length; the tokens are the detail.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.utils import dateformat
from django.utils.translation import get_language, gettext_lazy, ngettext
from django.utils.translation import gettext as _

from curfew_core.engine import State, Verdict
from curfew_core.engine.clock import to_wall
from curfew_core.engine.effective import Side, Stretch
from curfew_core.engine.schedule import Schedule
from curfew_core.selectors.outlook import Outlook
from curfew_core.selectors.verdicts import overtime_held, overtime_held_by
from curfew_core.selectors.web import PlanRow, band_day, holiday_display_name
from curfew_core.vocabulary import STATE_NAMES, STATE_WORDS, progress_percent
from curfew_core.web.words import reason_words

#: How far ahead the steps look: past the coming night and the next day's peaks.
HORIZON = dt.timedelta(hours=30)
#: A step list this long says enough; the band shows the rest.
MAX_STEPS = 6

#: Answer lengths from the largest budget down: (at least this many tokens, words).
#: Each is a length, not a kind of answer: the sentences say "answers are kept
#: to %(length)s" and "shrink from %(first)s to %(last)s" (it said "kept to long
#: answers"). 1500 tokens are about 1100 words: a few pages.
LENGTHS = (
    (1500, gettext_lazy("a few pages")),
    (600, gettext_lazy("a few paragraphs")),
    (200, gettext_lazy("a paragraph")),
    (80, gettext_lazy("a few sentences")),
    (0, gettext_lazy("one sentence")),
)


def answer_length(tokens: int) -> str:
    """A token budget as the length of answer it allows."""
    for least, words in LENGTHS:
        if tokens >= least:
            return str(words)
    return str(LENGTHS[-1][1])  # pragma: no cover - the last bound is 0


def reply_of(verdict: Verdict) -> str:
    """The reply gateways answer with under ``verdict``: its own, or in a dry
    run the one it would have answered (``would``)."""
    would: dict[str, Any] = verdict.would or {}
    return str(verdict.reply if verdict.reply is not None else would.get("reply") or "")


def duration(delta: dt.timedelta) -> str:
    """``2 h 15 min``, ``45 min``, ``less than a minute``."""
    minutes = int(delta.total_seconds() // 60)
    if minutes < 1:
        return _("less than a minute")
    hours, minutes = divmod(minutes, 60)
    if hours >= 48:
        return ngettext("%(n)s day", "%(n)s days", hours // 24) % {"n": hours // 24}
    if not hours:
        return _("%(m)s min") % {"m": minutes}
    if not minutes:
        return _("%(h)s h") % {"h": hours}
    return _("%(h)s h %(m)s min") % {"h": hours, "m": minutes}


@dataclass(frozen=True, slots=True)
class Step:
    """One stretch of the coming hours, as a person would say it."""

    state: str
    state_name: str
    #: ``23:00`` (or ``Tue 09:00`` when not the day of ``at``); empty for "now".
    starts: str
    words: str
    #: The tokens behind the words, for the detail line (winding only).
    tokens: str
    #: Whose rule makes this stretch what it is (``own``, ``team``, ``both``).
    side: Side = "own"
    #: The instant it starts (the moment told about, for the first).
    at: dt.datetime | None = None
    #: Whether the team's rule sets when it starts though the stretch is not
    #: the team's alone (the engine's ``Stretch.held_by``: the stretch before
    #: it was the team's alone, the team's wake-up after the member's own).
    held: bool = False


@dataclass(frozen=True, slots=True)
class Story:
    state: str
    state_name: str
    headline: str
    #: ``Gets sleepy in 2 h 15 min (23:00).``; empty when nothing changes soon.
    countdown: str
    #: The moment of the next change (for the page's ticking countdown), or None.
    next_change: dt.datetime | None
    steps: tuple[Step, ...]
    tomorrow: str
    notes: tuple[str, ...]
    #: ``12% of the way through the night.`` while winding (the capsule's rounding).
    progress: str = ""
    #: Whose rule makes the next change come when it does (``own``, ``team``,
    #: ``both``: the engine's ``Change.held_by``), or "".
    next_side: str = ""


def _clock(instant: dt.datetime, schedule: Schedule, today: dt.date) -> str:
    wall = to_wall(instant, schedule.timezone)
    if wall.date() == today:
        return wall.strftime("%H:%M")
    # Localised weekday (星期二 on the Chinese page).
    return f"{dateformat.format(wall, 'D')} {wall.strftime('%H:%M')}"


#: The verdict of a plain call at an instant (``Outlook.verdict``).
Verdicts = Callable[[dt.datetime], Verdict]


def _budgets(start: dt.datetime, end: dt.datetime, verdict_at: Verdicts) -> tuple[int, int] | None:
    """A winding stretch's first and last budget (read once, for the words
    and for the token detail); None for a stretch that has no budget.

    Both are the engine's verdicts at the stretch's edges: the last is read
    at its last instant (the engine counts in microseconds), where the curve
    has reached the anchor at lights-out. Read a minute early it would say
    70 where the Schedule table's last anchor says 64.
    """
    first = verdict_at(start).budget
    last = verdict_at(max(start, end - dt.timedelta(microseconds=1))).budget
    return None if first is None or last is None else (first, last)


def _step(
    segment_state: State, budgets: tuple[int, int] | None, start: dt.datetime, verdict_at: Verdicts
) -> str:
    """What one stretch means (``budgets``: a winding stretch's first and
    last); its reply is the one the verdict at its start answers with."""
    if segment_state is State.WINDING:
        if budgets is None:  # pragma: no cover - winding has a budget
            return _("gets sleepy")
        first, last = budgets
        if answer_length(first) == answer_length(last):
            return _("gets sleepy: answers kept to %(length)s") % {"length": answer_length(last)}
        return _("gets sleepy: answers shrink from %(first)s to %(last)s") % {
            "first": answer_length(first),
            "last": answer_length(last),
        }
    if segment_state is State.OFF_DUTY:
        return _("off for peak hours, replies “%(reply)s”") % {"reply": reply_of(verdict_at(start))}
    if segment_state is State.LIGHTS_OUT:
        return _("asleep, replies “%(reply)s”") % {"reply": reply_of(verdict_at(start))}
    return _("working normally")


def _tokens(budgets: tuple[int, int] | None) -> str:
    if budgets is None:
        return ""
    return _("%(first)s → %(last)s tokens") % {"first": budgets[0], "last": budgets[1]}


def joined(plan: Iterable[PlanRow]) -> list[PlanRow]:
    """A day's plan as a person reads it: neighbouring rows in one state are
    one row. The engine's plan also cuts where only the peak flag changes (a
    member asleep by the team's night from 01:00 to 09:30, whose own peak
    hours start at 09:00, was "01:00–09:00 Asleep, 09:00–09:30 Asleep");
    the words show no peak flag, so the cut said nothing but a split."""
    rows: list[PlanRow] = []
    for row in plan:
        if rows and rows[-1].state == row.state and rows[-1].end == row.start:
            rows[-1] = replace(rows[-1], end=row.end, peak=rows[-1].peak or row.peak)
        else:
            rows.append(row)
    return rows


def _tomorrow(at: dt.datetime, schedule: Schedule, team: Schedule | None) -> str:
    day = to_wall(at, schedule.timezone).date() + dt.timedelta(days=1)
    band = band_day(schedule, day, team=team)
    name = dateformat.format(day, "l")
    peaks = [row for row in joined(band.plan) if row.state == State.OFF_DUTY.value]
    if peaks:
        spans = [f"{row.start}–{row.end}" for row in peaks]
        said = _(" and ").join([", ".join(spans[:-1]), spans[-1]] if len(spans) > 1 else spans)
        return _("Tomorrow (%(day)s): off %(spans)s for peak hours.") % {
            "day": name,
            "spans": said,
        }
    if band.valley:
        return _("Tomorrow (%(day)s) has no peak hours: your AI works all day.") % {"day": name}
    return _("Tomorrow (%(day)s): no peak hours.") % {"day": name}


#: Said after the state's headline when an overtime is in force and does not
#: hold (``selectors.verdicts.overtime_held``), by what holds it
#: (``overtime_held_by``): the team's peak hours, else its night.
OVERTIME_HELD = gettext_lazy("Your overtime does not lift your team's night.")
OVERTIME_HELD_PEAK = gettext_lazy("Your overtime does not lift your team's peak hours.")


def _headline(verdict: Verdict) -> str:
    if overtime_held(verdict):
        # The engine's state is what holds (the team's night): told as such.
        return _("%(headline)s %(held)s") % {
            "headline": _state_headline(verdict),
            "held": OVERTIME_HELD_PEAK if overtime_held_by(verdict) == "peak" else OVERTIME_HELD,
        }
    if verdict.override == "overtime":
        return _("Overtime: your AI works normally, whatever the schedule says.")
    if verdict.override == "off":
        return _("Switched off by hand: gateways answer “%(reply)s” without calling the model.") % {
            "reply": reply_of(verdict)
        }
    return _state_headline(verdict)


def _state_headline(verdict: Verdict) -> str:
    state = verdict.state
    if state is State.WINDING and verdict.budget is not None:
        # The tokens are the detail (behind Details on the card).
        return _("Your AI is getting sleepy: answers are kept to %(length)s.") % {
            "length": answer_length(verdict.budget)
        }
    if state is State.OFF_DUTY:
        return _(
            "Your AI is off for peak hours: it replies “%(reply)s” without calling the model."
        ) % {"reply": reply_of(verdict)}
    if state is State.LIGHTS_OUT:
        return _("Your AI is asleep: it replies “%(reply)s” without calling the model.") % {
            "reply": reply_of(verdict)
        }
    return _("Your AI is working normally.")


#: The countdown when the next change is an override's end.
_BACK = gettext_lazy("Back to the schedule in %(left)s (%(at)s).")


@dataclass(frozen=True, slots=True)
class _Run:
    """Neighbouring stretches of the plan in one state (and override), as one step."""

    start: dt.datetime
    end: dt.datetime
    state: State
    side: Side
    override: str | None
    #: Whose rule makes it start when it does: its first stretch's
    #: (``Stretch.held_by``, the engine's).
    held_by: Side


def _runs(plan: tuple[Stretch, ...]) -> list[_Run]:
    runs: list[_Run] = []
    for stretch in plan:
        if runs and runs[-1].state is stretch.state and runs[-1].override == stretch.override:
            last = runs[-1]
            runs[-1] = replace(last, end=stretch.end)
        else:
            runs.append(
                _Run(
                    stretch.start,
                    stretch.end,
                    stretch.state,
                    stretch.side,
                    stretch.override,
                    stretch.held_by,
                )
            )
    return runs


def tell(verdict: Verdict, outlook: Outlook, *, enabled: bool = True) -> Story:
    """The story of ``verdict.at`` (now, the moment the page previews, or the
    pretended one), told from ``outlook`` (``selectors.outlook.outlook_of``,
    from that same moment): the engine's effective plan, a team's side
    included."""
    at = verdict.at
    schedule = outlook.schedule
    today = to_wall(at, schedule.timezone).date()
    state = verdict.state
    notes: list[str] = []
    if not enabled:
        return Story(
            state=state.value,
            state_name=str(STATE_NAMES[state.value]),
            headline=_("The curfew is switched off: every request passes."),
            countdown="",
            next_change=None,
            steps=(),
            tomorrow="",
            notes=(),
        )
    if verdict.dry_run:
        notes.append(_("Only watching: Curfew reports what it would do and holds nothing back."))
    # A day past the look-ahead: a night cut by it is still described whole,
    # down to its last budget.
    plan = outlook.plan(at + HORIZON + dt.timedelta(days=1))
    runs = _runs(plan)
    steps: list[Step] = []
    for run in runs:
        if run.start >= at + HORIZON or len(steps) >= MAX_STEPS:
            break
        starts = "" if run.start <= at else _clock(run.start, schedule, today)
        budgets = None
        # An overtime the team's night holds back says the team's state, as
        # the swatch and the engine do (the headline says it is held).
        if run.override == "overtime" and run.state is State.ON_DUTY:
            words = _("working normally (overtime)")
        elif run.override == "off":
            words = _("switched off by hand")
        else:
            if run.state is State.WINDING:
                budgets = _budgets(run.start, run.end, outlook.verdict)
            words = _step(run.state, budgets, run.start, outlook.verdict)
        steps.append(
            Step(
                state=run.state.value,
                state_name=str(STATE_NAMES[run.state.value]),
                starts=starts,
                words=words,
                tokens=_tokens(budgets),
                side=run.side,
                at=run.start,
                held=run.start > at and run.held_by != run.side,
            )
        )
    countdown, next_change, next_side = "", None, ""
    change = outlook.next_change()
    if change is not None:
        next_change = change.at
        next_side = change.held_by
        # What the countdown says the next state does (its words, ``vocabulary``).
        template = STATE_WORDS[change.state].countdown
        if verdict.override is not None and verdict.override_until == change.at:
            # The change is the override's end: the schedule takes over.
            template = _BACK
        countdown = str(template) % {
            "left": duration(change.at - at),
            "at": _clock(change.at, schedule, today),
        }
    return Story(
        state=state.value,
        state_name=str(STATE_NAMES[state.value]),
        headline=_headline(verdict),
        countdown=countdown,
        next_change=next_change,
        steps=tuple(steps),
        tomorrow=_tomorrow(at, schedule, outlook.team_schedule),
        notes=tuple(notes),
        progress=_progress(verdict),
        next_side=next_side if outlook.team is not None else "",
    )


def _progress(verdict: Verdict) -> str:
    if verdict.state is not State.WINDING or verdict.progress is None:
        return ""
    return _through_the_night(verdict.progress)


def _through_the_night(progress: float) -> str:
    """``12% of the way through the night.``: the story's and the now card's words."""
    return _("%(pct)s%% of the way through the night.") % {"pct": progress_percent(progress)}


# -- the now card ---------------------------------------------------------------


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
    #: Why what holds ends then: "when pretending ends" while pretending.
    holds_why: str = ""
    #: The budget now while getting sleepy (for Details), else None.
    budget: int | None = None


def local_time(instant: dt.datetime, schedule: Schedule, *, today: dt.date | None = None) -> str:
    wall = to_wall(instant, schedule.timezone)
    if today is not None and wall.date() != today:
        return wall.strftime("%Y-%m-%d %H:%M")
    return wall.strftime("%H:%M")


def holds_until(verdict: Verdict, schedule: Schedule) -> dt.datetime | None:
    """Until when what the card shows holds, for a person to read (``None``:
    until someone stops pretending).

    ``valid_until`` is a cache hint: the first moment *any* field of the
    verdict may change. That is not what a person asks. With an override in
    force, what holds (on duty, or lights out) holds until the override ends,
    whatever the schedule does meanwhile. Under the time machine the schedule
    is read at one fixed moment, so gateways get the same answer until the
    pretend ends on the real clock, which is what the banner says too: the
    schedule's next edge as of the pretended moment would contradict it.
    """
    if verdict.override_until is not None:
        return verdict.override_until
    if verdict.debug_at is not None:
        return verdict.debug_until
    return verdict.valid_until


def describe(verdict: Verdict, schedule: Schedule, *, now: dt.datetime) -> NowWords:
    """What is happening, what the schedule alone says, and why."""
    today = to_wall(verdict.at, schedule.timezone).date()
    state = verdict.state.value
    if verdict.state is State.WINDING and verdict.budget is not None:
        headline = _("Replies are capped at %(budget)s tokens.") % {"budget": verdict.budget}
        detail = _through_the_night(verdict.progress or 0)
    elif verdict.state is State.OFF_DUTY:
        headline = _("Gateways answer “%(reply)s” without calling the model.") % {
            "reply": reply_of(verdict)
        }
        detail = _("Peak billing hours.")
    elif verdict.state is State.LIGHTS_OUT:
        headline = _("Gateways answer “%(reply)s” without calling the model.") % {
            "reply": reply_of(verdict)
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
    held = holds_until(verdict, schedule)
    holds_why = ""
    if held is None:
        holds = _("until you stop pretending")
    else:
        # Overrides and the pretend end on the real clock: named against the
        # real today, not the pretended one.
        real_today = to_wall(now, schedule.timezone).date() if verdict.debug_at else today
        holds = local_time(held, schedule, today=real_today)
        if verdict.debug_at is not None and verdict.override_until is None:
            # The card tells the pretended moment; this one time is real.
            holds_why = _("on the real clock, when pretending ends")
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
        # The engine's English line stays in the API (and the JSON below the
        # card); the card says it in the page's language, the holiday named
        # as the reader names it.
        reason=reason_words(
            verdict.reason,
            holiday=holiday_display_name(
                schedule, to_wall(verdict.at, schedule.timezone).date(), get_language()
            ),
        ),
        valid_until=holds,
        as_of=to_wall(verdict.at, schedule.timezone).strftime("%Y-%m-%d %H:%M"),
        time_machine=verdict.debug_at is not None,
        holds_why=holds_why,
        budget=verdict.budget if verdict.state is State.WINDING else None,
    )
