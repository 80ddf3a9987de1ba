"""The decision ledger's wire shapes, declared once: a gateway's report
(``POST /api/v1/decisions``), a page of decisions, and the savings answer.

The OpenAPI document serves these models' JSON Schema; ``parse_report``
validates with the very same models (strict, so nothing the schema refuses is
coerced) and names each refused field as ``decisions[3].at``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any

from curfew_client.wire import ActionName, StateName
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from curfew_core.ledger.entry import MAX_REASON, Entry, Origin
from curfew_core.schedules import override_commands
from curfew_core.schedules.values import TEXT_PATTERN
from curfew_core.schema.errors import not_a_member
from curfew_core.schema.verdict_request import (
    MAX_SCOPE_TEXT,
    RequestError,
    parse_instant,
)

#: The most decisions one report may carry.
MAX_BATCH = 500
#: A reported decision may be at most this far in the future (clock skew).
FUTURE_SLACK = timedelta(minutes=5)
MAX_TOKENS = 10_000_000
ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._:-]*$"

_Scope = Annotated[str, Field(max_length=MAX_SCOPE_TEXT, pattern=TEXT_PATTERN)]


def _whole_float(value: object) -> object:
    """``418908.0`` is a JSON Schema integer; strict mode alone would refuse it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS), BeforeValidator(_whole_float)]
_Instant = Annotated[
    str,
    Field(
        max_length=64,
        pattern=override_commands.INSTANT_PATTERN,
        json_schema_extra={"format": "date-time"},
    ),
]


class DecisionReport(BaseModel):
    """One decision a gateway made from its cached verdict."""

    model_config = ConfigDict(title="DecisionReport", extra="forbid", frozen=True, strict=True)

    id: Annotated[str, Field(min_length=1, max_length=64, pattern=ID_PATTERN)] = Field(
        description="the gateway's own id for this decision: a retried report stores it once"
    )
    at: _Instant = Field(description="when it was decided (at most 5 minutes ahead)")
    state: StateName
    action: ActionName
    user: Annotated[str, Field(min_length=1, max_length=150, pattern=TEXT_PATTERN)] | None = Field(
        default=None,
        description="the team member it was decided for: required with a team key, "
        "which reports for its team's members; a personal token reports its own and "
        "leaves this out",
    )
    session_id: _Scope | None = None
    purpose: _Scope | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON, pattern=TEXT_PATTERN)] = ""
    budget_before: _Tokens | None = Field(default=None, description="the budget the call asked")
    budget_after: _Tokens | None = Field(
        default=None, description="the budget it was allowed (a clamp never raises it)"
    )
    exempt: bool = False
    dry_run: bool = False
    input_tokens: _Tokens | None = Field(default=None, description="upstream usage, if known")
    output_tokens: _Tokens | None = None


class DecisionBatch(BaseModel):
    model_config = ConfigDict(title="DecisionBatch", extra="forbid", frozen=True, strict=True)

    decisions: Annotated[list[DecisionReport], Field(min_length=1, max_length=MAX_BATCH)]


class DecisionRow(BaseModel):
    """One recorded decision (never the prompt or the reply)."""

    model_config = ConfigDict(title="Decision", frozen=True)

    id: str | None = Field(description="the gateway's id, for reported decisions")
    at: str
    session_id: str | None
    purpose: str | None
    state: StateName
    action: ActionName
    reason: str
    budget_before: int | None
    budget_after: int | None
    origin: Origin
    exempt: bool
    dry_run: bool
    input_tokens: int | None
    output_tokens: int | None


class DecisionPageAnswer(BaseModel):
    model_config = ConfigDict(title="DecisionPage", frozen=True)

    decisions: list[DecisionRow]
    page: int = Field(ge=1)
    per_page: int = Field(ge=1)
    next_page: int | None = Field(description="the next page's number; null on the last")


class ReportAnswer(BaseModel):
    model_config = ConfigDict(title="DecisionReportAnswer", frozen=True)

    received: int = Field(ge=0)
    stored: int = Field(ge=0, description="new decisions; ids already stored are not counted")


class TypicalCall(BaseModel):
    model_config = ConfigDict(title="TypicalCall", frozen=True)

    input_tokens: float
    output_tokens: float


