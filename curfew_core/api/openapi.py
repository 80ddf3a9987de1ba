"""The OpenAPI 3.1 document for the JSON API, served at ``/api/v1/openapi.json``.

Generated, not typed: every schema comes from the declaration its code uses.

- ``Settings``: the settings declaration (``curfew_core.schedules.declaration``),
  whose parsers are the validators;
- ``Verdict``, ``State`` and what they nest: the wire models
  (``curfew_client.wire``) the server answers through and the client parses with;
- ``VerdictRequest``, ``OverrideRequest`` and its verbs: the models next to
  their parsers (``schema.verdict_request``, ``override_commands``), which take
  their fields, patterns and bounds from the same constants;
- ``Error``: the API's one error shape (``schema.errors``).

The routes and their methods are the API door's in the door table
(``edge.doors``): each operation below is looked up by its route, one
written for a route the table does not serve (or a route without one) fails
the document, and a route that takes no token says so (``security: []``).
Only the words, status codes and headers are written here. Tests check that
it is a valid OpenAPI document, that every route and setting appears in it,
that the validators accept exactly what it admits (400 for the rest; 422 for
rules a schema cannot state), and schemathesis fuzzes the API against it.
"""

from __future__ import annotations

from typing import Any

from curfew_client.wire import openapi_schemas

from curfew_core.api import ledger_openapi, team_openapi
from curfew_core.api.openapi_parts import (
    AUTHED,
    COMPONENTS,
    WITH_BODY,
    answer,
    errors,
    json_body,
    model_schemas,
    query_parameter,
    ref,
)
from curfew_core.edge.declare import Door
from curfew_core.edge.doors import DOORS
from curfew_core.schedules import override_commands
from curfew_core.schedules.config import FIELDS
from curfew_core.schedules.declaration import Declaration, ScheduleSettings, json_schemas_of
from curfew_core.schema.errors import ErrorBody
from curfew_core.schema.verdict_request import VerdictRequestBody


def request_schemas() -> dict[str, dict[str, Any]]:
    """The request bodies and the error shape, from the models their parsers
    take their fields, patterns and bounds from."""
    overrides = override_commands.OVERRIDE_REQUESTS
    return {
        **model_schemas(ErrorBody, VerdictRequestBody, *overrides),
        # Exactly one override per request.
        "OverrideRequest": {"oneOf": [ref(model.__name__) for model in overrides]},
    }


def _loose_pairs(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings for answers: rows without ``prefixItems``.

    Schemathesis rewrites ``prefixItems`` into draft-4 array ``items`` and then
    validates answers with a 2020-12 validator, which refuses that form; an
    answer's rows are canonical anyway, so "two items of these shapes" is
    said instead of "this one first".
    """
    out = dict(settings)
    rows = [key for key, schema in out.items() if "prefixItems" in schema.get("items", {})]
    for key in rows:
        row = dict(out[key]["items"])
        places = row.pop("prefixItems")
        row["items"] = places[0] if places[0] == places[1] else {"anyOf": places}
        out[key] = {**out[key], "items": row}
    return out


def settings_schema(declaration: Declaration = ScheduleSettings) -> dict[str, Any]:
    """Each setting's schema, generated from the declaration (types, bounds,
    patterns, help text): the validators run the same declaration's parsers."""
    return dict(json_schemas_of(declaration))


_SETTINGS: dict[str, Any] = settings_schema()


_CHANGE_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["ready", "change", "end"]},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}


#: Where the document's paths are (its server).
PREFIX = "/api/v1"


def paths(door: Door | None = None) -> dict[str, dict[str, Any]]:
    """Each route of the API door and its methods, from the table, with the
    operation written for it (``_operations``)."""
    door = door or DOORS.door_for(f"{PREFIX}/")
    written = _operations()
    found: dict[str, dict[str, Any]] = {}
    for route in door.routes:
        path = route.path.removeprefix(PREFIX)
        for method in route.methods:
            operation = written.get(path, {}).pop(method.lower(), None)
            if operation is None:
                raise LookupError(f"no operation written for {method} {route.path}")
            if not route.token:
                operation = {**operation, "security": []}
            found.setdefault(path, {})[method.lower()] = operation
    unserved = [f"{method.upper()} {path}" for path, ops in written.items() for method in ops]
    if unserved:
        raise LookupError(f"operations written for routes the table does not serve: {unserved}")
    return found


