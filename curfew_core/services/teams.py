"""Teams (issue 26): members and roles, invites, the team's schedule and its
whole-team overtime, team keys.

Every service is keyword-only, atomic and audited in the change's own
transaction (``AuditEntry.Subject.TEAM``, the entry's ``team`` set); the
caches are refreshed and the change published only after the commit. A bad
argument raises :class:`TeamError` naming what is wrong, and changes nothing.

An ``actor`` (a person acting through a page or the API) must be an admin of
the team for every change but accepting an invite; ``None`` is the system
(a terminal command), which may do anything.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import translation

from curfew_core.engine.overrides import MAX_OVERTIME
from curfew_core.models import (
    UNSAVED_VERSION,
    ApiToken,
    AuditEntry,
    Team,
    TeamInvite,
    TeamMembership,
)
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.account import preferred_language
from curfew_core.selectors.bundles import refresh_team
from curfew_core.selectors.spoken import preset_key, why_replies
from curfew_core.selectors.teams import forget_member_name, is_admin, open_invite_filter
from curfew_core.services import events
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record, changed_fields, moment
from curfew_core.services.tokens import audited, token_mint

log = logging.getLogger("curfew.teams")

Role = TeamMembership.Role
ROLES = tuple(Role.values)
#: The longest release night (a team's overtime), in the whole minutes the
#: API takes and its document states.
MAX_OVERTIME_MINUTES = int(MAX_OVERTIME.total_seconds() // 60)
#: The longest a team may let a member's own overtime lift its night.
MAX_MEMBER_OVERTIME_MINUTES = MAX_OVERTIME_MINUTES
#: An invite link works once, within this long.
INVITE_LIFETIME = timedelta(days=7)
#: The policy settings of a team, beside its schedule's declared settings.
POLICY_FIELDS = ("members_may_exempt", "member_overtime_minutes")
TEAM_NAME_MAX = 100


class TeamError(ValueError):
    """A team change that cannot be made; the message says why. ``code`` is
    a stable word for the API (``already_in_team``, ``last_admin``, ...);
    ``field`` the request field at fault, when there is one."""

    def __init__(self, message: str, *, code: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


class NotTeamAdmin(TeamError):
    """The actor may read the team but not change it."""

    def __init__(self, team: Team) -> None:
        super().__init__(
            f"only an admin of team {team.name!r} can change it", code="not_team_admin"
        )


class StaleTeamVersion(TeamError):
    def __init__(self, *, expected: int, current: int) -> None:
        super().__init__(
            f"version {expected} is stale: the team schedule is at version {current}; "
            "reload it and apply your change again",
            code="stale_version",
            field="version",
        )
        self.expected = expected
        self.current = current


# -- helpers ---------------------------------------------------------------------------


def _audit(
    *,
    team: Team,
    user: User,
    actor: User | None,
    channel: str,
    action: str,
    changes: Mapping[str, Any],
) -> AuditEntry:
    return audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.TEAM,
        action=action,
        changes={"team": team.name, **changes},
        team=team,
    )


def _member_audit(
    team: Team,
    user: User,
    action: str,
    changes: Mapping[str, Any],
    *,
    actor: User | None,
    channel: str,
) -> None:
    """A change of ``user``'s membership: its entry (in ``user``'s name), and
    after the commit what ``_member_changed`` refreshes."""
    _audit(team=team, user=user, actor=actor, channel=channel, action=action, changes=changes)
    _member_changed(team.id, user)


def _team_audit(
    team: Team, action: str, changes: Mapping[str, Any], *, actor: User | None, channel: str
) -> None:
    """A change of the team itself: its entry in the name of ``actor``, or of
    the team's first admin when the system acts."""
    user = actor or _first_admin(team)
    _audit(team=team, user=user, actor=actor, channel=channel, action=action, changes=changes)


def _require_admin(team: Team, actor: User | None) -> None:
    if actor is None:
        return
    if not is_admin(team_id=team.pk, user_id=actor.pk):
        raise NotTeamAdmin(team)


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise TeamError(
            f"role must be one of {', '.join(ROLES)}, not {role!r}", code="invalid", field="role"
        )
    return role


def _refuse_second_team(user: User) -> None:
    current = TeamMembership.objects.filter(user=user).select_related("team").first()
    if current is not None:
        raise TeamError(
            f"{user.get_username()} is already in team {current.team.name!r}: a person "
            "belongs to at most one team; remove them from it first",
            code="already_in_team",
            field="user",
        )


