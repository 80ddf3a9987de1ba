"""The verdict request: what a gateway (or the page's decision preview) asks.

Parsed here, next to the settings schema, so the API and the settings page
call one parser with their own values and neither reaches into the other.
Errors are a ``RequestError`` naming every field; each door answers it in its
own shape (the API's 400/422 JSON, the page's flagged fields).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from curfew_core.engine import RequestContext
from curfew_core.engine.schedule import DEFAULT_EXEMPT_PURPOSES
from curfew_core.ledger.entry import MAX_STORED
from curfew_core.schedules import override_commands
from curfew_core.schedules.messages import Message, message_of
from curfew_core.schedules.values import (
    MAX_SESSION_ID,
    TEXT_PATTERN,
    show,
    text_problem,
    whole_number,
)

#: The longest session id or purpose a verdict request may carry (the same
#: as an exempt session id).
MAX_SCOPE_TEXT = MAX_SESSION_ID
#: The longest username (Django's ``User.username``).
MAX_USERNAME = 150
#: The longest instant text ``parse_instant`` reads.
MAX_INSTANT_TEXT = 64

#: A session id or purpose ("" is the same as null).
_ScopeText = Annotated[str, Field(max_length=MAX_SCOPE_TEXT, pattern=TEXT_PATTERN)]
#: An instant as requests send it: RFC 3339 with its offset, nothing looser.
_InstantText = Annotated[
    str,
    Field(
        max_length=MAX_INSTANT_TEXT,
        pattern=override_commands.INSTANT_PATTERN,
        json_schema_extra={"format": "date-time", "examples": ["2026-09-29T23:30:00+08:00"]},
    ),
]


# Declared once: the OpenAPI document's ``VerdictRequest`` is this model's
# schema, and ``parse_verdict_body`` takes exactly its fields (``VERDICT_FIELDS``),
# checked against the same lengths and patterns, with messages naming each field.
class VerdictRequestBody(BaseModel):
    """What a gateway asks about the model call it is about to make; every
    field may be null or left out."""

    model_config = ConfigDict(title="VerdictRequest", extra="forbid", frozen=True)

    session_id: _ScopeText | None = None
    purpose: _ScopeText | None = Field(
        default=None,
        description=(
            "what the call is for; off duty it passes only if the schedule's "
            "exempt_purposes lists it (case-insensitively; default "
            f"{', '.join(DEFAULT_EXEMPT_PURPOSES)}), any other purpose is decided "
            "like a call without one"
        ),
    )
    subagent: bool | None = None
    # At most what the decision ledger stores: the budget asked is recorded,
    # and a row the database refuses must never reach a batch (issue 23).
    max_tokens: Annotated[int, Field(ge=1, le=MAX_STORED)] | None = None
    at: _InstantText | None = Field(
        default=None, description="what-if instant; years 1900-8999 (others: 422)"
    )
    user: Annotated[str, Field(min_length=1, max_length=MAX_USERNAME)] | None = Field(
        default=None,
        description=(
            "with a team key: the username of the member asked for (a name that is "
            "not a member of the key's team: 404); a personal token asks for its own "
            "person: its own username or nothing (another name: 422)"
        ),
    )


VERDICT_FIELDS = tuple(VerdictRequestBody.model_fields)


class RequestError(ValueError):
    """``errors``: each bad field and why. ``unprocessable``: those that are
    well-formed but refused by a rule no schema states (an instant out of
    range), answered 422 by the API when they are the only ones."""

    def __init__(self, errors: Mapping[str, str], unprocessable: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        self.unprocessable = dict(unprocessable)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.fields.items()))

    @property
    def fields(self) -> dict[str, str]:
        """Every refused field and why, malformed ones first."""
        return {**self.errors, **self.unprocessable}


@dataclass(frozen=True, slots=True)
class VerdictRequest:
    context: RequestContext
    #: The instant asked about, or None for now.
    at: datetime | None
    #: A team key's member (issue 26), or None.
    user: str | None = None


def parse_instant(value: Any) -> datetime:
    """An RFC 3339 instant with its UTC offset (``Z`` allowed), exactly the
    document's ``pattern`` (Python alone would also take many other forms).

    ``ValueError`` for what is not one, ``override_commands.Unprocessable``
    for an instant out of the range a verdict can be given for.
    """
    if not isinstance(value, str):
        raise ValueError(
            Message("must be an RFC 3339 instant text, not %(value)s", value=show(value))
        )
    try:
        parsed = datetime.fromisoformat(value) if len(value) <= MAX_INSTANT_TEXT else None
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is None:
        raise ValueError(
            Message("%(value)s has no UTC offset; add one, e.g. +08:00 or Z", value=show(value))
        )
    if parsed is None or not re.fullmatch(override_commands.INSTANT_PATTERN, value):
        raise ValueError(
            Message(
                "%(value)s is not an RFC 3339 instant like 2026-09-29T23:30:00+08:00",
                value=show(value),
            )
        )
    return override_commands.check_moment(parsed)


def _optional_text(value: object, key: str, errors: dict[str, str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_SCOPE_TEXT:
        errors[key] = Message(
            "must be text of at most %(limit)s characters, not %(value)s",
            limit=MAX_SCOPE_TEXT,
            value=show(value),
        )
        return None
    problem = text_problem(value)
    if problem:
        errors[key] = problem
        return None
    return value or None


def verdict_request(
    *,
    session_id: object = None,
    purpose: object = None,
    subagent: object = None,
    max_tokens: object = None,
    at: object = None,
    user: object = None,
    errors: Mapping[str, str] | None = None,
) -> VerdictRequest:
    """The verdict request from its fields (None is "not given" for each), or
    ``RequestError``. ``errors`` carries refusals the caller already found
    (unknown keys), so every problem is named in one answer."""
    found = dict(errors or {})
    session = _optional_text(session_id, "session_id", found)
    scope = _optional_text(purpose, "purpose", found)
    if subagent is None:
        subagent = False
    elif not isinstance(subagent, bool):
        found["subagent"] = Message("must be true or false, not %(value)s", value=show(subagent))
    tokens = whole_number(max_tokens)
    if max_tokens is not None and (tokens is None or not 1 <= tokens <= MAX_STORED):
        found["max_tokens"] = Message(
            "must be a whole number from 1 to %(limit)s or null, not %(value)s",
            limit=MAX_STORED,
            value=show(max_tokens),
        )
    member: str | None = None
    if user is not None:
        if not isinstance(user, str) or not 1 <= len(user) <= MAX_USERNAME:
            found["user"] = Message(
                "must be a username of 1 to %(limit)s characters, not %(value)s",
                limit=MAX_USERNAME,
                value=show(user),
            )
        else:
            member = user
    instant = None
    unprocessable: dict[str, str] = {}
    if at is not None:
        try:
            instant = parse_instant(at)
        except override_commands.Unprocessable as exc:
            unprocessable["at"] = message_of(exc)
        except ValueError as exc:
            found["at"] = message_of(exc)
    if found or unprocessable:
        raise RequestError(found, unprocessable)
    context = RequestContext(
        session_id=session, purpose=scope, subagent=bool(subagent), max_tokens=tokens
    )
    return VerdictRequest(context, instant, member)


def parse_verdict_body(body: Mapping[str, Any]) -> VerdictRequest:
    """The verdict request from a JSON object: unknown keys are refused too."""
    unknown = {
        key: f"is not a verdict field; use {', '.join(VERDICT_FIELDS)}"
        for key in body
        if key not in VERDICT_FIELDS
    }
    return verdict_request(**{key: body.get(key) for key in VERDICT_FIELDS}, errors=unknown)
