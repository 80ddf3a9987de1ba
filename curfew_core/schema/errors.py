"""The API's one error shape, declared once: ``{"error", "message", "fields"}``.

The API's errors (``curfew_core.api.errors``), the outage answer in the API's
shape (``curfew_core.edge.outage``) and the OpenAPI document's ``Error`` schema all
come from this model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    """What every refusal of the API answers."""

    model_config = ConfigDict(title="Error", frozen=True)

    error: str = Field(description="a stable code: invalid, unprocessable, unauthorized, ...")
    message: str = Field(description="what went wrong, for a person")
    #: Only when fields were refused (left out otherwise).
    fields: dict[str, str] = Field(
        default_factory=dict, description="each refused field and why (left out when none)"
    )


def api_error_body(
    code: str, message: str, fields: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The JSON body of an API error (``fields`` only when there are some)."""
    body = {"error": code, "message": message}
    return {**body, "fields": dict(fields)} if fields else body


def _shown(name: str) -> str:
    """``name`` quoted for an answer: cut short, and every character that could
    not be sent as it is (NUL, a lone surrogate) escaped by ``repr``."""
    return repr(name if len(name) <= 40 else f"{name[:39]}…")


def not_a_username(name: str) -> str:
    """Why a team key's request names nobody: no account could have ``name``
    (the user model's own rule: letters, digits and ``@.+-_``, at most 150)."""
    return (
        f"{_shown(name)} is no username (letters, digits and @.+-_ only, at most 150): "
        "name a member of this key's team in the X-Curfew-User header"
    )


def not_a_member(name: str) -> str:
    """Why a team key may not speak for ``name``: said alike by every door
    (the verdict, the state, the proxy, the decisions read and report), the
    name cut short so a long one cannot fill the answer."""
    return f"{_shown(name)} is not a member of this key's team"