def _member_changed(team_id: int, user: User) -> None:
    """After the commit: the member's rows (their team changed), their
    capsules, and the team key's memory of who is called what."""
    username = user.get_username()

    def forget_name() -> None:
        forget_member_name(team_id, username)

    transaction.on_commit(forget_name, robust=True)
    after_commit(user_id=user.pk)


def _team_changed(team_id: int) -> None:
    """After the commit: the team's rows, then every member's capsules (one group message)."""

    def steps() -> None:
        try:
            refresh_team(team_id)
        except Exception:  # the commit stands; the entry goes stale within the bound
            log.exception("after commit: could not refresh team %s", team_id)
        events.publish_team_changed(team_id)

    transaction.on_commit(steps, robust=True)


def _admins(team: Team) -> int:
    return TeamMembership.objects.filter(team=team, role=Role.ADMIN).count()


def _keep_last_admin(
    team: Team, user: User, membership: TeamMembership, consequence: str, *, field: str
) -> None:
    """A team keeps an admin: refuse to demote or remove its last one."""
    if membership.role == Role.ADMIN and _admins(team) <= 1:
        raise TeamError(
            f"{user.get_username()} is the last admin of team {team.name!r}{consequence}: "
            "make another member an admin first",
            code="last_admin",
            field=field,
        )


# -- teams and members -----------------------------------------------------------------


def seed_config(admin: User) -> dict[str, Any]:
    """A new team's schedule: the declared defaults with the replies that say
    why and the ready-made sleepy voice, in ``admin``'s language."""
    key = preset_key(preferred_language(admin) or translation.get_language() or "en")
    persona, tiers = schedule_config.PERSONA_PRESETS[key]
    return {
        **schedule_config.default_config(),
        **why_replies(key),
        "tired_persona": persona,
        "tier_texts": list(tiers),
    }


@transaction.atomic
def team_create(
    *, name: str, admin: User, actor: User | None = None, channel: str = AuditEntry.Channel.SYSTEM
) -> Team:
    """A new team named ``name`` with ``admin`` as its first admin. Its
    schedule starts as the declared defaults (version 0, unsaved) but for
    the replies and the sleepy voice: a new account's, the ones that say why
    (issue 39). Written in the admin's language, each member's gateway says
    them in the member's (``selectors.spoken``); the terse seed replies stay
    a choice (``team_schedule_update``)."""
    cleaned = name.strip()
    if not cleaned or len(cleaned) > TEAM_NAME_MAX:
        raise TeamError(
            f"a team name is 1 to {TEAM_NAME_MAX} characters, not {name!r}",
            code="invalid",
            field="name",
        )
    if Team.objects.filter(name=cleaned).exists():
        raise TeamError(f"a team called {cleaned!r} exists already", code="exists", field="name")
    _refuse_second_team(admin)
    try:
        with transaction.atomic():
            team = Team.objects.create(
                name=cleaned, config=seed_config(admin), version=UNSAVED_VERSION
            )
            TeamMembership.objects.create(team=team, user=admin, role=Role.ADMIN)
    except IntegrityError:
        raise TeamError(
            f"a team called {cleaned!r} exists already, or {admin.get_username()} joined one",
            code="exists",
        ) from None
    _member_audit(
        team, admin, "created", {"admin": admin.get_username()}, actor=actor, channel=channel
    )
    return team


