"""Reads of teams (issue 26): who is in which team, the team's schedule, each
member's state now and next, the team's savings and decisions, its audit."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Q, Sum

from curfew_core.engine import State
from curfew_core.engine.clock import to_wall
from curfew_core.engine.effective import Change, ShareDay, team_week
from curfew_core.ledger.savings import Bucket, Savings
from curfew_core.models import (
    UNSAVED_VERSION,
    AuditEntry,
    Decision,
    DecisionHour,
    Team,
    TeamInvite,
    TeamMembership,
)
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.audit import AuditRow, audit_row
from curfew_core.selectors.bundles import bundle_for, bundles_for
from curfew_core.selectors.ledger import BUCKET_SUMS, decision_json, savings_of
from curfew_core.selectors.outlook import outlook_of
from curfew_core.selectors.verdicts import decide_for
from curfew_core.store import cache_policy
from curfew_core.store.cache_policy import lifetime

__all__ = [
    "DEFAULT_PER_PAGE",
    "MAX_PAGE",
    "MAX_PER_PAGE",
    "MemberPage",
    "MemberRow",
    "Membership",
    "Team",
    "forget_member_name",
    "invite_team",
    "is_admin",
    "live_team_tokens",
    "member_ids",
    "member_ids_page",
    "member_key",
    "member_user_id",
    "members_page",
    "membership_of",
    "open_invite_filter",
    "open_invites",
    "overridden_settings",
    "team_audit",
    "team_by_id",
    "team_by_name",
    "team_decision_counts",
    "team_decisions",
    "team_id_of",
    "team_savings",
    "team_schedule",
    "team_share",
]

#: A page of members is at most this long (the API's ``per_page`` bound).
MAX_PER_PAGE = 200
DEFAULT_PER_PAGE = 50
#: The highest page of members the API takes.
MAX_PAGE = 1_000_000


@dataclass(frozen=True, slots=True)
class Membership:
    team_id: int
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == TeamMembership.Role.ADMIN


def membership_of(*, user_id: int) -> Membership | None:
    """The user's team and role, or ``None`` (a user is in at most one team)."""
    row = TeamMembership.objects.filter(user_id=user_id).values_list("team_id", "role").first()
    return None if row is None else Membership(*row)


def team_by_name(name: str) -> Team | None:
    return Team.objects.filter(name=name.strip()).first()


def team_by_id(team_id: int) -> Team | None:
    return Team.objects.filter(id=team_id).first()


def is_admin(*, team_id: int, user_id: int) -> bool:
    """Whether the user is an admin of the team (``services.teams`` asks it
    before every admin's change)."""
    return TeamMembership.objects.filter(
        team_id=team_id, user_id=user_id, role=TeamMembership.Role.ADMIN
    ).exists()


# -- a team key's member, by username -----------------------------------------------------

_MISSING = 0
#: How long "no such member" is remembered (a new member is asked for at once).
_MISSING_SECONDS = 5
_FOUND_SECONDS = 3600


def member_key(team_id: int, username: str) -> str:
    return f"team-member:{team_id}:{username}"


def member_user_id(*, team_id: int, username: str) -> int | None:
    """The user id of the member of ``team_id`` called ``username``, or ``None``.

    Cached: a user id never changes hands, so the cache only has to forget a
    name that was not a member (briefly) and a member removed (the caller
    checks the member's own rows name this team: ``UserBundle.team_id``).
    """
    key = member_key(team_id, username)
    found = cache.get(key)
    if found is None:
        user_id = (
            TeamMembership.objects.filter(team_id=team_id, user__username=username)
            .values_list("user_id", flat=True)
            .first()
        )
        found = _MISSING if user_id is None else user_id
        cache.set(
            key,
            found,
            timeout=lifetime(_MISSING_SECONDS if user_id is None else _FOUND_SECONDS),
        )
    return None if found == _MISSING else int(found)


def members_named(*, team_id: int, usernames: set[str]) -> dict[str, int]:
    """The members of ``team_id`` among ``usernames``, name to user id, read
    now (not cached: a report or a ledger read is not the hot path, and a
    member removed a moment ago must be refused)."""
    return dict(
        TeamMembership.objects.filter(team_id=team_id, user__username__in=usernames).values_list(
            "user__username", "user_id"
        )
    )


def forget_member_name(team_id: int, username: str) -> None:
    cache_policy.forget(member_key(team_id, username))


