"""One error shape for the whole API: ``{"error", "message", "fields"}``,
declared in ``curfew_core.schema.errors``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.http import JsonResponse

from curfew_core.edge.request import EdgeRequest, Refused
from curfew_core.schedules.config import ConfigError
from curfew_core.schedules.values import show
from curfew_core.schema.errors import api_error_body

#: No API body nests deeper than a schedule's anchors (object, list, row);
#: anything much deeper is refused before a validator walks or quotes it.
MAX_JSON_DEPTH = 16


class ApiError(Refused):
    """A refusal in the API's shape, with the fields it is about; raised in a
    handler's work, answered by the edge (``Refused``)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = dict(fields or {})

    def response(self) -> JsonResponse:
        # The edge's refusals (401, 405, 413, 429, 503) are the door's
        # dialect's; these are a handler's own (400, 403, 404, 409, 422).
        return JsonResponse(
            api_error_body(self.code, self.message, self.fields), status=self.status
        )


def invalid(fields: Mapping[str, str]) -> ApiError:
    names = ", ".join(fields)
    return ApiError(400, "invalid", f"invalid input in: {names}", fields)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


#: ``json.loads(text, parse_constant=_not_json)`` without making a decoder per call.
_decoder = json.JSONDecoder(parse_constant=_not_json)


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _bad_text(value: Any) -> str | None:
    """The field holding the first text (key or value) that is not valid
    Unicode: the top-level key it sits under, or ``body``."""
    items = value.items() if isinstance(value, dict) else [("body", value)]
    for key, item in items:
        if _lone_surrogate(key):
            return "body"
        stack = [item]
        while stack:
            inner = stack.pop()
            if isinstance(inner, str) and _lone_surrogate(inner):
                return key
            if isinstance(inner, dict):
                stack.extend([*inner.keys(), *inner.values()])
            elif isinstance(inner, list):
                stack.extend(inner)
    return None


def parse_json(raw: bytes) -> Any:
    """Bytes to a JSON value, or a 400 naming the problem: never a 500.

    Strict UTF-8; no NaN or Infinity (not JSON, and not storable); no number
    past CPython's 4300-digit limit (ValueError), no nesting that overflows the
    parser (RecursionError) or goes past ``MAX_JSON_DEPTH``; no lone surrogate
    (``"\\ud800"`` escapes decode to text that can never be encoded again).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid({"body": f"is not UTF-8 text (byte {exc.start})"}) from None
    try:
        value = _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise invalid({"body": f"is not valid JSON ({exc.msg} at {exc.pos})"}) from None
    except ValueError as exc:
        raise invalid({"body": f"is not valid JSON ({show(str(exc))})"}) from None
    except RecursionError:
        raise invalid({"body": f"nests deeper than {MAX_JSON_DEPTH} levels"}) from None
    if _too_deep(value):
        raise invalid({"body": f"nests deeper than {MAX_JSON_DEPTH} levels"})
    field = _bad_text(value)
    if field is not None:
        raise invalid({field: "contains invalid Unicode (a lone surrogate)"})
    return value


def unprocessable_error(fields: Mapping[str, str]) -> ApiError:
    """Well-formed input (the OpenAPI schema admits it) refused by a rule no
    schema can state; 400 is kept for what the schema itself refuses."""
    names = ", ".join(fields)
    return ApiError(422, "unprocessable", f"well-formed but refused: {names}", fields)


def config_refused(exc: ConfigError) -> ApiError:
    """A settings save refused: 422 when every value is well-formed (a rule
    between them refused it), 400 otherwise."""
    return unprocessable_error(exc.errors) if exc.well_formed else invalid(exc.errors)


def json_object(request: EdgeRequest, *, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong
    (the edge has read it, within the door's limit)."""
    return json_object_from(request.body, allow_empty=allow_empty)


def json_object_from(raw: bytes, *, allow_empty: bool = False) -> dict[str, Any]:
    """``json_object`` of the body's bytes."""
    if not raw:
        # No body at all is "no fields"; whitespace alone is not JSON.
        if allow_empty:
            return {}
        raise invalid({"body": "is empty; send a JSON object"})
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise invalid({"body": f"must be a JSON object, not {type(body).__name__}"})
    return body
