"""A team member's outlook for the held-overtime tests: their own default
schedule beside a team whose night is ``team_night`` (the default schedule's
other settings, its peak hours too) and whose policy lets a member's overtime
lift it for ``minutes`` (0: never)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from curfew_core.engine import Overrides, TeamPolicy, TeamSide
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.outlook import Outlook


def member_outlook(
    at: dt.datetime, overrides: Overrides, team_night: Mapping[str, Any], minutes: int = 0
) -> Outlook:
    own = schedule_config.build(schedule_config.default_config())
    team = schedule_config.build({**schedule_config.default_config(), **team_night})
    side = TeamSide(team, TeamPolicy(member_overtime=dt.timedelta(minutes=minutes)))
    return Outlook(at, own, overrides, side, at if overrides.overtime_until else None)