def team_id_of(user_id: int) -> int | None:
    """The user's team as their cached rows say (after a commit: the new one)."""
    return bundle_for(user_id).team_id


# -- the team's schedule ---------------------------------------------------------------


def team_schedule(team: Team) -> dict[str, Any]:
    """The team's settings (every declared one), its policy and its version,
    as committed: what a client reads before a versioned PATCH."""
    fresh = Team.objects.filter(pk=team.pk).first() or team
    return {
        **schedule_config.with_defaults(fresh.config),
        "members_may_exempt": fresh.members_may_exempt,
        "member_overtime_minutes": fresh.member_overtime_minutes,
        "overtime_until": fresh.overtime_until.isoformat() if fresh.overtime_until else None,
        "version": fresh.version if fresh.version is not None else UNSAVED_VERSION,
    }


def team_zone(team: Team) -> zoneinfo.ZoneInfo:
    """The zone the team's own schedule keeps (its saved one, else the default)."""
    return zoneinfo.ZoneInfo(schedule_config.with_defaults(team.config)["timezone"])


def overridden_settings(*, team: Team, user_id: int) -> list[dict[str, Any]]:
    """Which of a member's own settings the team's are harsher than, each
    with both values: what a member page says in words."""
    own = bundle_for(user_id).config
    theirs = schedule_config.with_defaults(team.config)
    return [
        {"field": key, "own": own.get(key), "team": theirs.get(key)}
        for key in schedule_config.FIELDS
        if own.get(key) != theirs.get(key)
    ]


def team_share(*, user_id: int, now: datetime) -> tuple[ShareDay, ...] | None:
    """What the member's team overrides of their own schedule, per local day
    of their week (Monday to Sunday, on their own clock): the engine's plan's
    stretches that are the team's alone (``engine.effective.team_week``), from
    exactly the schedules their verdicts are decided with. ``None`` when the
    user is in no team (as their rows say)."""
    bundle = bundle_for(user_id)
    if bundle.team is None:
        return None
    today = to_wall(now, bundle.schedule.timezone).date()
    return team_week(today - timedelta(days=today.weekday()), bundle.schedule, bundle.team)


# -- members, with their state now and next ---------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberRow:
    user_id: int
    username: str
    role: str
    joined_at: datetime
    #: The member's verdict now (team and own combined).
    state: State
    reason: str
    #: The member's next change of state, as the engine's effective plan says
    #: it (``selectors.outlook``: their schedule, overrides and team, the
    #: verdict's own inputs); ``None`` when nothing changes within its horizon.
    next: Change | None
    #: The moment the member is pretending it is ("pretend it is ..."), or
    #: ``None``: the state above is then the pretended moment's, not now's.
    pretending: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "user": self.username,
            "role": self.role,
            "joined_at": self.joined_at.isoformat(),
            "state": self.state.value,
            "reason": self.reason,
            "next_change": None
            if self.next is None
            else {
                "at": self.next.at.isoformat(),
                "state": self.next.state.value,
                "side": self.next.side,
                "held_by": self.next.held_by,
            },
        }


@dataclass(frozen=True, slots=True)
class MemberPage:
    rows: list[MemberRow]
    page: int
    per_page: int
    total: int
    next_page: int | None


def members_page(
    *,
    team: Team,
    now: datetime,
    page: int = 1,
    per_page: int = DEFAULT_PER_PAGE,
    role: str | None = None,
) -> MemberPage:
    """One page of the team's members (admins first, then by name), each with
    their state now and their next change of state (the engine's)."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(1, page)
    rows = TeamMembership.objects.filter(team=team)
    if role is not None:
        rows = rows.filter(role=role)
    total = rows.count()
    first = (page - 1) * per_page
    found = list(
        rows.order_by("role", "user__username").values_list(
            "user_id", "user__username", "role", "joined_at"
        )[first : first + per_page]
    )
    out = []
    # One read for the page's rows (cache, then one query per table for the
    # missing): the same few queries for a page of 5,000 members as of 5.
    bundles = bundles_for([row[0] for row in found])
    for user_id, username, member_role, joined_at in found:
        verdict, _ = decide_for(bundles[user_id], now=now)
        out.append(
            MemberRow(
                user_id=user_id,
                username=username,
                role=member_role,
                joined_at=joined_at,
                state=verdict.state,
                reason=verdict.reason,
                next=outlook_of(bundles[user_id], now=now).next_change(),
                pretending=verdict.debug_at,
            )
        )
    return MemberPage(
        rows=out,
        page=page,
        per_page=per_page,
        total=total,
        next_page=page + 1 if first + per_page < total else None,
    )


def member_ids(team: Team) -> list[int]:
    return list(TeamMembership.objects.filter(team=team).values_list("user_id", flat=True))


def member_ids_page(
    *, team: Team, page: int = 1, per_page: int = DEFAULT_PER_PAGE, role: str | None = None
) -> list[int]:
    """The user ids of one page of ``members_page``, in its order."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    first = (max(1, page) - 1) * per_page
    rows = TeamMembership.objects.filter(team=team)
    if role is not None:
        rows = rows.filter(role=role)
    return list(
        rows.order_by("role", "user__username").values_list("user_id", flat=True)[
            first : first + per_page
        ]
    )


