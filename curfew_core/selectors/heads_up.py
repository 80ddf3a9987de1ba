"""The heads-up before the AI gets sleepy: what changes next, and when.

Read off the engine's effective plan (``engine.effective.next_change``, over
``decide_member`` itself) with the user's full verdict inputs
(``selectors.outlook``): their own schedule, overrides, and for a team
member the team's side, so a member is warned before the team's boundaries
as before their own (issue 39). The capsule's payload carries it (``next``)
and the overview's Now card too, so the page, the capsule and a browser
notification say the same thing at the same moment.

The lead time is one number, here: ``LEAD_MINUTES``. It is not a schedule
setting (a setting is a rule of the verdict, ``schedules/declaration.py``; this
changes no verdict) and not per user: whether to be warned is asked per
browser, where the notification permission is, and turned off there.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import threading
from typing import Any

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import override

from curfew_core.engine import State, Verdict
from curfew_core.engine.clock import to_wall
from curfew_core.engine.effective import Change
from curfew_core.selectors.outlook import Outlook
from curfew_core.store.memos import LRU
from curfew_core.vocabulary import STATE_WORDS

#: How long before a change the heads-up comes.
LEAD_MINUTES = 10
LEAD = dt.timedelta(minutes=LEAD_MINUTES)
#: The heads-up's snooze: this much overtime, taken when it is shown
#: (``templates/curfew/base.html``'s form says the same duration).
SNOOZE = dt.timedelta(minutes=30)
#: The heads-up for each state worth one (harsher than working normally);
#: ``{minutes}`` and ``{at}`` are filled in where it is shown, as it counts down.
#: Read off the states' words (``vocabulary.STATE_WORDS``).
WORDS: dict[str, Promise] = {
    state.value: words.heads_up
    for state, words in STATE_WORDS.items()
    if words.heads_up is not None
}
#: The same, short enough for the capsule's pill (its full sentence is the title).
SHORT: dict[str, Promise] = {
    state.value: words.heads_up_short
    for state, words in STATE_WORDS.items()
    if words.heads_up_short is not None
}


#: The last next change per user's inputs: every push of every capsule of a
#: user asks the same, and the answer found at ``since`` holds for every
#: instant from ``since`` until the change itself (the state is the same all
#: the way there, so the first instant it differs is the same too). Keyed by
#: the identities of the built inputs (a cached bundle keeps them); each
#: entry holds them, so an ``id`` is never reused under it. Bounded, least
#: recently used (one entry goes when full, not all), read from the page's and
#: the capsule's threads, hence the lock.
_CHANGES_SIZE = 4096
_changes: LRU[tuple[int, int, int, dt.datetime | None], tuple[Outlook, Change]] = LRU(
    maxsize=_CHANGES_SIZE
)
_changes_lock = threading.Lock()


def next_change(outlook: Outlook) -> Change | None:
    """The engine's next change of the user's effective state after
    ``outlook.now``: the state, the instant, whose rule (own, team, both) and
    the override then in force; ``None`` when nothing changes within the
    engine's horizon."""
    key = (id(outlook.schedule), id(outlook.overrides), id(outlook.team), outlook.overtime_from)
    with _changes_lock:
        hit = _changes.get(key)
    if hit is not None:
        seen, change = hit
        if (
            seen.schedule is outlook.schedule
            and seen.overrides is outlook.overrides
            and seen.team is outlook.team
            and seen.now <= outlook.now < change.at
        ):
            return change
    found = outlook.next_change()
    if found is not None:
        with _changes_lock:
            _changes[key] = (outlook, found)
    return found


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


def snooze_lifts(outlook: Outlook, change: Change) -> bool:
    """Whether the heads-up's snooze would put ``change`` off: the engine's
    verdict at the change, with an overtime taken at ``outlook.now`` that
    runs past it, is working normally. For a team member the team's policy
    decides (``engine.team.team_overrides``): a team that lets no member's
    overtime lift its night keeps its boundary, so the snooze is not offered
    for it (it would record an overtime and change nothing gateways get)."""
    snoozed = dataclasses.replace(
        outlook,
        overrides=dataclasses.replace(
            outlook.overrides, overtime_until=change.at + SNOOZE, forced_off_until=None
        ),
        overtime_from=outlook.now,
    )
    return snoozed.verdict(change.at).state is State.ON_DUTY


def next_payload(
    verdict: Verdict, outlook: Outlook, *, enabled: bool = True
) -> dict[str, Any] | None:
    """The capsule's ``next``: ``{"state", "at", "local", "heads_up_at",
    "lead_minutes", "words", "short", "side", "held_by", "snooze"}``, where
    ``words`` is the heads-up in every language of the site and ``short`` the
    pill's few words (both ``None`` for a change that needs none: back to
    work), ``side`` whose rules make the state it changes to (``own``,
    ``team`` or ``both``), ``held_by`` whose rule makes it change then (the
    engine's ``Change.held_by``: ``team`` for a member woken by the team's
    later wake-up, what the page's "by your team's schedule" says), ``snooze``
    whether the heads-up's snooze would put the change off (``snooze_lifts``). ``verdict``
    is the verdict at ``outlook.now`` (``outlook_of``: under pretend, the
    pretended moment, as the page's and the capsule's clocks count from the
    verdict's ``at``: the pretended night's change).

    ``None`` when the curfew is off or in a dry run (nothing will be held
    back) or when nothing changes soon."""
    if not enabled or verdict.dry_run:
        return None
    found = next_change(outlook)
    if found is None:
        return None
    state, at = found.state, found.at
    warn = _harsher(state, verdict.state)
    long, short = _words(state.value) if warn else (None, None)
    return {
        "state": state.value,
        "at": at.astimezone(dt.UTC).isoformat(),
        "local": to_wall(at, outlook.schedule.timezone).strftime("%H:%M"),
        "heads_up_at": (at - LEAD).astimezone(dt.UTC).isoformat(),
        "lead_minutes": LEAD_MINUTES,
        # Each payload its own dicts: a payload may be changed before it is sent.
        "words": dict(long) if long is not None else None,
        "short": dict(short) if short is not None else None,
        "side": found.side,
        "held_by": found.held_by,
        "snooze": bool(warn) and snooze_lifts(outlook, found),
    }
