"""The curfew decision engine: one pure function of (instant, schedule) -> verdict.

Standard library only. No Django, no I/O and no clock reads: every instant is
passed in, which is what makes the whole behaviour table testable without a
server (tests/engine enforces the import rule).
"""

from curfew_core.engine.clock import WallTime, format_wall, parse_wall
from curfew_core.engine.curve import unused_anchors
from curfew_core.engine.days import Night, day_kind, night_window
from curfew_core.engine.decide import REPLY_PLACEHOLDERS, decide, segments
from curfew_core.engine.effective import Change, Stretch, effective_plan
from curfew_core.engine.overrides import (
    OverrideError,
    Overrides,
    parse_debug_moment,
    parse_duration,
)
from curfew_core.engine.plan import (
    END_OF_DAY,
    BandCell,
    DayBand,
    PlanSegment,
    day_band,
    day_plan,
    member_day_plan,
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
from curfew_core.engine.team import TeamPolicy, TeamSide, combine, decide_member
from curfew_core.engine.verdict import (
    HELD_OFF,
    NIGHT,
    SEVERITY,
    Action,
    Segment,
    State,
    Verdict,
    progress_percent,
)

__all__ = [
    "END_OF_DAY",
    "HELD_OFF",
    "NIGHT",
    "REPLY_PLACEHOLDERS",
    "SEVERITY",
    "Action",
    "Anchor",
    "BandCell",
    "Change",
    "Curve",
    "DayBand",
    "HolidayLookup",
    "Night",
    "NightTimes",
    "NoHolidays",
    "OverrideError",
    "Overrides",
    "PlanSegment",
    "RequestContext",
    "Schedule",
    "Segment",
    "State",
    "Stretch",
    "TeamPolicy",
    "TeamSide",
    "Verdict",
    "WallTime",
    "combine",
    "day_band",
    "day_kind",
    "day_plan",
    "decide",
    "decide_member",
    "effective_plan",
    "format_wall",
    "member_day_plan",
    "night_window",
    "parse_debug_moment",
    "parse_duration",
    "parse_wall",
    "progress_percent",
    "segments",
    "unused_anchors",
]