# -- savings and decisions ----------------------------------------------------------------


def team_savings(
    *, team: Team, since: datetime, until: datetime
) -> tuple[Savings, dict[str, Savings]]:
    """What the curfew saved the team in ``[since, until)``: together, and per
    member (by username; only members with decisions in the range). Each
    member's at their own prices; together is the sum of theirs (money in the
    currency of each member's table: a team whose members price in several
    currencies should read per member)."""
    members = dict(
        TeamMembership.objects.filter(team=team).values_list("user_id", "user__username")
    )
    buckets: dict[int, list[Bucket]] = {}
    rows = DecisionHour.objects.filter(
        user_id__in=list(members), hour_start__gte=since, hour_start__lt=until
    ).values_list("user_id", "hour_start", "action", "count", *BUCKET_SUMS)
    for user_id, *bucket in rows:
        buckets.setdefault(user_id, []).append(Bucket(*bucket))
    per_member = {
        members[user_id]: savings_of(user_id=user_id, buckets=found)
        for user_id, found in buckets.items()
    }
    together = savings_of(
        user_id=next(iter(members), 0),
        buckets=[bucket for found in buckets.values() for bucket in found],
    )
    return together, per_member


def team_decision_counts(*, team: Team, since: datetime, until: datetime) -> dict[str, int]:
    """The team's decisions per action in ``[since, until)`` (hourly totals)."""
    rows = (
        DecisionHour.objects.filter(
            user__curfew_team_membership__team=team, hour_start__gte=since, hour_start__lt=until
        )
        .values_list("action")
        .annotate(n=Sum("count"))
    )
    return {action: int(n or 0) for action, n in rows}


def team_decisions(*, team: Team, limit: int = 50) -> list[dict[str, Any]]:
    """The team's latest decisions, newest first, each naming its member."""
    rows = (
        Decision.objects.filter(user__curfew_team_membership__team=team)
        .select_related("user")
        .order_by("-at", "-id")[:limit]
    )
    return [{**decision_json(row), "user": row.user.get_username()} for row in rows]


# -- invites and the audit ----------------------------------------------------------------


def open_invite_filter(now: datetime) -> Q:
    """What makes an invite open at ``now``: not used, not revoked, not yet
    expired. The one rule the team page's list, the join page and
    ``services.teams.invite_accept`` all ask, so none can offer an invite
    another would refuse."""
    return Q(used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now)


def open_invites(*, team: Team, now: datetime) -> list[TeamInvite]:
    return list(
        TeamInvite.objects.filter(open_invite_filter(now), team=team).order_by("-created_at")
    )


def invite_team(*, digest: str, now: datetime) -> Team | None:
    """The team an open invite (by its digest) is for, or ``None``."""
    invite = (
        TeamInvite.objects.filter(open_invite_filter(now), digest=digest)
        .select_related("team")
        .first()
    )
    return None if invite is None else invite.team


def team_audit(*, team: Team, limit: int = 20, tz: str = "UTC") -> list[AuditRow]:
    """The team's latest changes, newest first (``AuditEntry.team``)."""
    zone = zoneinfo.ZoneInfo(tz)
    entries = AuditEntry.objects.filter(team=team).order_by("-created_at", "-id")[:limit]
    return [audit_row(entry, zone) for entry in entries]


def live_team_tokens(*, team: Team) -> list[Any]:
    return list(team.tokens.filter(revoked_at__isnull=True).order_by("-created_at"))
