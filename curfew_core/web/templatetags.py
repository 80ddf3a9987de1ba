"""Template filters for the settings page (registered as the ``curfew`` library)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django import template

from curfew_core.web import words
from curfew_core.web.activity import words as ledger_words
from curfew_core.web.schedule import choices, story

register = template.Library()

#: Filters that are a words function as it stands: ``{{ row|audit_lines }}``,
#: ``{{ row.action|did_word:row.origin }}``.
WORD_FILTERS: dict[str, Callable[..., Any]] = {
    # What an audit row changed; an engine reason; a door's name.
    "audit_lines": words.audit_lines,
    "reason_words": words.reason_words,
    "audit_channel": words.audit_channel,
    # The ledger's codes: ``answered without a request`` for ``short-circuit``,
    # ``embedding refused`` for an embeddings short-circuit; a stored reason
    # line, undated.
    "state_word": ledger_words.state_word,
    "action_word": ledger_words.action_word,
    "origin_word": ledger_words.origin_word,
    "did_word": ledger_words.did_word,
    "ledger_reason": ledger_words.reason_words,
}
for _name, _words in WORD_FILTERS.items():
    register.filter(_name, _words)


@register.filter
def lookup(mapping: Mapping[Any, Any] | None, key: Any) -> Any:
    """``{{ names|lookup:cell.state }}``: a dict entry by a key held in a variable."""
    if not mapping:
        return ""
    return mapping.get(key, "")


@register.filter
def audit_what(row: Any) -> str:
    """An audit row's subject and action in the reader's language."""
    return words.audit_what(row.subject, row.action)


@register.filter
def zone_place(zone: str) -> str:
    """``Shanghai`` for ``Asia/Shanghai``: the place, the zone id being a detail."""
    return choices.zone_label(zone) if zone else zone


@register.filter
def joined(plan: Any) -> list[Any]:
    """``{% for seg in day.plan|joined %}``: neighbouring rows in one state as one."""
    return story.joined(plan)


@register.filter
def thousands(number: int | None) -> str:
    """``12,345``: digits grouped the same in both languages the site speaks."""
    return "—" if number is None else f"{number:,}"


@register.filter
def windows(pairs: list[list[str]]) -> str:
    """Discount windows as ``10:00–01:00, 04:00–06:00``."""
    return ", ".join(f"{start}–{end}" for start, end in pairs)
