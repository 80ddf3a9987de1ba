"""The four states for people: their words (``STATE_WORDS``) and one progress number.

Each state's name, hint, short legend word, capsule face and heads-up are
declared once here, in one row per state, and used by every display: the
settings page (the Now card, the band legend, the chart's labels) and the
capsule, which receives the name, the face and the percent in the payload it
is pushed (``selectors.verdicts.capsule_payload``) instead of keeping a table
of its own. Names are translated through the catalog (``locale/zh_Hans``); the
colours are declared once too, in ``static/curfew/states.css``, which the
page's and the capsule's stylesheets import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.utils.dates import WEEKDAYS_ABBR
from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy, override

# The one rounding of progress lives in the pure engine (its reasons use it too);
# re-exported here beside the names, as the displays' vocabulary.
from curfew_core.engine import State, progress_percent
from curfew_core.engine.decide import PRETEND_MARK, REASON_WEEKDAYS
from curfew_core.engine.team import BY_MEMBER, BY_TEAM, OWN_MARK, TEAM_MARK

T = TypeVar("T")

__all__ = [
    "CAPSULE_WORDS",
    "PRETEND",
    "STATE_FACES",
    "STATE_HINTS",
    "STATE_NAMES",
    "STATE_ORDER",
    "STATE_WORDS",
    "StateWords",
    "capsule_words",
    "in_languages",
    "progress_percent",
    "reason_words",
    "reasons_in_languages",
    "state_names",
]


@dataclass(frozen=True, slots=True)
class StateWords:
    """What people read of one state, every display's words in one row."""

    #: Its plain name, the same everywhere a person reads a state (the page,
    #: the legend, the capsule, the chart, the command line, the audit). The
    #: wire values (``on-duty``, ``winding``...) stay what the API says.
    name: Promise
    #: What it does, beside the name in the legend.
    hint: Promise
    #: Short, beside an action in the activity chart's legend: the name's
    #: own word, never the wire value (``winding``, ``lights out``).
    short: Promise
    #: The capsule's face: plain text (no emoji font needed), so narrow mode reads.
    face: str
    #: The Now card's countdown to it (``%(left)s`` and ``%(at)s`` filled in
    #: where it is shown).
    countdown: Promise
    #: The heads-up before it comes (``{minutes}`` and ``{at}`` filled in where
    #: it is shown, as it counts down), and the same short enough for the
    #: capsule's pill; ``None`` for a state worth none (working normally).
    heads_up: Promise | None = None
    heads_up_short: Promise | None = None


#: The four states' words, declared once: every table below and in the
#: displays (``web.words``, ``web.activity.words``, ``selectors.heads_up``,
#: the capsule's push) is read off it.
STATE_WORDS: dict[State, StateWords] = {
    State.ON_DUTY: StateWords(
        name=gettext_lazy("Working"),
        hint=gettext_lazy("your AI answers as usual"),
        short=gettext_lazy("working"),
        face="(•‿•)",
        countdown=gettext_lazy("Back to work in %(left)s (%(at)s)."),
    ),
    State.WINDING: StateWords(
        name=gettext_lazy("Getting sleepy"),
        hint=gettext_lazy("answers get shorter as the night goes on"),
        short=gettext_lazy("sleepy"),
        face="(-‿-)",
        countdown=gettext_lazy("Gets sleepy in %(left)s (%(at)s)."),
        heads_up=gettext_lazy("Your AI gets sleepy in {minutes} min ({at})."),
        heads_up_short=gettext_lazy("sleepy in {minutes} min"),
    ),
    State.OFF_DUTY: StateWords(
        name=gettext_lazy("Off for peak hours"),
        hint=gettext_lazy("busy, full-price hours: a short reply instead of the AI"),
        short=gettext_lazy("peak"),
        face="(¬_¬)",
        countdown=gettext_lazy("Off for peak hours in %(left)s (%(at)s)."),
        heads_up=gettext_lazy("Your AI goes off for peak hours in {minutes} min ({at})."),
        heads_up_short=gettext_lazy("peak hours in {minutes} min"),
    ),
    State.LIGHTS_OUT: StateWords(
        name=gettext_lazy("Asleep"),
        hint=gettext_lazy("no AI until it wakes up"),
        short=gettext_lazy("asleep"),
        face="(-_-) zz",
        countdown=gettext_lazy("Asleep in %(left)s (%(at)s)."),
        heads_up=gettext_lazy("Your AI falls asleep in {minutes} min ({at})."),
        heads_up_short=gettext_lazy("asleep in {minutes} min"),
    ),
}
#: Each state's name by its wire value (the settings page, the chart, the capsule).
STATE_NAMES: dict[str, Promise] = {state.value: words.name for state, words in STATE_WORDS.items()}
#: Each state's hint by its wire value (the band's legend).
STATE_HINTS: dict[str, Promise] = {state.value: words.hint for state, words in STATE_WORDS.items()}
#: Each state's face by its wire value (pushed to the capsule).
STATE_FACES: dict[str, str] = {state.value: words.face for state, words in STATE_WORDS.items()}
#: The one name of the override that makes gateways believe it is another
#: moment (``debug`` on the wire, ``debug_at`` in a verdict): "Pretend".
PRETEND = gettext_lazy("Pretend")
#: The order of the legend: least to most severe.
STATE_ORDER = [state.value for state in State]


