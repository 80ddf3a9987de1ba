"""The team API's part of the OpenAPI document (issue 26)."""

from __future__ import annotations

from typing import Any, get_args

from curfew_core.api.openapi_parts import (
    AUTHED,
    WITH_BODY,
    answer,
    errors,
    json_body,
    query_parameter,
    ref,
    whole_parameter,
)
from curfew_core.engine.effective import Side
from curfew_core.engine.verdict import State
from curfew_core.selectors.teams import DEFAULT_PER_PAGE, MAX_PAGE, MAX_PER_PAGE
from curfew_core.services.teams import MAX_MEMBER_OVERTIME_MINUTES, MAX_OVERTIME_MINUTES

#: The engine's states, from their one declaration (``engine.verdict.State``).
_STATE = {"type": "string", "enum": [state.value for state in State]}
#: Whose rule: the engine's ``engine.effective.Side``.
_SIDE = {"type": "string", "enum": list(get_args(Side))}
_POLICY = {
    "members_may_exempt": {
        "type": "boolean",
        "description": "whether a member's own exempt sessions and purposes count "
        "(an exemption counts only if both the member's and the team's allow it)",
    },
    "member_overtime_minutes": {
        "type": "integer",
        "minimum": 0,
        "maximum": MAX_MEMBER_OVERTIME_MINUTES,
        "description": "how long a member's own overtime may lift the team's night; 0: never",
    },
}


def team_schemas() -> dict[str, dict[str, Any]]:
    return {
        "TeamMember": {
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "role": {"type": "string", "enum": ["admin", "member"]},
                "joined_at": {"type": "string", "format": "date-time"},
                "state": _STATE,
                "reason": {"type": "string"},
                "next_change": {
                    "type": ["object", "null"],
                    "description": "the member's next change of state, as the engine's plan "
                    "says it (null: none within 30 h); side: whose rules make the state it "
                    "changes to; held_by: whose rule makes it change then (team: the team's "
                    "rule alone held the state before it)",
                    "properties": {
                        "at": {"type": "string", "format": "date-time"},
                        "state": _STATE,
                        "side": _SIDE,
                        "held_by": _SIDE,
                    },
                    "required": ["at", "state", "side", "held_by"],
                },
            },
            "required": ["user", "role", "joined_at", "state", "reason", "next_change"],
        },
        "TeamMembers": {
            "type": "object",
            "properties": {
                "team": {"type": "string"},
                "members": {"type": "array", "items": ref("TeamMember")},
                "page": {"type": "integer", "minimum": 1},
                "per_page": {"type": "integer", "minimum": 1, "maximum": 200},
                "total": {"type": "integer", "minimum": 0},
                "next_page": {"type": ["integer", "null"]},
            },
            "required": ["team", "members", "page", "per_page", "total", "next_page"],
        },
    }


def team_paths(
    settings_in: dict[str, Any], settings_out: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """``/team/schedule``, ``/team/overtime`` and ``/team/members``; ``settings_*`` are the
    person's schedule shapes, which the team's extends with its policy."""
    schedule_in = {**settings_in, "properties": {**settings_in["properties"], **_POLICY}}
    schedule_out = {
        **settings_out,
        "properties": {
            **settings_out["properties"],
            **_POLICY,
            "team": {"type": "string"},
            "overtime_until": {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "the whole team's overtime (release night), if on",
            },
        },
        "required": [*settings_out["required"], "team", *_POLICY, "overtime_until"],
    }
    return {
        "/team/schedule": {
            "get": {
                "summary": "The team's schedule and policy (a member's token or the team key)",
                "responses": {
                    "200": answer("settings", schedule_out),
                    **errors(*AUTHED, 404),
                },
            },
            "patch": {
                "summary": "Change the team's schedule or policy: admins only (members: 403)",
                "description": "Every member's verdict is the harsher of this schedule and "
                "their own. The team key reads it and never changes it (403).",
                "requestBody": {"required": True, "content": json_body(schedule_in)},
                "responses": {
                    "200": answer("saved", schedule_out),
                    **errors(*WITH_BODY, 403, 404, 409, 422),
                },
            },
        },
        "/team/overtime": {
            "post": {
                "summary": "Release night: lift the team's schedule for every member, or end it "
                "(admins only)",
                "description": "Each member's own schedule still holds. Audited. A member's "
                "token and the team key get 403.",
                "requestBody": {
                    "required": True,
                    "content": json_body(
                        {
                            "oneOf": [
                                {
                                    "type": "object",
                                    "properties": {
                                        "minutes": {
                                            "type": "integer",
                                            "minimum": 1,
                                            "maximum": MAX_OVERTIME_MINUTES,
                                        }
                                    },
                                    "required": ["minutes"],
                                    "additionalProperties": False,
                                },
                                {
                                    "type": "object",
                                    "properties": {"end": {"const": True}},
                                    "required": ["end"],
                                    "additionalProperties": False,
                                },
                            ]
                        }
                    ),
                },
                "responses": {
                    "200": {
                        "description": "the team's overtime as saved",
                        "content": json_body(
                            {
                                "type": "object",
                                "properties": {
                                    "team": {"type": "string"},
                                    "overtime_until": {
                                        "type": ["string", "null"],
                                        "format": "date-time",
                                    },
                                },
                                "required": ["team", "overtime_until"],
                            }
                        ),
                    },
                    **errors(*WITH_BODY, 403, 404, 422),
                },
            }
        },
        "/team/members": {
            "get": {
                "summary": "The team's members, each with their state now and next change (paged)",
                "description": "For the team's admins (their own token) and the team key; "
                "a plain member gets a 403.",
                "parameters": [
                    whole_parameter("page", MAX_PAGE, "the page, from 1"),
                    whole_parameter(
                        "per_page", MAX_PER_PAGE, f"members a page (default {DEFAULT_PER_PAGE})"
                    ),
                    query_parameter("role", {"type": "string", "enum": ["admin", "member"]}),
                ],
                "responses": {
                    "200": answer("a page of members", ref("TeamMembers")),
                    **errors(*AUTHED, 400, 403, 404),
                },
            }
        },
    }
