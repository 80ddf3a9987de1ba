"""The decision ledger's part of the OpenAPI document (``api/openapi.py``
adds it; both build on ``openapi_parts``): its schemas from the models its parsers and answers use
(``schema.decisions``), and its three operations."""

from __future__ import annotations

from typing import Any

from curfew_core.api import openapi_parts as parts
from curfew_core.engine import Action
from curfew_core.schedules.override_commands import INSTANT_PATTERN
from curfew_core.schedules.values import TEXT_PATTERN
from curfew_core.schema.decisions import (
    MAX_BATCH,
    DecisionBatch,
    DecisionPageAnswer,
    ReportAnswer,
    SavingsAnswer,
)
from curfew_core.schema.verdict_request import MAX_SCOPE_TEXT
from curfew_core.selectors.ledger import DEFAULT_PER_PAGE, MAX_PAGE, MAX_PER_PAGE


def ledger_schemas() -> dict[str, dict[str, Any]]:
    return parts.model_schemas(DecisionBatch, DecisionPageAnswer, ReportAnswer, SavingsAnswer)


_INSTANT = {"type": "string", "maxLength": 64, "pattern": INSTANT_PATTERN, "format": "date-time"}
_RANGE = [
    parts.query_parameter(
        "from", _INSTANT, "from this instant (inclusive), RFC 3339 with its offset"
    ),
    parts.query_parameter("to", _INSTANT, "until this instant (exclusive); must be after from"),
]


def ledger_paths() -> dict[str, Any]:
    return {
        "/decisions": {
            "get": {
                "summary": "The decisions the curfew acted on, newest first (raw rows are "
                "kept for the retention, 30 days by default)",
                "parameters": [
                    *_RANGE,
                    parts.query_parameter(
                        "session_id",
                        {"type": "string", "maxLength": MAX_SCOPE_TEXT, "pattern": TEXT_PATTERN},
                        "only this session's",
                    ),
                    parts.query_parameter(
                        "action",
                        {"enum": [action.value for action in Action]},
                        "only this action's",
                    ),
                    parts.whole_parameter("page", MAX_PAGE, "1"),
                    parts.whole_parameter(
                        "per_page", MAX_PER_PAGE, f"{DEFAULT_PER_PAGE} by default"
                    ),
                ],
                "responses": {
                    "200": parts.answer("a page", parts.ref("DecisionPage")),
                    **parts.errors(400, 401, 422, 429, 503),
                },
            },
            "post": {
                "summary": f"A gateway reports up to {MAX_BATCH} decisions it made from its "
                "cached verdict; each id is stored once, so a retried report is no double",
                "requestBody": {
                    "required": True,
                    "content": parts.json_body(parts.ref("DecisionBatch")),
                },
                "responses": {
                    "200": parts.answer("stored", parts.ref("DecisionReportAnswer")),
                    **parts.errors(*parts.WITH_BODY, 422),
                },
            },
        },
        "/savings": {
            "get": {
                "summary": "What the curfew saved in a range of whole hours (the last 30 "
                "days by default): requests not sent, tokens not generated, money",
                "parameters": list(_RANGE),
                "responses": {
                    "200": parts.answer("savings", parts.ref("Savings")),
                    **parts.errors(400, 401, 422, 429, 503),
                },
            }
        },
    }