def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Curfew API",
            "version": "1",
            "description": "Ask before each model call what the curfew says; manage the schedule. "
            "400 means the request breaks this document; 422 means it is well-formed but a "
            "rule no schema states refuses it (night times out of order, an anchor outside "
            "the window, an unknown zone or calendar, a moment out of range).",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                **openapi_schemas(COMPONENTS),
                **request_schemas(),
                "Settings": {
                    "type": "object",
                    "properties": _SETTINGS,
                    "additionalProperties": False,
                },
                **ledger_openapi.ledger_schemas(),
                **team_openapi.team_schemas(),
            },
        },
        "paths": paths(),
    }


def _with_body(
    summary: str,
    body: dict[str, Any],
    ok: dict[str, Any],
    *codes: int,
    required: bool = True,
    description: str | None = None,
) -> dict[str, Any]:
    """An operation that takes a JSON ``body``: answered ``ok`` (200), its own
    error ``codes``, and every answer a body may get (``WITH_BODY``)."""
    operation: dict[str, Any] = {"summary": summary}
    if description is not None:
        operation["description"] = description
    operation["requestBody"] = {"required": required, "content": json_body(body)}
    operation["responses"] = {"200": ok, **errors(*WITH_BODY, *codes)}
    return operation


def _operations() -> dict[str, dict[str, Any]]:
    """What each route does, by its path under ``PREFIX`` and method."""
    return {
        "/verdict": {
            "post": _with_body(
                "The verdict for the model call a gateway is about to make",
                ref("VerdictRequest"),
                answer("the verdict", ref("Verdict")),
                404,
                422,
                required=False,
            )
        },
        "/schedule": {
            "get": {
                "summary": "Every setting, with the version to send back on PATCH",
                "responses": {
                    "200": answer("settings", _settings_out()),
                    **errors(*AUTHED),
                },
            },
            "patch": _with_body(
                "Change some settings; a stale version gets 409",
                _settings_in(),
                answer("saved", _settings_out()),
                409,
                422,
                description=(
                    "Every problem of a save comes back at once, each under the setting it "
                    "is about in the error's fields (an anchors message names every bad "
                    "row: 'row 1: ...; row 3: ...'); nothing is saved unless all is well. "
                    "Moving curfew_start or lights_out without sending anchors (or sending "
                    "them unchanged) moves the curve with the night: each anchor keeps its "
                    "place as a fraction of the window, on the nearest whole minute. "
                    "Anchors sent changed are placed as sent and must lie in the new window."
                ),
            ),
        },
        "/overrides": {
            "post": _with_body(
                "overtime / off / auto / debug",
                ref("OverrideRequest"),
                answer("the state after", ref("State")),
                422,
            )
        },
        "/state": {
            "get": {
                "summary": "What a status display needs",
                "parameters": [
                    query_parameter(
                        "user",
                        {"type": "string", "minLength": 1, "maxLength": 150},
                        "with a team key: the member asked for (or the "
                        "X-Curfew-User header); a personal token's own person otherwise",
                    )
                ],
                "responses": {
                    "200": answer("state", ref("State")),
                    **errors(*AUTHED, 400, 404, 422),
                },
            }
        },
        "/changes": {
            "get": {
                "summary": "Push mode: a stream of this token's user's changes (SSE)",
                "description": "Server-sent events: `ready` once listening (data "
                '`{"heartbeat": seconds}`), `change` after every committed save or '
                "override, a `: heartbeat` comment when idle, and `end` (data "
                '`{"reason": ...}`) before the stream closes (token revoked, user '
                "deactivated, an outage). A gateway drops its cached verdicts on each "
                "`change` and on every (re)connect, and polls by `max_age` while the "
                "stream is down.",
                "responses": {
                    "200": {
                        "description": "the event stream",
                        # One event (as OpenAPI 3.2's ``itemSchema`` says of an
                        # event stream); heartbeats are comments, not events.
                        "content": {"text/event-stream": {"schema": _CHANGE_EVENT}},
                    },
                    **errors(*AUTHED),
                },
            }
        },
        **ledger_openapi.ledger_paths(),
        **team_openapi.team_paths(_settings_in(), _settings_out()),
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1",
                        "content": json_body({"type": "object", "required": ["openapi"]}),
                    }
                },
            }
        },
    }


_VERSION = {
    "type": "integer",
    "minimum": 0,
    "description": "as GET returned; omit to skip the check",
}


def _settings_in() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**_SETTINGS, "version": _VERSION},
        "additionalProperties": False,
    }


def _settings_out() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**_loose_pairs(_SETTINGS), "version": {"type": "integer", "minimum": 0}},
        "required": [*FIELDS, "version"],
    }
