"""A recorded decision's reason, led by what it tells of the decision's own
state (pure).

The engine writes one reason line for both sides of a decision: a member's
own schedule first, then the team's (``engine.team.combine``), and an
override after the schedule it overrides (``engine.decide``). So an Asleep
call (the team's lights-out, or switched off by hand) may have a reason that
begins "winding 30%". The ledger keeps the state the engine decided beside
the line; "Why" reads that state and puts the parts that tell it first,
never re-deriving the state from the words.
"""

from __future__ import annotations

import re

from curfew_core.engine.decide import PRETEND_MARK
from curfew_core.engine.team import OWN_MARK, TEAM_MARK
from curfew_core.engine.verdict import State

_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")
#: Each part of a reason line that tells a state, and the state it tells.
_TELLS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"peak hours( \(.+\))?"), State.OFF_DUTY),
    (re.compile(r"lights out( until .+)?"), State.LIGHTS_OUT),
    (re.compile(r"forced off until .+"), State.LIGHTS_OUT),
    (re.compile(r"winding \d+%"), State.WINDING),
    (re.compile(r"on duty"), State.ON_DUTY),
    (re.compile(r"overtime until .+"), State.ON_DUTY),
)
_BUDGET = re.compile(r"budget \d+")


def _tells(part: str) -> str | None:
    inner = part.removeprefix(TEAM_MARK)
    for pattern, state in _TELLS:
        if pattern.fullmatch(inner):
            return state
    return None


def led_by_state(state: str, reason: str) -> str:
    """``reason`` with the parts that tell ``state`` (the decision's own,
    recorded) first, the rest after in their order; a leading date stays first.
    A winding part keeps its budget beside it. Nothing is dropped or added:
    a reason none of whose parts tells ``state`` is returned as it is."""
    parts = reason.split(" · ") if reason else []
    head = [parts.pop(0)] if parts and _DATE.fullmatch(parts[0].strip()) else []
    lead: list[str] = []
    rest: list[str] = []
    told: str | None = None
    for part in parts:
        said = _tells(part)
        # A budget goes with the winding before it, a team's (marked) too.
        budget = _BUDGET.fullmatch(part.removeprefix(TEAM_MARK))
        if said is None and budget and told == State.WINDING:
            said = told
        told = said
        (lead if said == state else rest).append(part)
    return " · ".join(head + lead + rest)


#: The time machine's part as older rows spell it (``vocabulary`` reads both).
_OLD_PRETEND_MARK = "time machine"


def own_side_marked(reason: str) -> str:
    """``reason`` whose team side was put first (its parts marked ``team:``)
    with the member's own side marked too where it begins (``yours:``), so
    the own parts after the team's do not read as the team's. The shared
    time machine's part is nobody's side and stays unmarked."""
    parts = reason.split(" · ") if reason else []
    start = 1 if parts and _DATE.fullmatch(parts[0].strip()) else 0
    if len(parts) <= start or not parts[start].startswith(TEAM_MARK):
        return reason
    for index in range(start + 1, len(parts)):
        part = parts[index]
        if not part.startswith((TEAM_MARK, PRETEND_MARK, _OLD_PRETEND_MARK)):
            parts[index] = f"{OWN_MARK}{part}"
            break
    return " · ".join(parts)
