"""The four states for people: one name per language and one progress number.

Declared once here and used by every display: the settings page (the Now card,
the band legend, the chart's labels) and the capsule, which receives the name
and the percent in the payload it is pushed (``selectors.verdicts.capsule_payload``)
instead of keeping a table of its own. Names are translated through the catalog
(``locale/zh_Hans``); the colours are declared once too, in
``static/curfew/states.css``, which the page's and the capsule's stylesheets import.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.utils.translation import gettext, gettext_lazy, override

# The one rounding of progress lives in the pure engine (its reasons use it too);
# re-exported here beside the names, as the displays' vocabulary.
from curfew_core.engine import State, progress_percent
from curfew_core.engine.team import TEAM_MARK

__all__ = [
    "CAPSULE_WORDS",
    "PRETEND",
    "STATE_NAMES",
    "STATE_ORDER",
    "capsule_words",
    "progress_percent",
    "reason_words",
    "reasons_in_languages",
    "state_names",
]

#: Plain words, the same everywhere a person reads a state (the page, the
#: legend, the capsule, the chart, the command line, the audit). The wire
#: values (``on-duty``, ``winding``...) stay what the API says.
STATE_NAMES = {
    State.ON_DUTY.value: gettext_lazy("Working"),
    State.WINDING.value: gettext_lazy("Getting sleepy"),
    State.OFF_DUTY.value: gettext_lazy("Off for peak hours"),
    State.LIGHTS_OUT.value: gettext_lazy("Asleep"),
}
#: The one name of the override that makes gateways believe it is another
#: moment (``debug`` on the wire, ``debug_at`` in a verdict): "Pretend".
PRETEND = gettext_lazy("Pretend")
#: The order of the legend: least to most severe.
STATE_ORDER = [state.value for state in State]


def state_names(state: str) -> dict[str, str]:
    """``state``'s name in every language the site speaks, by primary subtag
    (``{"en": "On duty", "zh": "值班"}``): what a capsule on any page shows."""
    names = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            names[code.split("-")[0]] = str(STATE_NAMES[state])
    return names


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
    # "pretending" (and its older spelling in stored decisions).
    "pretending": gettext_lazy("pretending"),
    "time machine": gettext_lazy("pretending"),
    "dry run: would clamp": gettext_lazy("only watching: would have shortened the answer"),
    "dry run: would short-circuit": gettext_lazy("only watching: would have answered for the AI"),
}
#: Said in reasons and beside the capsule's state alike (``CAPSULE_WORDS``).
_BUDGET = gettext_lazy("answers up to %(n)s tokens")
_FORCED = gettext_lazy("switched off by hand until %(at)s")
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
        re.compile(r"(?:pretending|time machine) until (?P<at>.+)"),
        gettext_lazy("pretending until %(at)s"),
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
        # own (``engine.team.combine``): its first part carries the mark.
        what = reason_part(part.removeprefix(TEAM_MARK), holiday=holiday)
        return gettext("team: %(what)s") % {"what": what}
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
    said = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            said[code.split("-")[0]] = reason_words(reason)
    return said


# -- the capsule's details ----------------------------------------------------------
#
# What the capsule says beside a state's name (the budget, until when, a
# reply, only watching) is said in these words, pushed with every state
# (``selectors.verdicts.capsule_payload``): the capsule keeps only the words of
# its own connection (connecting, signed out), which it needs before any push.
# ``%(name)s`` is filled in by the capsule, on the reader's clock.

CAPSULE_WORDS = {
    "overtime": gettext_lazy("On overtime"),
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
        for code, _label in settings.LANGUAGES:
            with override(code):
                said = {key: str(words) for key, words in CAPSULE_WORDS.items()}
            _capsule_words[code.split("-")[0]] = said
    return _capsule_words
