"""What Curfew has seen call in: the sessions and purposes a person can let
through by name (the Replies page's exemption picker) instead of typing ids.

Read from the decision ledger's raw rows (kept ``CURFEW_LEDGER_RETENTION_DAYS``,
30 by default): each distinct session and purpose of the last ``days``, with
how often and how recently it called and through which doors (its origins:
the chat, messages, verdict... door names the page puts in words).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Max

from curfew_core.models import Decision

#: How far back the picker looks, and how many of each it offers.
SEEN_DAYS = 30
SEEN_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Seen:
    """One session or purpose that called in."""

    name: str
    calls: int
    last: dt.datetime
    origins: tuple[str, ...]


def _seen(user_id: int, field: str, since: dt.datetime, limit: int) -> list[Seen]:
    rows = list(
        Decision.objects.filter(user_id=user_id, at__gte=since)
        .exclude(**{field: ""})
        .values(field)
        .annotate(calls=Count("id"), last=Max("at"))
        .order_by("-last", field)[:limit]
    )
    names = [row[field] for row in rows]
    origins: dict[str, set[str]] = {name: set() for name in names}
    pairs = (
        Decision.objects.filter(user_id=user_id, at__gte=since, **{f"{field}__in": names})
        .values_list(field, "origin")
        .distinct()
    )
    for name, origin in pairs:
        origins[name].add(origin)
    return [
        Seen(
            name=row[field],
            calls=row["calls"],
            last=row["last"],
            origins=tuple(sorted(origins[row[field]])),
        )
        for row in rows
    ]


def seen_callers(
    *, user_id: int, now: dt.datetime, days: int = SEEN_DAYS, limit: int = SEEN_LIMIT
) -> dict[str, list[Seen]]:
    """``{"sessions": [...], "purposes": [...]}``: what called in the last
    ``days``, the most recent first, at most ``limit`` of each."""
    since = now - dt.timedelta(days=days)
    return {
        "sessions": _seen(user_id, "session", since, limit),
        "purposes": _seen(user_id, "purpose", since, limit),
    }