def in_languages(say: Callable[[], T]) -> dict[str, T]:
    """What ``say()`` says in every language the site speaks, by primary
    subtag (``{"en": ..., "zh": ...}``): each language active in turn."""
    said = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            said[code.split("-")[0]] = say()
    return said


def state_names(state: str) -> dict[str, str]:
    """``state``'s name in every language the site speaks, by primary subtag
    (``{"en": "On duty", "zh": "值班"}``): what a capsule on any page shows."""
    return in_languages(lambda: str(STATE_NAMES[state]))


# -- reasons ------------------------------------------------------------------
#
# The engine writes one English reason line (``2026-09-29 23:30 · winding 12%
# · budget 1824``): the API's and the ledger's, for gateways and logs. A page
# says it in the reader's language, part by part. The parts come from the
# engine's fixed set (``engine.decide``: ``_describe`` and the override,
# scope and dry-run notes), so each is recognised and put in words; a part
# this table does not know is shown as the engine wrote it.

_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")
_WHY = {
    "weekend": gettext_lazy("weekend"),
    "make-up workday": gettext_lazy("make-up workday"),
    "personal workday": gettext_lazy("personal workday"),
}
_PLAIN = {
    "peak hours": gettext_lazy("off for peak hours"),
    "lights out": gettext_lazy("asleep"),
    "on duty": gettext_lazy("working"),
    "curfew disabled": gettext_lazy("Curfew is switched off"),
    "exempt session": gettext_lazy("this session is let through"),
    "subagents spared": gettext_lazy("helper agents are let through"),
    # A member's exemption the team lets count (``engine.team._exempted``).
    "exempt (team and member)": gettext_lazy("let through, your team's side too"),
    # "pretending" (and its older spelling in stored decisions).
    "pretending": gettext_lazy("pretending"),
    "time machine": gettext_lazy("pretending"),
    "dry run: would clamp": gettext_lazy("only watching: would have shortened the answer"),
    "dry run: would short-circuit": gettext_lazy("only watching: would have answered for the AI"),
    # One side only watching while the other acts (``engine.team.combine``):
    # the call was acted on, by the other side.
    BY_TEAM: gettext_lazy("only watching, but your team's schedule acts"),
    BY_MEMBER: gettext_lazy("only watching, but your own schedule acts"),
}
#: Said in reasons and beside the capsule's state alike (``CAPSULE_WORDS``).
_BUDGET = gettext_lazy("answers up to %(n)s tokens")
_FORCED = gettext_lazy("switched off by hand until %(at)s")
#: The pretend's part: the pretended moment (``pretending it is Wed 01:30``),
#: and its end, on the real clock (``until 21:00 real time``).
_PRETENDED = rf"{PRETEND_MARK} it is (?P<day>{'|'.join(REASON_WEEKDAYS)}) (?P<at>\d\d:\d\d)"
_PATTERNS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"peak hours \((?P<why>.+)\)"), gettext_lazy("off for peak hours (%(why)s)")),
    (re.compile(r"lights out until (?P<at>\d\d:\d\d)"), gettext_lazy("asleep until %(at)s")),
    (
        re.compile(r"winding (?P<pct>\d+)%"),
        gettext_lazy("getting sleepy, %(pct)s%% through the night"),
    ),
    (re.compile(r"budget (?P<n>\d+)"), _BUDGET),
    (re.compile(r"valley day \((?P<why>.+)\)"), gettext_lazy("no peak hours today (%(why)s)")),
    (re.compile(r"forced off until (?P<at>.+)"), _FORCED),
    (re.compile(r"overtime until (?P<at>.+)"), gettext_lazy("overtime until %(at)s")),
    (
        re.compile(rf"{_PRETENDED} until (?P<end>\d\d:\d\d) real time"),
        gettext_lazy("pretending it is %(day)s %(at)s, until %(end)s on the real clock"),
    ),
    (re.compile(_PRETENDED), gettext_lazy("pretending it is %(day)s %(at)s")),
    (
        # Rows written before the part named the pretended moment: their end
        # was on the real clock too, though they did not say so.
        re.compile(r"(?:pretending|time machine) until (?P<at>.+)"),
        gettext_lazy("pretending, until %(at)s on the real clock"),
    ),
    (
        re.compile(r"purpose (?P<q>['\"])(?P<name>.*)(?P=q) is exempt"),
        gettext_lazy("“%(name)s” calls are let through"),
    ),
    (
        re.compile(r"purpose (?P<q>['\"])(?P<name>.*)(?P=q) is not exempt"),
        gettext_lazy("“%(name)s” calls are not on the let-through list"),
    ),
)


