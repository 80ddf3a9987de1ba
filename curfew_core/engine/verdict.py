"""What the engine answers: the verdict and its states.

The verdict's wire shape (JSON) is not the engine's business: it is declared
once in ``curfew_client.wire`` and the server maps a ``Verdict`` onto it in
``selectors/verdicts.py:verdict_answer``."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal


class State(enum.StrEnum):
    ON_DUTY = "on-duty"
    WINDING = "winding"
    OFF_DUTY = "off-duty"
    LIGHTS_OUT = "lights-out"


#: Harsher wins: the verdict of two gates is the one ranked higher here.
SEVERITY: dict[State, int] = {
    State.ON_DUTY: 0,
    State.WINDING: 1,
    State.OFF_DUTY: 2,
    State.LIGHTS_OUT: 3,
}


class Action(enum.StrEnum):
    PASS = "pass"  # noqa: S105 (an action, not a password)
    CLAMP = "clamp"
    SHORT_CIRCUIT = "short-circuit"


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    schedule_state: State
    action: Action
    reply: str | None
    max_tokens: int | None
    persona: str | None
    tools: Literal["allow", "deny"]
    reasoning_effort: str | None
    progress: float | None
    peak: bool
    reason: str
    exempt: bool
    dry_run: bool
    valid_until: datetime
    #: The instant the schedule was read at (the time machine's, when set).
    at: datetime
    #: The curve's budget at ``at`` during winding, acted on or not.
    budget: int | None
    #: ``"overtime"`` or ``"off"`` while an override is in force.
    override: Literal["overtime", "off"] | None
    override_until: datetime | None
    debug_at: datetime | None
    #: In a dry run: what would have been done (``action``, ``reply``, ``max_tokens``).
    would: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time with one schedule state (for bands and day plans)."""

    start: datetime
    end: datetime
    state: State
    peak: bool
