"""What the engine answers: the verdict, its states and the synthetic stream."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any


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


def synthetic_stream(text: str) -> list[dict[str, Any]]:
    """The exact event stream a well-behaved adapter emits for a canned reply.

    The zero usage is an event of its own, never left out: a ledger that reads
    usage must see a real zero, not a missing turn.
    """
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    schedule_state: State
    action: Action
    reply: str | None
    max_tokens: int | None
    persona: str | None
    tools: str
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
    override: str | None
    override_until: datetime | None
    debug_at: datetime | None
    #: In a dry run: what would have been done (``action``, ``reply``, ``max_tokens``).
    would: dict[str, Any] | None

    @property
    def stream(self) -> list[dict[str, Any]] | None:
        return synthetic_stream(self.reply) if self.reply is not None else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, snake_case, every field present (``None`` stays ``null``)."""
        return {
            "state": self.state.value,
            "schedule_state": self.schedule_state.value,
            "action": self.action.value,
            "reply": self.reply,
            "stream": self.stream,
            "max_tokens": self.max_tokens,
            "persona": self.persona,
            "tools": self.tools,
            "reasoning_effort": self.reasoning_effort,
            "progress": None if self.progress is None else round(self.progress, 4),
            "peak": self.peak,
            "reason": self.reason,
            "exempt": self.exempt,
            "dry_run": self.dry_run,
            "valid_until": self.valid_until.isoformat(),
            "at": self.at.isoformat(),
            "budget": self.budget,
            "override": self.override,
            "override_until": (
                None if self.override_until is None else self.override_until.isoformat()
            ),
            "debug_at": None if self.debug_at is None else self.debug_at.isoformat(),
            "would": self.would,
        }


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time with one schedule state (for bands and day plans)."""

    start: datetime
    end: datetime
    state: State
    peak: bool
