"""The team API (issue 26): ``GET/PATCH /api/v1/team/schedule``,
``GET /api/v1/team/members`` and ``POST /api/v1/team/overtime`` (release night).

Asked with a member's own API token (their team; admins may change it,
members read it) or with the team key (read only: a team key asks on
behalf of members, it changes no schedule). A token of someone in no team
gets a 404 saying so; never another team's data. A team key is taken as
itself here (``Route.team_key``): the key reads, it names no member. Each is
a sync handler, run on the edge's threads (``api.views``).
"""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpResponse, JsonResponse
from django.utils import timezone

from curfew_core.api.errors import ApiError, config_refused, invalid, json_object
from curfew_core.api.views import popped_version, query_of, whole_param
from curfew_core.edge.request import EdgeRequest
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.values import show, whole_number
from curfew_core.selectors import teams as team_reads
from curfew_core.selectors.teams import Team
from curfew_core.selectors.tokens import TokenIdentity, TokenKind
from curfew_core.selectors.users import user_by_id
from curfew_core.services.teams import (
    MAX_OVERTIME_MINUTES,
    POLICY_FIELDS,
    TeamError,
    policy_changes,
    team_overtime_set,
    team_schedule_update,
)

_QUERY = ("page", "per_page", "role")


def _team_of(identity: TokenIdentity) -> tuple[Team, bool]:
    """The caller's team, and whether the caller may change it."""
    if identity.kind == TokenKind.TEAM:
        team = team_reads.team_by_id(identity.team_id) if identity.team_id else None
        if team is None:
            raise ApiError(404, "not_found", "this team key's team no longer exists")
        return team, False
    membership = team_reads.membership_of(user_id=identity.user_id)
    if membership is None:
        raise ApiError(404, "not_found", "you are in no team; an admin of one can add you")
    team = team_reads.team_by_id(membership.team_id)
    assert team is not None
    return team, membership.is_admin


def schedule(request: EdgeRequest) -> HttpResponse:
    return _schedule(request, request.the_caller().identity)


def _schedule(request: EdgeRequest, identity: TokenIdentity) -> HttpResponse:
    team, may_change = _team_of(identity)
    if request.method == "PATCH":
        if not may_change:
            raise ApiError(
                403,
                "forbidden",
                "only an admin of the team can change its schedule"
                if identity.kind != TokenKind.TEAM
                else "a team key reads the team's schedule; an admin's own token changes it",
            )
        changes = json_object(request)
        version = popped_version(changes)
        # Malformed is 400 whatever the version (as a person's schedule):
        # each value is checked on its own first; the stale check follows.
        try:
            policy_changes(changes)
        except TeamError as exc:
            raise invalid({exc.field or "body": str(exc)}) from None
        try:
            schedule_config.apply_changes(
                {}, {k: v for k, v in changes.items() if k not in POLICY_FIELDS}
            )
        except schedule_config.ConfigError as exc:
            if not exc.well_formed:
                raise invalid(exc.errors) from None
        try:
            team_schedule_update(
                team=team,
                changes=changes,
                expected_version=version,
                actor=user_by_id(identity.user_id),
                channel="api",
            )
        except schedule_config.ConfigError as exc:
            raise config_refused(exc) from None
        except TeamError as exc:
            if exc.code == "stale_version":
                raise ApiError(409, "stale_version", str(exc), {"version": str(exc)}) from None
            if exc.code == "not_team_admin":
                raise ApiError(403, "forbidden", str(exc)) from None
            raise invalid({exc.field or "body": str(exc)}) from None
    body = {"team": team.name, **schedule_config.shown(team_reads.team_schedule(team))}
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


def overtime(request: EdgeRequest) -> HttpResponse:
    return _overtime(request, request.the_caller().identity)


def _overtime(request: EdgeRequest, identity: TokenIdentity) -> HttpResponse:
    """Release night: ``{"minutes": N}`` lifts the team's schedule for every
    member for N minutes (each member's own still holds); ``{"end": true}``
    ends it. An admin's own token only, audited by the service as the page's
    button and ``manage.py curfew team overtime`` are."""
    team, may_change = _team_of(identity)
    if not may_change:
        raise ApiError(
            403,
            "forbidden",
            "only an admin of the team can release its night"
            if identity.kind != TokenKind.TEAM
            else "a team key asks for members; an admin's own token releases the night",
        )
    body = json_object(request)
    errors: dict[str, str] = {}
    for key in body:
        if key not in ("minutes", "end"):
            errors[key[:64] or "body"] = "is not a field here; send minutes or end"
    minutes, end = body.get("minutes"), body.get("end")
    if ("minutes" in body) == ("end" in body):
        errors.setdefault("body", 'send one of {"minutes": N} and {"end": true}')
    elif "end" in body and end is not True:
        errors["end"] = f"must be true to end the team's overtime, not {show(end)}"
    elif "minutes" in body and not 1 <= (whole_number(minutes) or 0) <= MAX_OVERTIME_MINUTES:
        # ``whole_number``: 30.0 is a JSON Schema integer too (schemathesis sent 1119.0).
        errors["minutes"] = (
            f"must be a whole number from 1 to {MAX_OVERTIME_MINUTES}, not {show(minutes)}"
        )
    if errors:
        raise invalid(errors)
    try:
        saved = team_overtime_set(
            team=team,
            now=timezone.now(),
            duration=None if end else timedelta(minutes=whole_number(minutes) or 0),
            actor=user_by_id(identity.user_id),
            channel="api",
        )
    except TeamError as exc:
        if exc.code == "not_team_admin":
            raise ApiError(403, "forbidden", str(exc)) from None
        raise invalid({exc.field or "body": str(exc)}) from None
    until = saved.overtime_until
    return JsonResponse(
        {"team": saved.name, "overtime_until": until.isoformat() if until else None},
        json_dumps_params={"ensure_ascii": False},
    )


def members(request: EdgeRequest) -> HttpResponse:
    return _members(request, request.the_caller().identity)


def _members(request: EdgeRequest, identity: TokenIdentity) -> HttpResponse:
    team, is_admin = _team_of(identity)
    if identity.kind != TokenKind.TEAM and not is_admin:
        # As the Team page: the members' states are for its admins (and the
        # team's own key), not for every member (issue 41, finding 7).
        raise ApiError(
            403,
            "forbidden",
            "only an admin of the team (or the team key) lists its members; "
            "your own state is at /api/v1/state",
        )
    query = query_of(request)
    errors: dict[str, str] = {}
    for key in query:
        if key not in _QUERY:
            errors[key[:64] or "query"] = f"is not a query parameter here; use {', '.join(_QUERY)}"
    page = whole_param(query, "page", 1, team_reads.MAX_PAGE, errors)
    per_page = whole_param(
        query, "per_page", team_reads.DEFAULT_PER_PAGE, team_reads.MAX_PER_PAGE, errors
    )
    role = query.get("role")
    if role is not None and role not in ("admin", "member"):
        errors["role"] = f"must be admin or member, not {show(role[:40])}"
    if errors:
        raise invalid(errors)
    found = team_reads.members_page(
        team=team, now=timezone.now(), page=page, per_page=per_page, role=role
    )
    return JsonResponse(
        {
            "team": team.name,
            "members": [row.as_json() for row in found.rows],
            "page": found.page,
            "per_page": found.per_page,
            "total": found.total,
            "next_page": found.next_page,
        },
        json_dumps_params={"ensure_ascii": False},
    )
