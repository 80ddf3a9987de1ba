"""Letting calls through by name: the Replies page's exemption picker.

People pick from what Curfew has seen call in (``selectors.exemptions``: the
sessions and purposes of the last 30 days, and the ones already let through),
each a checkbox named by what it is and when it last called, instead of
typing ids; typing stays possible for one not seen yet. Works without
script: each offered name is posted as ``seen_<kind>``, each ticked one as
``pick_<kind>``, and ``merged`` turns them, with what was typed, back into
the setting's lines before the one validation layer reads them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from curfew_core.engine.clock import to_wall
from curfew_core.engine.schedule import purpose_key
from curfew_core.selectors.exemptions import Seen, seen_callers
from curfew_core.web.activity import origin_word

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
    *, user_id: int, now: dt.datetime, current: Mapping[str, Any], tz: dt.tzinfo
) -> dict[str, list[Pick]]:
    """Each picker's boxes: what called lately (most recent first), then what
    is let through but has not called; ticked where ``current`` (the config
    shown) lets it through."""
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
            boxes.append(Pick(value, value in chosen, _detail(caller, tz)))
        for value in chosen:
            if value not in offered:
                offered.add(value)
                boxes.append(Pick(value, True, ""))
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