class SavingsAnswer(BaseModel):
    model_config = ConfigDict(title="Savings", frozen=True)

    from_: str = Field(alias="from")
    to: str
    decisions: int
    requests_not_sent: int = Field(description="short-circuits that acted: nothing sent")
    input_tokens_not_sent: int
    output_tokens_not_generated: int = Field(
        description="a typical passed call's output per request not sent (a clamp's cut "
        "is not counted here: see tokens_not_asked_for)"
    )
    tokens_not_asked_for: int = Field(
        default=0,
        description="the clamps' cuts of max_tokens (budget asked minus allowed): a cap, "
        "not tokens saved, and never priced",
    )
    money: float = Field(
        description="the requests not sent, at the user's price table, discount windows "
        "applied; only where a passed call's usage is known"
    )
    currency: str
    typical_call: TypicalCall | None = Field(
        description="the average upstream usage of calls passed untouched in the range, "
        "which requests not sent are priced at; null when none is known"
    )


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        fields = (
            DecisionReport.model_fields if len(error["loc"]) > 1 else DecisionBatch.model_fields
        )
        return f"is not a field here; use {', '.join(fields)}"
    if kind == "string_pattern_mismatch":
        if error["loc"][-1] == "at":
            return "must be an RFC 3339 instant like 2026-09-29T23:30:00+08:00"
        if error["loc"][-1] == "id":
            return "must be letters, digits and . _ : - (a letter or digit first)"
        return "must not contain NUL"
    return str(error["msg"])


def parse_report(
    body: Mapping[str, Any],
    *,
    user_id: int | None,
    now: datetime,
    members: Callable[[set[str]], dict[str, int]] | None = None,
) -> list[Entry]:
    """The entries of a report, or ``RequestError`` naming every bad field
    (malformed: 400; a moment out of range, too far ahead, a clamp that
    raised the budget, or a ``user`` who is no member of the key's team: 422).

    ``user_id``: the personal token's user (``user`` must be left out), or
    ``None`` for a team key, whose entries each name a member, looked up
    with ``members`` (the names of the batch in, name to user id out)."""
    try:
        batch = DecisionBatch.model_validate(dict(body))
    except ValidationError as exc:
        raise RequestError(_shape_errors(exc), {}) from None
    entries: list[Entry] = []
    unprocessable: dict[str, str] = {}
    malformed: dict[str, str] = {}
    named = {report.user for report in batch.decisions if report.user is not None}
    known = members(named) if members is not None and named else {}
    for n, report in enumerate(batch.decisions):
        found = _entry_of(report, user_id=user_id, known=known, now=now)
        if isinstance(found, Entry):
            entries.append(found)
            continue
        is_malformed, field, message = found
        (malformed if is_malformed else unprocessable)[f"decisions[{n}].{field}"] = message
    if malformed or unprocessable:
        raise RequestError(malformed, unprocessable)
    return entries


def _shape_errors(exc: ValidationError) -> dict[str, str]:
    """Every field the models refuse, named as ``decisions[3].at``, the first
    problem of each."""
    errors: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        errors.setdefault(_where(tuple(error["loc"])), _message(error))
    return errors


#: A refused decision: ``(malformed, field, message)``; malformed is a 400,
#: else it is a 422 (well-formed, but not to be recorded).
_Refusal = tuple[bool, str, str]


def _entry_of(
    report: DecisionReport, *, user_id: int | None, known: dict[str, int], now: datetime
) -> Entry | _Refusal:
    """One reported decision as a ledger entry, or why it is refused: whose
    it is (``_owner_of``), a moment that reads and is not ahead of ``now`` by
    more than ``FUTURE_SLACK``, and a clamp that never raised the budget."""
    owner = _owner_of(report, user_id=user_id, known=known)
    if not isinstance(owner, int):
        return owner
    try:
        at = parse_instant(report.at)
    except override_commands.Unprocessable as exc:
        return False, "at", str(exc)
    except ValueError as exc:
        return True, "at", str(exc)
    if at > now + FUTURE_SLACK:
        return False, "at", "is more than 5 minutes in the future"
    if (
        report.action == "clamp"
        and report.budget_before is not None
        and report.budget_after is not None
        and report.budget_after > report.budget_before
    ):
        return False, "budget_after", "a clamp never raises the budget"
    return Entry(
        at=at,
        state=report.state,
        action=report.action,
        origin="gateway",
        user_id=owner,
        session=report.session_id,
        purpose=report.purpose,
        reason=report.reason,
        budget_before=report.budget_before,
        budget_after=report.budget_after,
        exempt=report.exempt,
        dry_run=report.dry_run,
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        client_id=report.id,
    )


def _owner_of(
    report: DecisionReport, *, user_id: int | None, known: dict[str, int]
) -> int | _Refusal:
    """Whose decision it is: a personal token's own (it names no ``user``),
    or the member a team key names (it must name one of its team)."""
    if user_id is not None and report.user is not None:
        return (
            False,
            "user",
            "a personal token reports its own decisions; only a team key names a user",
        )
    if user_id is None and report.user is None:
        return True, "user", "a team key reports for its members: name the member of each decision"
    owner = user_id if report.user is None else known.get(report.user)
    if owner is None:
        return False, "user", not_a_member(report.user or "")
    return owner
