"""Letting calls through by name: the Replies page's exemption picker.

People pick from what Curfew has seen call in (``selectors.exemptions``: the
sessions and purposes of the last 30 days, and the ones already let through),
each a checkbox named by what it is and when it last called, instead of
typing ids; typing stays possible for one not seen yet. Works without
script: each offered name is posted as ``seen_<kind>``, each ticked one as
``pick_<kind>``, and ``merged`` turns them, with what was typed, back into
the setting's lines before the one validation layer reads them.

Inside a team, a ticked box may count for nothing: the team lets a member's
exemption count only as ``engine.team.team_lets_exempt`` says (the rule
``decide_member`` applies). Such a box is marked void where it is ticked,
with why, rather than left for the verdict's reason to tell (issue 39).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from curfew_core.engine import TeamSide
from curfew_core.engine.clock import to_wall
from curfew_core.engine.schedule import RequestContext, purpose_key
from curfew_core.engine.team import dry_run_holds, team_lets_exempt
from curfew_core.selectors.exemptions import Seen, seen_callers
from curfew_core.web.activity.words import origin_word

#: The setting each picker fills, and the names of its posted boxes.
PICKERS = {
    "sessions": ("exempt_sessions", "pick_session", "seen_session"),
    "purposes": ("exempt_purposes", "pick_purpose", "seen_purpose"),
}


@dataclass(frozen=True, slots=True)
class Pick:
    value: str
    checked: bool
    #: ``12 calls, last 2026-12-01 23:10, through proxy: chat``; empty for a
    #: name let through that has not called lately.
    detail: str
    #: Ticked, but the person's team does not let it count (see ``void``).
    void: bool = False


#: The call each picker's name stands for, as a gateway would ask about it.
_CALLS = {
    "sessions": lambda name: RequestContext(session_id=name),
    "purposes": lambda name: RequestContext(purpose=name),
}


def void(team: TeamSide | None, kind: str, name: str) -> bool:
    """Whether letting ``name`` (of picker ``kind``) through counts for nothing
    in ``team``: the engine's own rule, asked about the call the name stands for."""
    return team is not None and not team_lets_exempt(team, _CALLS[kind](name))


def subagents_void(team: TeamSide | None, spared: bool) -> bool:
    """Whether sparing subagents (``apply_to_subagents`` off) counts for nothing in ``team``."""
    return spared and team is not None and not team_lets_exempt(team, RequestContext(subagent=True))


def team_acts(team: TeamSide | None) -> bool:
    """Whether the person's team acts whatever their own "Only watch" says:
    the engine's own rule (``engine.team.dry_run_holds``: a team that acts
    overrides a member's dry run where it acts)."""
    return team is not None and not dry_run_holds(team)


def dry_run_void(team: TeamSide | None, watching: bool) -> bool:
    """Whether "Only watch" (``watching``, as the form shows it) leaves the
    team's part acting (``team_acts``)."""
    return watching and team_acts(team)


#: "Only watch"'s help for a member whose team acts (``team_acts``): the
#: declared help says it "holds nothing back", which is so only where no
#: team acts (``Setting.help`` of ``dry_run``).
DRY_RUN_HELP_TEAM_ACTS = gettext_lazy(
    "Curfew decides and reports what your own schedule would do, and holds none of it back."
    " Your team's schedule still acts: at its hours your calls are still held back."
)


def dry_run_help(team: TeamSide | None) -> str | None:
    """The help of "Only watch" where the declared one is untrue for the
    person (their ``team`` acts), in the active language; ``None`` where it
    holds."""
    return str(DRY_RUN_HELP_TEAM_ACTS) if team_acts(team) else None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def merged(post: QueryDict) -> QueryDict:
    """The post with each picker's ticks folded into its setting: the ticked
    names, then the typed ones that no box offered (a box left unticked is
    not let through, whatever was typed)."""
    if not any(post.getlist(seen) for _setting, _pick, seen in PICKERS.values()):
        return post
    data = post.copy()
    for setting, pick, seen in PICKERS.values():
        offered = set(post.getlist(seen))
        names: list[str] = []
        for name in [*post.getlist(pick), *_lines(post.get(setting, ""))]:
            if name in names or (name in offered and name not in post.getlist(pick)):
                continue
            names.append(name)
        data[setting] = "\n".join(names)
    return data


def _detail(seen: Seen, tz: dt.tzinfo) -> str:
    calls = ngettext("%(n)s call", "%(n)s calls", seen.calls) % {"n": seen.calls}
    last = to_wall(seen.last, tz).strftime("%Y-%m-%d %H:%M")
    through = ", ".join(origin_word(origin) for origin in seen.origins)
    return _("%(calls)s, last %(last)s, through %(through)s") % {
        "calls": calls,
        "last": last,
        "through": through,
    }


def picks(
    *,
    user_id: int,
    now: dt.datetime,
    current: Mapping[str, Any],
    tz: dt.tzinfo,
    team: TeamSide | None = None,
) -> dict[str, list[Pick]]:
    """Each picker's boxes: what called lately (most recent first), then what
    is let through but has not called; ticked where ``current`` (the config
    shown) lets it through, and void where ticked but ``team`` (the person's
    team's side, if any) does not let it count."""
    seen = seen_callers(user_id=user_id, now=now)
    out: dict[str, list[Pick]] = {}
    for kind, (setting, _pick, _seen) in PICKERS.items():
        chosen = list(current.get(setting) or [])
        boxes: list[Pick] = []
        offered: set[str] = set()
        for caller in seen[kind]:
            value = caller.name
            if kind == "purposes":
                # Purposes are let through by their key (lowercase, trimmed);
                # one that can never be a key is not offered.
                key = purpose_key(value)
                if key is None:
                    continue
                value = key
            if value in offered:
                continue
            offered.add(value)
            ticked = value in chosen
            boxes.append(
                Pick(value, ticked, _detail(caller, tz), ticked and void(team, kind, value))
            )
        for value in chosen:
            if value not in offered:
                offered.add(value)
                boxes.append(Pick(value, True, "", void(team, kind, value)))
        out[kind] = boxes
    return out


def typed_only(current: Mapping[str, Any], offered: Mapping[str, list[Pick]]) -> dict[str, str]:
    """What the typing boxes show beside the pickers: nothing the boxes
    already offer (every name let through is a ticked box)."""
    out = {}
    for kind, (setting, _pick, _seen) in PICKERS.items():
        shown = {pick.value for pick in offered.get(kind, [])}
        out[setting] = "\n".join(v for v in current.get(setting) or [] if v not in shown)
    return out
