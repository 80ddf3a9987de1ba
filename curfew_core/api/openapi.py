"""The OpenAPI 3.1 document for the JSON API, served at ``/api/v1/openapi.json``.

Written next to the views it describes; the ``Settings`` schema is generated
from the settings declaration (``curfew_core.schema.settings``), whose parsers
are the validators, and every other shape, length, count and range is taken
from the validation layer's own declarations (override_commands), so the two
cannot drift. Tests check that it is a valid
OpenAPI document, that every route and setting appears in it, that the
validators accept exactly what it admits (400 for the rest; 422 for rules a
schema cannot state), and schemathesis fuzzes the API against it.
"""

from __future__ import annotations

from typing import Any

from curfew_core import config as schedule_config
from curfew_core import override_commands
from curfew_core.engine import Action, State
from curfew_core.schema.settings import Declaration, ScheduleSettings, json_schemas_of

c = schedule_config  # short: the declarations below read it on every line

_STATES = [s.value for s in State]
_INSTANT = {"type": "string", "format": "date-time"}
#: An instant as requests send it: RFC 3339 with its offset, nothing looser.
_INSTANT_IN = {
    "type": "string",
    "format": "date-time",
    "pattern": override_commands.INSTANT_PATTERN,
    "maxLength": 64,
    "examples": ["2026-09-29T23:30:00+08:00"],
}


def _text_id() -> dict[str, Any]:
    """A session id or purpose in a verdict request ("" is the same as null)."""
    return {"type": "string", "maxLength": c.MAX_SESSION_ID, "pattern": c.TEXT_PATTERN}


def _one(key: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key],
        "properties": {key: schema},
        "additionalProperties": False,
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

_ERROR = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string"},
        "message": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}

_VERDICT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "state": {"enum": _STATES},
        "schedule_state": {"enum": _STATES},
        "action": {"enum": [a.value for a in Action]},
        "reply": {"type": ["string", "null"]},
        "stream": {"type": ["array", "null"], "items": {"type": "object"}},
        "max_tokens": {"type": ["integer", "null"]},
        "persona": {"type": ["string", "null"]},
        "tools": {"enum": ["allow", "deny"]},
        "reasoning_effort": {"type": ["string", "null"]},
        "progress": {"type": ["number", "null"]},
        "peak": {"type": "boolean"},
        "reason": {"type": "string"},
        "exempt": {"type": "boolean"},
        "dry_run": {"type": "boolean"},
        "valid_until": _INSTANT,
        "max_age": {"type": "integer", "description": "seconds a gateway may cache this"},
        "at": _INSTANT,
        "budget": {"type": ["integer", "null"]},
        "override": {"enum": ["overtime", "off", None]},
        "override_until": {"type": ["string", "null"], "format": "date-time"},
        "debug_at": {"type": ["string", "null"], "format": "date-time"},
        "would": {"type": ["object", "null"]},
    },
}
# Every field is always present (null when it does not apply): a gateway or a
# ledger may read any of them without checking.
_VERDICT["required"] = list(_VERDICT["properties"])

_STATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "state": {"enum": _STATES},
        "schedule_state": {"enum": _STATES},
        "reason": {"type": "string"},
        "progress": {"type": ["number", "null"]},
        "budget": {"type": ["integer", "null"]},
        "reply": {"type": ["string", "null"]},
        "peak": {"type": "boolean"},
        "override": {"enum": ["overtime", "off", None]},
        "override_until": {"type": ["string", "null"], "format": "date-time"},
        "overtime_left": {"type": ["integer", "null"], "description": "seconds"},
        "forced": {"type": "boolean"},
        "debug_at": {"type": ["string", "null"], "format": "date-time"},
        "at": _INSTANT,
        "valid_until": _INSTANT,
        "timezone": {"type": "string"},
        "enabled": {"type": "boolean"},
        "dry_run": {"type": "boolean"},
        "day": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "start": {"type": "string"},
                    "end": {"type": "string"},
                    "state": {"enum": _STATES},
                    "peak": {"type": "boolean"},
                },
                "required": ["start", "end", "state", "peak"],
            },
        },
    },
}
_STATE["required"] = list(_STATE["properties"])


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
            "content": _json({"$ref": "#/components/schemas/Error"}),
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

_VERDICT_REQUEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "session_id": {"anyOf": [_text_id(), {"type": "null"}]},
        "purpose": {"anyOf": [_text_id(), {"type": "null"}]},
        "subagent": {"type": ["boolean", "null"]},
        "max_tokens": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        "at": {
            "anyOf": [_INSTANT_IN, {"type": "null"}],
            "description": "what-if instant; years 1900-8999 (others: 422)",
        },
    },
}

_OVERRIDE_REQUEST = {
    "oneOf": [
        _one(
            "overtime",
            {
                "anyOf": [
                    {"type": "string", "pattern": override_commands.DURATION_PATTERN},
                    {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": override_commands.MAX_OVERTIME_MINUTES,
                    },
                ],
                "description": "30m, 2h, 1h30m, 90s or minutes; at most 24 h (else 422)",
                "examples": ["30m"],
            },
        ),
        _one("off", {"const": True}),
        _one("auto", {"const": True}),
        _one(
            "debug",
            {
                "type": "string",
                "pattern": override_commands.DEBUG_PATTERN,
                "description": "HH:MM, YYYY-MM-DD HH:MM or clear; a date that does not "
                "exist or a moment outside 1900-8999 is refused with 422",
                "examples": ["01:30", "clear"],
            },
        ),
    ]
}


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
                "Error": _ERROR,
                "Verdict": _VERDICT,
                "State": _STATE,
                "Settings": {
                    "type": "object",
                    "properties": _SETTINGS,
                    "additionalProperties": False,
                },
            },
        },
        "paths": {
            "/verdict": {
                "post": {
                    "summary": "The verdict for the model call a gateway is about to make",
                    "requestBody": {"required": False, "content": _json(_VERDICT_REQUEST)},
                    "responses": {
                        "200": {"description": "the verdict", "content": _json(_VERDICT)},
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
                    "requestBody": {"required": True, "content": _json(_OVERRIDE_REQUEST)},
                    "responses": {
                        "200": {"description": "the state after", "content": _json(_STATE)},
                        **_errors(*_WITH_BODY, 422),
                    },
                }
            },
            "/state": {
                "get": {
                    "summary": "What a status display needs",
                    "responses": {
                        "200": {"description": "state", "content": _json(_STATE)},
                        **_errors(*_AUTHED),
                    },
                }
            },
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
        "required": [*schedule_config.FIELDS, "version"],
    }
