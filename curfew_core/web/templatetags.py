"""Template filters for the settings page (registered as the ``curfew`` library)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from curfew_core.web import words
from curfew_core.web.activity import words as ledger_words
from curfew_core.web.schedule import choices

register = template.Library()


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
def audit_lines(row: Any) -> list[str]:
    """What an audit row changed, in the reader's language (``words.audit_lines``)."""
    return words.audit_lines(row)


@register.filter
def reason_words(reason: str) -> str:
    """An engine reason in the reader's language (``words.reason_words``)."""
    return words.reason_words(reason)


@register.filter
def audit_channel(channel: str) -> str:
    return words.audit_channel(channel)


@register.filter
def zone_place(zone: str) -> str:
    """``Shanghai`` for ``Asia/Shanghai``: the place, the zone id being a detail."""
    return choices.zone_label(zone) if zone else zone


@register.filter
def thousands(number: int | None) -> str:
    """``12,345``: digits grouped the same in both languages the site speaks."""
    return "—" if number is None else f"{number:,}"


@register.filter
def state_word(state: str) -> str:
    return ledger_words.state_word(state)


@register.filter
def action_word(action: str) -> str:
    """``answered without a request`` for ``short-circuit`` (the ledger's codes)."""
    return ledger_words.action_word(action)


@register.filter
def origin_word(origin: str) -> str:
    return ledger_words.origin_word(origin)


@register.filter
def ledger_reason(reason: str) -> str:
    """A stored reason line in the reader's language, undated (``activity.words.reason_words``)."""
    return ledger_words.reason_words(reason)


@register.filter
def did_word(action: str, origin: str) -> str:
    """``embedding refused`` for an embeddings short-circuit, else ``action_word``."""
    return ledger_words.did_word(action, origin)


@register.filter
def windows(pairs: list[list[str]]) -> str:
    """Discount windows as ``10:00–01:00, 04:00–06:00``."""
    return ", ".join(f"{start}–{end}" for start, end in pairs)
