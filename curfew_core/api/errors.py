"""One error shape for the whole API: ``{"error", "message", "fields"}``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, fields: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = dict(fields or {})

    def response(self) -> JsonResponse:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.fields:
            body["fields"] = self.fields
        response = JsonResponse(body, status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="curfew"'
        return response


def invalid(fields: Mapping[str, str]) -> ApiError:
    names = ", ".join(fields)
    return ApiError(400, "invalid", f"invalid input in: {names}", fields)


def json_object(request: HttpRequest, *, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 that says what is wrong."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise invalid({"body": "is too large for a settings or verdict request"}) from None
    if not raw.strip():
        if allow_empty:
            return {}
        raise invalid({"body": "is empty; send a JSON object"})
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise invalid({"body": f"is not valid JSON ({exc})"}) from None
    if not isinstance(body, dict):
        raise invalid({"body": f"must be a JSON object, not {type(body).__name__}"})
    return body
