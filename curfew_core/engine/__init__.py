"""The curfew decision engine: one pure function of (instant, schedule) -> verdict.

Standard library only. No Django, no I/O and no clock reads: every instant is
passed in, which is what makes the whole behaviour table testable without a
server (tests/engine enforces the import rule).
"""

from curfew_core.engine.clock import WallTime, format_wall, parse_wall
from curfew_core.engine.decide import day_kind, decide, segments
from curfew_core.engine.overrides import (
    OverrideError,
    Overrides,
    parse_debug_moment,
    parse_duration,
)
from curfew_core.engine.schedule import (
    Anchor,
    Curve,
    HolidayLookup,
    NightTimes,
    NoHolidays,
    RequestContext,
    Schedule,
)
from curfew_core.engine.verdict import (
    SEVERITY,
    Action,
    Segment,
    State,
    Verdict,
)

__all__ = [
    "SEVERITY",
    "Action",
    "Anchor",
    "Curve",
    "HolidayLookup",
    "NightTimes",
    "NoHolidays",
    "OverrideError",
    "Overrides",
    "RequestContext",
    "Schedule",
    "Segment",
    "State",
    "Verdict",
    "WallTime",
    "day_kind",
    "decide",
    "format_wall",
    "parse_debug_moment",
    "parse_duration",
    "parse_wall",
    "segments",
]