def _why(text: str, holiday: str | None) -> str:
    """``weekend``, ``holiday: National Day`` (the holiday named for the
    reader when the page knows it), ``make-up workday``."""
    if text.startswith("holiday: "):
        name = holiday or text.removeprefix("holiday: ")
        return gettext("holiday: %(name)s") % {"name": name}
    words = _WHY.get(text)
    return str(words) if words is not None else text


def reason_part(part: str, *, holiday: str | None = None) -> str:
    """One part of an engine reason in the active language."""
    if part.startswith(TEAM_MARK):
        # A team member's reason tells the team's side after the member's
        # own (``engine.team.combine``): each of its parts carries the mark.
        what = reason_part(part.removeprefix(TEAM_MARK), holiday=holiday)
        return gettext("team: %(what)s") % {"what": what}
    if part.startswith(OWN_MARK):
        # The member's own side, marked where a display puts the team's first.
        what = reason_part(part.removeprefix(OWN_MARK), holiday=holiday)
        return gettext("yours: %(what)s") % {"what": what}
    if _DATE.fullmatch(part):
        return part
    plain = _PLAIN.get(part)
    if plain is not None:
        return str(plain)
    if part in _WHY or part.startswith("holiday: "):
        return _why(part, holiday)
    for pattern, words in _PATTERNS:
        found = pattern.fullmatch(part)
        if found is not None:
            params = found.groupdict()
            if "why" in params:
                params["why"] = _why(params["why"], holiday)
            if "day" in params:
                params["day"] = str(WEEKDAYS_ABBR[REASON_WEEKDAYS.index(params["day"])])
            return str(words) % params
    return part


def reason_words(reason: str, *, holiday: str | None = None) -> str:
    """An engine reason line said in the active language (``holiday``: the
    day's holiday as the reader names it, in place of the engine's name)."""
    if not reason:
        return reason
    return " · ".join(reason_part(part, holiday=holiday) for part in reason.split(" · "))


def reasons_in_languages(reason: str) -> dict[str, str]:
    """``reason`` said in every language the site speaks, by primary subtag:
    the capsule's tooltip, like ``state_names``."""
    return in_languages(lambda: reason_words(reason))


# -- the capsule's details ----------------------------------------------------------
#
# What the capsule says beside a state's name (the budget, until when, a
# reply, only watching) is said in these words, pushed with every state
# (``selectors.verdicts.capsule_payload``): the capsule keeps only the words of
# its own connection (connecting, signed out), which it needs before any push.
# ``%(name)s`` is filled in by the capsule, on the reader's clock.

CAPSULE_WORDS = {
    "overtime": gettext_lazy("On overtime"),
    # An overtime in force while the engine's state is not working normally
    # (a team's night the team's policy keeps): said beside the state.
    "overtime_held": gettext_lazy("overtime does not lift your team's night"),
    # The same, where what the team keeps is its peak hours (off duty).
    "overtime_held_peak": gettext_lazy("overtime does not lift your team's peak hours"),
    "disabled": _PLAIN["curfew disabled"],
    "budget": _BUDGET,
    "until": gettext_lazy("until %(at)s"),
    "forced": _FORCED,
    "replies": gettext_lazy("answers “%(reply)s”"),
    "dry_run": gettext_lazy("only watching"),
}
_capsule_words: dict[str, dict[str, str]] = {}


def capsule_words() -> dict[str, dict[str, str]]:
    """``CAPSULE_WORDS`` in every language the site speaks, by primary subtag.
    The same for every push, so said once per process."""
    if not _capsule_words:
        _capsule_words.update(
            in_languages(lambda: {key: str(words) for key, words in CAPSULE_WORDS.items()})
        )
    return _capsule_words
