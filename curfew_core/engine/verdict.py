"""What the engine answers: the verdict and its states.

The verdict's wire shape (JSON) is not the engine's business: it is declared
once in ``curfew_client.wire`` and the server maps a ``Verdict`` onto it in
``selectors/verdicts.py:verdict_answer``."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal


class State(enum.StrEnum):
    ON_DUTY = "on-duty"
    WINDING = "winding"
    OFF_DUTY = "off-duty"
    LIGHTS_OUT = "lights-out"


def progress_percent(progress: float | None) -> int | None:
    """How far through the winding-down the night is, in whole percent, rounded DOWN:
    the one rounding every display uses (the verdict's reason, the settings page,
    the capsule, which is sent this number rather than rounding on its own).

    Floor, not round: 12.5 % of the night is not yet 13 %, and the number never
    says 100 while winding still goes on. Rounding to six places first drops
    float noise (``0.29 * 100 == 28.999999999999996``), so floor never takes a
    point off a percent that is whole.
    """
    if progress is None:
        return None
    return max(0, min(100, math.floor(round(progress * 100, 6))))


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
    #: When the time machine ends (real instant), while it is on.
    debug_until: datetime | None
    #: In a dry run: what would have been done (``action``, ``reply``, ``max_tokens``).
    would: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time with one schedule state (for bands and day plans)."""

    start: datetime
    end: datetime
    state: State
    peak: bool
