"""Template filters for the settings page (registered as the ``curfew`` library)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

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
    from curfew_core.web.words import audit_what as words

    return words(row.subject, row.action)


@register.filter
def audit_door(door: str) -> str:
    from curfew_core.web.words import audit_door as words

    return words(door)
