"""The heads-up before the AI gets sleepy: what changes next, and when.

Read off the engine's own walk (``engine.decide.segments``, the very edges
the verdicts make), from the end of an override if one holds (an overtime
ending at 01:00 is when the AI goes to sleep). The capsule's payload carries
it (``next``) and the overview's Now card too, so the page, the capsule and a
browser notification say the same thing at the same moment.

The lead time is one number, here: ``LEAD_MINUTES``. It is not a schedule
setting (a setting is a rule of the verdict, ``schedules/declaration.py``; this
changes no verdict) and not per user: whether to be warned is asked per
browser, where the notification permission is, and turned off there.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy, override

from curfew_core.engine import Segment, State, Verdict
from curfew_core.engine.clock import to_wall
from curfew_core.engine.decide import segments
from curfew_core.engine.schedule import Schedule

#: How long before a change the heads-up comes.
LEAD_MINUTES = 10
LEAD = dt.timedelta(minutes=LEAD_MINUTES)
#: How far ahead the next change is looked for (past a whole day's edges).
HORIZON = dt.timedelta(hours=30)

#: The heads-up for each state worth one (harsher than working normally);
#: ``{minutes}`` and ``{at}`` are filled in where it is shown, as it counts down.
WORDS: dict[str, Promise] = {
    State.WINDING.value: gettext_lazy("Your AI gets sleepy in {minutes} min ({at})."),
    State.OFF_DUTY.value: gettext_lazy("Your AI goes off for peak hours in {minutes} min ({at})."),
    State.LIGHTS_OUT.value: gettext_lazy("Your AI falls asleep in {minutes} min ({at})."),
}
#: The same, short enough for the capsule's pill (its full sentence is the title).
SHORT: dict[str, Promise] = {
    State.WINDING.value: gettext_lazy("sleepy in {minutes} min"),
    State.OFF_DUTY.value: gettext_lazy("peak hours in {minutes} min"),
    State.LIGHTS_OUT.value: gettext_lazy("asleep in {minutes} min"),
}


#: Each schedule's walk over a local day and the ``HORIZON`` after it, per
#: (schedule, local date): every push of every capsule of a user asks the
#: same, and a walk of 30 hours costs a few hundred µs where a scan costs a few.
_walks: dict[tuple[int, dt.date], tuple[Schedule, list[Segment]]] = {}
_WALKS_SIZE = 512


def _walk(day: dt.date, schedule: Schedule) -> list[Segment]:
    key = (id(schedule), day)
    hit = _walks.get(key)
    if hit is not None and hit[0] is schedule:
        return hit[1]
    midnight = dt.datetime.combine(day, dt.time(0), tzinfo=schedule.timezone)
    found = segments(midnight, midnight + dt.timedelta(days=1) + HORIZON, schedule)
    if len(_walks) >= _WALKS_SIZE:
        _walks.clear()
    _walks[key] = (schedule, found)
    return found


def next_change(verdict: Verdict, schedule: Schedule) -> tuple[State, dt.datetime] | None:
    """The next state the AI will be in that differs from now, and when, by
    the schedule after any override; ``None`` when nothing changes within
    ``HORIZON``. Under pretend it is the pretended night's next change."""
    at = verdict.at
    resume = verdict.override_until if verdict.override is not None else None
    start = resume if resume is not None and resume > at else at
    day = to_wall(start, schedule.timezone).date()
    for segment in _walk(day, schedule):
        if segment.end <= start:
            continue
        begins = max(segment.start, start)
        if begins >= at + HORIZON:
            return None
        if begins > at and segment.state is not verdict.state:
            return segment.state, begins
    return None


def _harsher(coming: State, now: State) -> bool:
    """A heads-up warns of less to come: asleep to peak hours at wake-up is
    no warning, working to sleepy is."""
    order = list(State)
    return coming.value in WORDS and order.index(coming) > order.index(now)


@functools.cache
def _words(state: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """``WORDS`` and ``SHORT`` of ``state`` in each language of the site, by
    primary subtag, translated once per process (the catalogues do not change
    while it runs)."""
    long: dict[str, str] = {}
    short: dict[str, str] = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            long[code.split("-")[0]] = str(WORDS[state])
            short[code.split("-")[0]] = str(SHORT[state])
    return tuple(long.items()), tuple(short.items())


def next_payload(
    verdict: Verdict, schedule: Schedule, *, enabled: bool = True
) -> dict[str, Any] | None:
    """The capsule's ``next``: ``{"state", "at", "local", "heads_up_at",
    "lead_minutes", "words", "short"}``, where ``words`` is the heads-up in
    every language of the site and ``short`` the pill's few words (both
    ``None`` for a change that needs none: back to work). ``None`` when the
    curfew is off or in a dry run (nothing will be held back) or nothing
    changes soon."""
    if not enabled or verdict.dry_run:
        return None
    found = next_change(verdict, schedule)
    if found is None:
        return None
    state, at = found
    warn = _harsher(state, verdict.state)
    long, short = _words(state.value) if warn else (None, None)
    return {
        "state": state.value,
        "at": at.astimezone(dt.UTC).isoformat(),
        "local": to_wall(at, schedule.timezone).strftime("%H:%M"),
        "heads_up_at": (at - LEAD).astimezone(dt.UTC).isoformat(),
        "lead_minutes": LEAD_MINUTES,
        # Each payload its own dicts: a payload may be changed before it is sent.
        "words": dict(long) if long is not None else None,
        "short": dict(short) if short is not None else None,
    }
