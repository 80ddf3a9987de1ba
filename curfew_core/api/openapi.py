"""The OpenAPI 3.1 document for the JSON API, served at ``/api/v1/openapi.json``.

Generated, not typed: every schema comes from the declaration its code uses.

- ``Settings``: the settings declaration (``curfew_core.schema.settings``),
  whose parsers are the validators;
- ``Verdict``, ``State`` and what they nest: the wire models
  (``curfew_client.wire``) the server answers through and the client parses with;
- ``VerdictRequest``, ``OverrideRequest`` and its verbs: the models next to
  their parsers (``schema.verdict_request``, ``override_commands``), which take
  their fields, patterns and bounds from the same constants;
- ``Error``: the API's one error shape (``schema.errors``).

Only the routes, status codes and headers are written here. Tests check that
it is a valid OpenAPI document, that every route and setting appears in it,
that the validators accept exactly what it admits (400 for the rest; 422 for
rules a schema cannot state), and schemathesis fuzzes the API against it.
"""

from __future__ import annotations

from typing import Any

from curfew_client.wire import openapi_schemas
from pydantic import BaseModel

from curfew_core import override_commands
from curfew_core.schedule_config import FIELDS
from curfew_core.schema.errors import ErrorBody
from curfew_core.schema.settings import Declaration, ScheduleSettings, json_schemas_of
from curfew_core.schema.verdict_request import VerdictRequestBody

_COMPONENTS = "#/components/schemas/"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _COMPONENTS + name}


def _model_schemas(*models: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """Each model's JSON Schema by its title, and the models they nest, with
    references into the document's ``components.schemas``."""
    out: dict[str, dict[str, Any]] = {}
    for model in models:
        schema = model.model_json_schema(ref_template=_COMPONENTS + "{model}")
        out.update(schema.pop("$defs", {}))
        out[schema["title"]] = schema
    return out


def request_schemas() -> dict[str, dict[str, Any]]:
    """The request bodies and the error shape, from the models their parsers
    take their fields, patterns and bounds from."""
    overrides = override_commands.OVERRIDE_REQUESTS
    return {
        **_model_schemas(ErrorBody, VerdictRequestBody, *overrides),
        # Exactly one override per request.
        "OverrideRequest": {"oneOf": [_ref(model.__name__) for model in overrides]},
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


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before trying again",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}
_ERROR_TEXT = {
    400: "malformed input (the schema refuses it); the fields say what; nothing changed",
    401: "missing, unknown or revoked token",
    409: "stale version; the message names the current one; nothing changed",
    413: "the body is too large",
    422: "well-formed, but refused by a rule the schema cannot state; nothing changed",
    429: "too many requests; retry after the time given",
    503: "storage unavailable; retry after the time given",
}


def _errors(*codes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code in codes:
        response: dict[str, Any] = {
            "description": _ERROR_TEXT[code],
            "content": _json(_ref("Error")),
        }
        if code in (429, 503):
            response["headers"] = _RETRY_AFTER
        if code == 401:
            response["headers"] = {
                "WWW-Authenticate": {"required": True, "schema": {"type": "string"}}
            }
        out[str(code)] = response
    return out


#: Every answer an operation behind a token can give besides its own.
_AUTHED = (401, 429, 503)
#: And those with a JSON body.
_WITH_BODY = (400, 401, 413, 429, 503)


_CHANGE_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["ready", "change", "end"]},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}


def document() -> dict[str, Any]:
    from curfew_core.api import ledger_openapi  # it builds on this module

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
                **openapi_schemas(_COMPONENTS),
                **request_schemas(),
                "Settings": {
                    "type": "object",
                    "properties": _SETTINGS,
                    "additionalProperties": False,
                },
                **ledger_openapi.ledger_schemas(),
            },
        },
        "paths": {
            "/verdict": {
                "post": {
                    "summary": "The verdict for the model call a gateway is about to make",
                    "requestBody": {"required": False, "content": _json(_ref("VerdictRequest"))},
                    "responses": {
                        "200": {"description": "the verdict", "content": _json(_ref("Verdict"))},
                        **_errors(*_WITH_BODY, 422),
                    },
                }
            },
            "/schedule": {
                "get": {
                    "summary": "Every setting, with the version to send back on PATCH",
                    "responses": {
                        "200": {"description": "settings", "content": _json(_settings_out())},
                        **_errors(*_AUTHED),
                    },
                },
                "patch": {
                    "summary": "Change some settings; a stale version gets 409",
                    "requestBody": {"required": True, "content": _json(_settings_in())},
                    "responses": {
                        "200": {"description": "saved", "content": _json(_settings_out())},
                        **_errors(*_WITH_BODY, 409, 422),
                    },
                },
            },
            "/overrides": {
                "post": {
                    "summary": "overtime / off / auto / debug",
                    "requestBody": {"required": True, "content": _json(_ref("OverrideRequest"))},
                    "responses": {
                        "200": {"description": "the state after", "content": _json(_ref("State"))},
                        **_errors(*_WITH_BODY, 422),
                    },
                }
            },
            "/state": {
                "get": {
                    "summary": "What a status display needs",
                    "responses": {
                        "200": {"description": "state", "content": _json(_ref("State"))},
                        **_errors(*_AUTHED),
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
                        **_errors(*_AUTHED),
                    },
                }
            },
            **ledger_openapi.ledger_paths(),
            "/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "OpenAPI 3.1",
                            "content": _json({"type": "object", "required": ["openapi"]}),
                        }
                    },
                }
            },
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
