"""The plain record of one decision, as a door hands it to the recorder.

No Django, no I/O: building one costs a few attribute reads, so the hot path
can afford it. Never the prompt or the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from curfew_client.wire import ActionName, StateName

from curfew_core import protocols

#: Where a decision was made: the proxy's model-call doors (each wire
#: protocol's ``origins``, ``protocols``), the verdict API, a gateway's
#: report. Derived here once (the model's choices and the API's schema derive
#: from it), so a new protocol's routes need no edit here and no migration
#: (the column's choices are :func:`origin_choices`, a callable: the
#: migration names the function, not the list). States and actions are the
#: wire's own.
ORIGINS: tuple[str, ...] = (
    *(origin for protocol in protocols.ALL for origin in protocol.origins),
    "verdict",
    "gateway",
)
if TYPE_CHECKING:
    Origin = str
else:
    # A Literal for the API's schema (its enum), made from the list.
    Origin = Literal[ORIGINS]


def origin_choices() -> list[tuple[str, str]]:
    """The ledger's ``origin`` column's choices (``Decision.origin``)."""
    return [(origin, origin) for origin in ORIGINS]


ACTIONS: tuple[ActionName, ...] = get_args(ActionName)
STATES: tuple[StateName, ...] = get_args(StateName)
#: The reason line is kept this long at most.
MAX_REASON = 500
MAX_SCOPE = 200
#: The largest number a decision's row holds: its budgets and usage are
#: ``PositiveIntegerField``s, PostgreSQL's ``integer``. Every door keeps the
#: numbers it records within it (a row the database refuses used to fail its
#: whole batch, issue 23), refusing them (the verdict API) or capping the
#: ledger's copy (what the proxy only relays).
MAX_STORED = 2**31 - 1


@dataclass(slots=True)
class Entry:
    """One decision that was acted on. ``user_id`` names whose it is (the
    doors know it); an entry with only its ``token_id`` waits for the flusher
    to look its user up, once per batch.

    Not ``frozen``: a frozen dataclass sets each field through
    ``object.__setattr__``, five times the cost of building this one on every
    verdict. Nothing changes an entry once built."""

    at: datetime
    state: str
    action: str
    origin: str
    user_id: int | None = None
    token_id: int | None = None
    session: str | None = None
    purpose: str | None = None
    reason: str = ""
    budget_before: int | None = None
    budget_after: int | None = None
    exempt: bool = False
    dry_run: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: A gateway's own id for the decision (idempotent reports).
    client_id: str | None = None


def saving(action: str, dry_run: bool, before: int | None, after: int | None) -> int:
    """Output tokens a clamp kept from being generated: the budget asked minus
    the budget allowed (an upper bound: the answer may have ended sooner);
    0 for anything else, a dry run, or an unknown budget."""
    if action != "clamp" or dry_run:
        return 0
    if before is None or after is None:
        return 0
    return max(0, before - after)


def not_sent(entry: Entry) -> bool:
    """A short-circuit that acted: nothing went upstream (a dry run never acts)."""
    return unsent(entry.action, entry.dry_run)


def unsent(action: str, dry_run: bool) -> bool:
    """``not_sent`` of a decision's fields."""
    return action == "short-circuit" and not dry_run


def verdict_entry(
    verdict: Any,
    *,
    origin: str,
    at: datetime,
    user_id: int | None = None,
    token_id: int | None = None,
    session: str | None = None,
    purpose: str | None = None,
    budget_before: int | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    action: str | None = None,
) -> Entry:
    """The entry for an engine ``Verdict`` (duck-typed: this module imports no
    engine). ``budget_after`` is the budget the call was allowed: on a clamp
    ``min(budget_before, verdict.max_tokens)``, on a short-circuit 0, else the
    budget asked. ``action`` is what the door did when it is not the
    verdict's own (embeddings pass while winding: there is nothing to clamp)."""
    action = action or verdict.action.value
    budget_after = allowed(action, verdict, budget_before)
    return Entry(
        at=at,
        state=verdict.state.value,
        action=action,
        origin=origin,
        user_id=user_id,
        token_id=token_id,
        session=session,
        purpose=purpose,
        reason=verdict.reason[:MAX_REASON],
        budget_before=budget_before,
        budget_after=budget_after,
        exempt=bool(verdict.exempt),
        dry_run=bool(verdict.dry_run),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def allowed(action: str, verdict: Any, budget_before: int | None) -> int | None:
    """The budget a call was allowed (``verdict_entry``'s ``budget_after``)."""
    if action == "clamp" and not verdict.dry_run:
        ceiling: int | None = verdict.max_tokens
        if ceiling is None:
            return budget_before
        if budget_before is None:
            return ceiling
        return min(budget_before, ceiling)
    if action == "short-circuit" and not verdict.dry_run:
        return 0
    return budget_before
