"""What the Team page reads, in the shapes it shows: the one place the page
meets ``selectors.teams`` (the team layer's reads), so the views and the words
stay plain."""

from __future__ import annotations

import datetime as dt
from typing import Any

from curfew_core.selectors import teams as team_selectors
from curfew_core.selectors.users import user_by_id
from curfew_core.services.teams import invite_digest

#: The members shown in the savings table: the most saved first.
SAVINGS_ROWS = 20


def members(team: Any, *, now: dt.datetime, page: int, per_page: int) -> Any:
    """A page of members with their states; a page past the end is the last
    (a link kept from a bigger team still shows someone)."""
    found = team_selectors.members_page(team=team, now=now, page=page, per_page=per_page)
    last = max(1, -(-found.total // per_page))
    if page > last:
        found = team_selectors.members_page(team=team, now=now, page=last, per_page=per_page)
    return found


def member(team: Any, user_id: int) -> Any:
    """The member of ``team`` with this id, or ``None`` (never another team's)."""
    found = team_selectors.membership_of(user_id=user_id)
    if found is None or found.team_id != team.pk:
        return None
    return user_by_id(user_id)


def savings(team: Any, *, since: dt.datetime, until: dt.datetime) -> tuple[Any, list[Any]]:
    """Together, and the members who saved most (by requests not sent, then tokens)."""
    together, each = team_selectors.team_savings(team=team, since=since, until=until)
    ranked = sorted(
        each.items(),
        key=lambda item: (
            -item[1].requests_not_sent,
            -item[1].output_tokens_not_generated,
            item[0],
        ),
    )
    return together, ranked[:SAVINGS_ROWS]


def invites(team: Any, *, now: dt.datetime) -> list[Any]:
    return team_selectors.open_invites(team=team, now=now)


def invite_team(raw: str, *, now: dt.datetime) -> Any:
    """The team an open invite link is for, or ``None``."""
    return team_selectors.invite_team(digest=invite_digest(raw), now=now)


def audit(team: Any, *, limit: int, tz: str) -> list[Any]:
    return team_selectors.team_audit(team=team, limit=limit, tz=tz)
