"""The OpenAPI 3.1 document for the JSON API, served at ``/api/v1/openapi.json``.

Written by hand next to the views it describes; a test checks that it is a
valid OpenAPI document and that every route and setting appears in it.
"""

from __future__ import annotations

from typing import Any

from curfew_core import config as schedule_config
from curfew_core.engine import Action, State

_TIME = {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$", "examples": ["23:00"]}
_STATES = [s.value for s in State]
_INSTANT = {"type": "string", "format": "date-time"}

_SETTINGS: dict[str, Any] = {
    "enabled": {"type": "boolean", "description": "false stands the whole curfew down"},
    "timezone": {"type": "string", "description": "IANA zone", "examples": ["Asia/Shanghai"]},
    "wake_up": _TIME,
    "curfew_start": _TIME,
    "lights_out": _TIME,
    "weekdays": {
        "type": "object",
        "description": "per-weekday night times; a night belongs to the evening it starts on",
        "propertyNames": {"enum": list(schedule_config.WEEKDAYS)},
        "additionalProperties": {
            "type": "object",
            "properties": {key: _TIME for key in schedule_config.NIGHT_KEYS},
            "additionalProperties": False,
        },
    },
    "anchors": {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "array",
            "prefixItems": [_TIME, {"type": "integer", "minimum": 1}],
            "minItems": 2,
            "maxItems": 2,
        },
        "examples": [schedule_config.DEFAULTS["anchors"]],
    },
    "curve": {"enum": ["linear", "step", "ease_in"]},
    "peak_shift": {"type": "boolean"},
    "peak_windows": {
        "type": "array",
        "items": {"type": "array", "prefixItems": [_TIME, _TIME], "minItems": 2, "maxItems": 2},
    },
    "weekend_valley": {"type": "boolean"},
    "holiday_calendar": {
        "type": ["string", "null"],
        "description": "a calendar of the holidays package, e.g. CN or US-CA; null for none",
    },
    "extra_holidays": {"type": "array", "items": {"type": "string", "format": "date"}},
    "extra_workdays": {
        "type": "array",
        "items": {"type": "string", "format": "date"},
        "description": "dates worked although a weekend or holiday; yours win over the "
        "calendar's make-up workdays and holidays, and none may be in extra_holidays",
    },
    "off_duty_reply": {"type": "string", "minLength": 1},
    "lights_out_reply": {"type": "string", "minLength": 1},
    "tired_persona": {"type": "string"},
    "tier_texts": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "deny_tools_when_off_duty": {"type": "boolean"},
    "apply_to_subagents": {"type": "boolean"},
    "winding_reasoning_effort": {"enum": [*schedule_config.REASONING_EFFORTS, None]},
    "dry_run": {"type": "boolean"},
    "safety_max_tokens": {
        "type": ["integer", "null"],
        "minimum": schedule_config.MIN_SAFETY_MAX_TOKENS,
        "description": "off by default; a tiny cap fails reasoning models",
    },
    "exempt_sessions": {"type": "array", "items": {"type": "string"}},
}

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
        "max_tokens": {"type": ["integer", "null"]},
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


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "bad input; nothing changed",
        401: "missing or wrong token",
        409: "stale version; nothing changed",
        429: "too many failed token checks from this address, or over the token's rate; "
        "retry after Retry-After seconds",
    }
    if 401 in codes:  # every token door is throttled (curfew_core/throttle.py)
        codes = (*codes, 429)
    return {str(code): {"description": text[code], "content": _json(_ERROR)} for code in codes}


def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Curfew API",
            "version": "1",
            "description": "Ask before each model call what the curfew says; manage the schedule.",
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
                    "requestBody": {
                        "required": False,
                        "content": _json(
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "session_id": {"type": ["string", "null"]},
                                    "purpose": {"type": ["string", "null"]},
                                    "subagent": {"type": ["boolean", "null"]},
                                    "max_tokens": {"type": ["integer", "null"], "minimum": 1},
                                    "at": {**_INSTANT, "description": "what-if instant"},
                                },
                            }
                        ),
                    },
                    "responses": {
                        "200": {"description": "the verdict", "content": _json(_VERDICT)},
                        **_errors(400, 401),
                    },
                }
            },
            "/schedule": {
                "get": {
                    "summary": "Every setting, with the version to send back on PATCH",
                    "responses": {
                        "200": {"description": "settings", "content": _json(_settings_out())},
                        **_errors(401),
                    },
                },
                "patch": {
                    "summary": "Change some settings; a stale version gets 409",
                    "requestBody": {"required": True, "content": _json(_settings_in())},
                    "responses": {
                        "200": {"description": "saved", "content": _json(_settings_out())},
                        **_errors(400, 401, 409),
                    },
                },
            },
            "/overrides": {
                "post": {
                    "summary": "overtime / off / auto / debug",
                    "requestBody": {
                        "required": True,
                        "content": _json(
                            {
                                "oneOf": [
                                    _one("overtime", {"type": "string", "examples": ["30m"]}),
                                    _one("off", {"const": True}),
                                    _one("auto", {"const": True}),
                                    _one(
                                        "debug", {"type": "string", "examples": ["01:30", "clear"]}
                                    ),
                                ]
                            }
                        ),
                    },
                    "responses": {
                        "200": {"description": "the state after", "content": _json(_STATE)},
                        **_errors(400, 401),
                    },
                }
            },
            "/state": {
                "get": {
                    "summary": "What a status display needs",
                    "responses": {
                        "200": {"description": "state", "content": _json(_STATE)},
                        **_errors(401),
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
        },
    }


def _one(key: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key],
        "properties": {key: schema},
        "additionalProperties": False,
    }


def _settings_in() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**_SETTINGS, "version": {"type": "integer"}},
        "additionalProperties": False,
    }


def _settings_out() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**_SETTINGS, "version": {"type": "integer"}},
        "required": [*schedule_config.FIELDS, "version"],
    }
