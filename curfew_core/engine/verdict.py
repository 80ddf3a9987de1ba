"""What the engine answers: the verdict and its states.

The verdict's wire shape (JSON) is not the engine's business: it is declared
once in ``curfew_client.wire`` and the server maps a ``Verdict`` onto it in
``selectors/verdicts.py:verdict_answer``."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal


class State(enum.StrEnum):
    """The four states, declared once, least to most severe: this order is the
    severity (``SEVERITY``) and every display's (``vocabulary.STATE_ORDER``).
    What holds for each is declared beside it (``HELD_OFF``, ``NIGHT``), its
    words in ``curfew_core/vocabulary.py`` and its looks in ``states.css``."""

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


#: Harsher wins: the verdict of two gates is the one ranked higher here
#: (``State``'s own order).
SEVERITY: dict[State, int] = {state: rank for rank, state in enumerate(State)}
#: The states that hold the AI off (a reply in place of the model): peak and
#: asleep. The time they hold is the AI time the ledger counts as kept off.
HELD_OFF: frozenset[State] = frozenset({State.OFF_DUTY, State.LIGHTS_OUT})
#: The night's states, from curfew start to wake-up.
NIGHT: frozenset[State] = frozenset({State.WINDING, State.LIGHTS_OUT})


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


# -- a verdict made without the frozen ``__init__`` -----------------------------------
#
# A frozen dataclass sets each field through ``object.__setattr__``: for the
# verdict's 21 fields that was a fifth of a verdict answered from the engine's
# memo. ``new_verdict`` sets the same slots through their own descriptors (what
# ``object.__setattr__`` ends in): the same object, made in half the time.


def _slot(name: str) -> Any:
    return Verdict.__dict__[name].__set__


_set_state = _slot("state")
_set_schedule_state = _slot("schedule_state")
_set_action = _slot("action")
_set_reply = _slot("reply")
_set_max_tokens = _slot("max_tokens")
_set_persona = _slot("persona")
_set_tools = _slot("tools")
_set_reasoning_effort = _slot("reasoning_effort")
_set_progress = _slot("progress")
_set_peak = _slot("peak")
_set_reason = _slot("reason")
_set_exempt = _slot("exempt")
_set_dry_run = _slot("dry_run")
_set_valid_until = _slot("valid_until")
_set_at = _slot("at")
_set_budget = _slot("budget")
_set_override = _slot("override")
_set_override_until = _slot("override_until")
_set_debug_at = _slot("debug_at")
_set_debug_until = _slot("debug_until")
_set_would = _slot("would")
_new = object.__new__


def new_verdict(
    state: Any,
    schedule_state: Any,
    action: Any,
    reply: Any,
    max_tokens: Any,
    persona: Any,
    tools: Any,
    reasoning_effort: Any,
    progress: Any,
    peak: Any,
    reason: Any,
    exempt: Any,
    dry_run: Any,
    valid_until: Any,
    at: Any,
    budget: Any,
    override: Any,
    override_until: Any,
    debug_at: Any,
    debug_until: Any,
    would: Any,
) -> Verdict:
    """``Verdict(...)`` with every field given, in the class's order."""
    verdict: Verdict = _new(Verdict)
    _set_state(verdict, state)
    _set_schedule_state(verdict, schedule_state)
    _set_action(verdict, action)
    _set_reply(verdict, reply)
    _set_max_tokens(verdict, max_tokens)
    _set_persona(verdict, persona)
    _set_tools(verdict, tools)
    _set_reasoning_effort(verdict, reasoning_effort)
    _set_progress(verdict, progress)
    _set_peak(verdict, peak)
    _set_reason(verdict, reason)
    _set_exempt(verdict, exempt)
    _set_dry_run(verdict, dry_run)
    _set_valid_until(verdict, valid_until)
    _set_at(verdict, at)
    _set_budget(verdict, budget)
    _set_override(verdict, override)
    _set_override_until(verdict, override_until)
    _set_debug_at(verdict, debug_at)
    _set_debug_until(verdict, debug_until)
    _set_would(verdict, would)
    return verdict


# Every field, in order: a field added to ``Verdict`` must be added here too.
assert tuple(new_verdict.__code__.co_varnames[: new_verdict.__code__.co_argcount]) == tuple(
    field.name for field in fields(Verdict)
)


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time with one schedule state (for bands and day plans)."""

    start: datetime
    end: datetime
    state: State
    peak: bool
