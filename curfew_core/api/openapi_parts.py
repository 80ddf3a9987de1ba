"""The building blocks both halves of the OpenAPI document use: references,
model schemas, JSON bodies and the error answers (``openapi`` assembles the
document, ``ledger_openapi`` adds the ledger's part; neither imports the other
for these)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

COMPONENTS = "#/components/schemas/"


def ref(name: str) -> dict[str, Any]:
    return {"$ref": COMPONENTS + name}


def model_schemas(*models: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """Each model's JSON Schema by its title, and the models they nest, with
    references into the document's ``components.schemas``."""
    out: dict[str, dict[str, Any]] = {}
    for model in models:
        schema = model.model_json_schema(ref_template=COMPONENTS + "{model}")
        out.update(schema.pop("$defs", {}))
        out[schema["title"]] = schema
    return out


def json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A response: what it is, and its JSON body's schema."""
    return {"description": description, "content": json_body(schema)}


def query_parameter(
    name: str, schema: dict[str, Any], description: str | None = None
) -> dict[str, Any]:
    """A query parameter (none of the API's is required)."""
    parameter: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": schema}
    if description is not None:
        parameter["description"] = description
    return parameter


def whole_parameter(name: str, upper: int, description: str) -> dict[str, Any]:
    """A query parameter ``api.views.whole_param`` reads: a whole number from 1
    to ``upper`` (a page, a page's length)."""
    return query_parameter(name, {"type": "integer", "minimum": 1, "maximum": upper}, description)


RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before trying again",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}
ERROR_TEXT = {
    400: "malformed input (the schema refuses it); the fields say what; nothing changed",
    401: "missing, unknown or revoked token",
    403: "the token may read this but not change it (a team member, or the team key)",
    404: "not found: no team for this token, or a team key's name that is not a member",
    409: "stale version; the message names the current one; nothing changed",
    413: "the body is too large",
    422: "well-formed, but refused by a rule the schema cannot state; nothing changed",
    429: "too many requests; retry after the time given",
    503: "storage unavailable; retry after the time given",
}


def errors(*codes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code in codes:
        response = answer(ERROR_TEXT[code], ref("Error"))
        if code in (429, 503):
            response["headers"] = RETRY_AFTER
        if code == 401:
            response["headers"] = {
                "WWW-Authenticate": {"required": True, "schema": {"type": "string"}}
            }
        out[str(code)] = response
    return out


#: Every answer an operation behind a token can give besides its own.
AUTHED = (401, 429, 503)
#: And those with a JSON body.
WITH_BODY = (400, 401, 413, 429, 503)