@transaction.atomic
def member_add(
    *,
    team: Team,
    user: User,
    role: str = Role.MEMBER,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> TeamMembership:
    """Invite ``user`` by their username: they are a member at once (a person
    in another team is refused, with that team named)."""
    _check_role(role)
    _require_admin(team, actor)
    _refuse_second_team(user)
    try:
        with transaction.atomic():
            membership = TeamMembership.objects.create(team=team, user=user, role=role)
    except IntegrityError:
        raise TeamError(
            f"{user.get_username()} is already in a team", code="already_in_team", field="user"
        ) from None
    _member_audit(
        team,
        user,
        "member added",
        {"member": user.get_username(), "role": role},
        actor=actor,
        channel=channel,
    )
    return membership


def _membership(team: Team, user: User) -> TeamMembership:
    """``user``'s row in ``team``, locked, after the team's admins: so two admins
    demoting or removing each other at once cannot both see another admin left."""
    list(TeamMembership.objects.select_for_update().filter(team=team, role=Role.ADMIN))
    membership = TeamMembership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        raise TeamError(
            f"{user.get_username()} is not a member of team {team.name!r}",
            code="not_member",
            field="user",
        )
    return membership


@transaction.atomic
def member_role_change(
    *,
    team: Team,
    user: User,
    role: str,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> TeamMembership:
    """Make a member an admin or a member; the last admin stays one."""
    _check_role(role)
    _require_admin(team, actor)
    membership = _membership(team, user)
    if membership.role == role:
        return membership
    _keep_last_admin(team, user, membership, "", field="role")
    old = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    _member_audit(
        team,
        user,
        "role changed",
        {"member": user.get_username(), "old": old, "new": role},
        actor=actor,
        channel=channel,
    )
    return membership


@transaction.atomic
def member_remove(
    *,
    team: Team,
    user: User,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> None:
    """Remove a member (an admin, or a member leaving: ``actor`` is then
    ``user``). The last admin cannot leave."""
    if actor is not None and actor.pk != user.pk:
        _require_admin(team, actor)
    membership = _membership(team, user)
    _keep_last_admin(team, user, membership, " and cannot leave", field="user")
    membership.delete()
    _member_audit(
        team,
        user,
        "member removed",
        {"member": user.get_username(), "role": membership.role},
        actor=actor,
        channel=channel,
    )


# -- invite links ----------------------------------------------------------------------

INVITE_PREFIX = "cfi_"


def invite_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def invite_create(
    *,
    team: Team,
    now: datetime,
    role: str = Role.MEMBER,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> tuple[TeamInvite, str]:
    """A one-time invite: the invite and its raw code (shown once; only its
    digest is kept). Works for ``INVITE_LIFETIME``; the page offers it only
    while sign-up is on."""
    _check_role(role)
    _require_admin(team, actor)
    raw = INVITE_PREFIX + secrets.token_urlsafe(24)
    invite = TeamInvite.objects.create(
        team=team,
        digest=invite_digest(raw),
        prefix=raw[:10],
        role=role,
        created_by=actor,
        expires_at=now + INVITE_LIFETIME,
    )
    _team_audit(
        team,
        "invite created",
        {"invite": invite.prefix, "role": role, "expires_at": moment(invite.expires_at)},
        actor=actor,
        channel=channel,
    )
    return invite, raw


@transaction.atomic
def invite_revoke(
    *,
    team: Team,
    invite_id: int,
    now: datetime,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> None:
    _require_admin(team, actor)
    invite = TeamInvite.objects.select_for_update().filter(team=team, id=invite_id).first()
    if invite is None or invite.revoked_at is not None or invite.used_at is not None:
        raise TeamError("no such open invite", code="not_found", field="invite")
    invite.revoked_at = now
    invite.save(update_fields=["revoked_at"])
    _team_audit(team, "invite revoked", {"invite": invite.prefix}, actor=actor, channel=channel)


@transaction.atomic
def invite_accept(
    *, raw: str, user: User, now: datetime, channel: str = AuditEntry.Channel.PAGE
) -> TeamMembership:
    """``user`` joins the invite's team with its role; the invite is used up."""
    invite = (
        TeamInvite.objects.select_for_update()
        .select_related("team")
        .filter(open_invite_filter(now), digest=invite_digest(raw or ""))
        .first()
    )
    if invite is None:
        raise TeamError(
            "this invite link is not valid: it was used, revoked or has expired; ask an "
            "admin of the team for a new one",
            code="invalid_invite",
            field="invite",
        )
    _refuse_second_team(user)
    membership = TeamMembership.objects.create(team=invite.team, user=user, role=invite.role)
    invite.used_at = now
    invite.used_by = user
    invite.save(update_fields=["used_at", "used_by"])
    _member_audit(
        invite.team,
        user,
        "invite accepted",
        {"member": user.get_username(), "invite": invite.prefix, "role": invite.role},
        actor=user,
        channel=channel,
    )
    return membership


def _first_admin(team: Team) -> User:
    membership = (
        TeamMembership.objects.filter(team=team, role=Role.ADMIN)
        .select_related("user")
        .order_by("id")
        .first()
    )
    assert membership is not None, "a team always has an admin"
    user: User = membership.user
    return user


# -- the team's schedule and overtime --------------------------------------------------


def policy_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The team policy among ``changes``, checked (``TeamError`` naming the field)."""
    out: dict[str, Any] = {}
    if "members_may_exempt" in changes:
        value = changes["members_may_exempt"]
        if not isinstance(value, bool):
            raise TeamError(
                f"members_may_exempt must be true or false, not {value!r}",
                code="invalid",
                field="members_may_exempt",
            )
        out["members_may_exempt"] = value
    if "member_overtime_minutes" in changes:
        value = changes["member_overtime_minutes"]
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= MAX_MEMBER_OVERTIME_MINUTES
        ):
            raise TeamError(
                "member_overtime_minutes must be a whole number of minutes from 0 (a member's "
                f"overtime never lifts the team's night) to {MAX_MEMBER_OVERTIME_MINUTES}, "
                f"not {value!r}",
                code="invalid",
                field="member_overtime_minutes",
            )
        out["member_overtime_minutes"] = value
    return out


@transaction.atomic
def team_schedule_update(
    *,
    team: Team,
    changes: Mapping[str, Any],
    expected_version: int | None = None,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> Team:
    """Apply ``changes`` to the team's schedule (the declared settings, as a
    person's: ``ConfigError`` names every bad one) and policy
    (``POLICY_FIELDS``). Admins only; checked under a row lock against
    ``expected_version``; nothing is written on any error."""
    _require_admin(team, actor)
    locked = Team.objects.select_for_update().get(pk=team.pk)
    if expected_version is not None and expected_version != locked.version:
        raise StaleTeamVersion(expected=expected_version, current=locked.version)
    policy = policy_changes(changes)
    settings_changes = {k: v for k, v in changes.items() if k not in POLICY_FIELDS}
    new_config = schedule_config.apply_changes(locked.config, settings_changes)
    old_config = schedule_config.with_defaults(locked.config)
    fields = changed_fields(old_config, new_config, schedule_config.FIELDS)
    for key, value in policy.items():
        if getattr(locked, key) != value:
            fields[key] = {"old": getattr(locked, key), "new": value}
            setattr(locked, key, value)
    if not fields:
        return locked
    locked.config = new_config
    locked.version += 1
    locked.save()
    _team_audit(
        locked,
        "schedule saved",
        {"version": locked.version, "fields": fields},
        actor=actor,
        channel=channel,
    )
    _team_changed(locked.id)
    return locked


@transaction.atomic
def team_overtime_set(
    *,
    team: Team,
    now: datetime,
    duration: timedelta | None,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> Team:
    """ "Release night": lift the team's schedule for everyone for ``duration``
    (up to 24 h); ``None`` ends it. Each member's own schedule still holds."""
    _require_admin(team, actor)
    if duration is not None and not timedelta(0) < duration <= MAX_OVERTIME:
        raise TeamError(
            f"a team overtime lasts from a second to 24h, not {duration}",
            code="invalid",
            field="duration",
        )
    locked = Team.objects.select_for_update().get(pk=team.pk)
    old = locked.overtime_until
    locked.overtime_until = None if duration is None else now + duration
    locked.save(update_fields=["overtime_until", "updated_at"])
    _team_audit(
        locked,
        "overtime" if duration is not None else "overtime ended",
        {"old": moment(old), "overtime_until": moment(locked.overtime_until)},
        actor=actor,
        channel=channel,
    )
    _team_changed(locked.id)
    return locked


def member_overtime_taken(*, user: User, now: datetime) -> None:
    """Note when a team member took overtime (``services.overrides`` calls it
    inside its own transaction): a team that lets members' overtime lift its
    night counts the allowance from here. Nothing for a user in no team."""
    TeamMembership.objects.filter(user=user).update(overtime_from=now)


# -- team keys -------------------------------------------------------------------------


@transaction.atomic
def team_token_create(
    *,
    team: Team,
    name: str = "",
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> tuple[ApiToken, str]:
    """A new team key (``ApiToken.Kind.TEAM``) and its raw value, shown once:
    it asks on behalf of any member. Issued in the name of ``actor`` (or the
    team's first admin); only its digest is kept."""
    _require_admin(team, actor)
    owner = actor or _first_admin(team)
    token, raw = token_mint(
        user=owner, kind=ApiToken.Kind.TEAM, name=name or f"team {team.name}", team=team
    )
    _audit(
        team=team,
        user=owner,
        actor=actor,
        channel=channel,
        action="key created",
        changes=audited(token),
    )
    return token, raw
