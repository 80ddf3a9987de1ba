"""The spec's reference table: defaults + CN holidays, Asia/Shanghai.

2026-09-29 is a Tuesday; 2026-09-27 a Sunday; 2026-10-01 is National Day.
Every row is checked with the instant given in local time and in UTC: the
engine reads a real instant, not a wall reading.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from engine_support import cn_schedule, local

from curfew_core.engine import Action, State, decide

OFF = {"state": State.OFF_DUTY, "action": Action.SHORT_CIRCUIT, "reply": "。", "max_tokens": None}
ON = {"state": State.ON_DUTY, "action": Action.PASS, "reply": None, "max_tokens": None}
DARK = {
    "state": State.LIGHTS_OUT,
    "action": Action.SHORT_CIRCUIT,
    "reply": "明天再说。",
    "max_tokens": None,
}


def winding(tokens: int) -> dict[str, object]:
    return {"state": State.WINDING, "action": Action.CLAMP, "reply": None, "max_tokens": tokens}


REFERENCE = [
    pytest.param(local(2026, 9, 29, 10, 0), OFF, id="tue-10:00-peak"),
    pytest.param(local(2026, 9, 29, 20, 0), ON, id="tue-20:00-on-duty"),
    # 23:30 is half-way from the 23:00 anchor (2048) to 00:00 (1600).
    pytest.param(local(2026, 9, 29, 23, 30), winding(1824), id="tue-23:30-winding"),
    # 01:30 is half-way from 01:00 (800) to 02:00 (320).
    pytest.param(local(2026, 9, 30, 1, 30), winding(560), id="wed-01:30-winding"),
    pytest.param(local(2026, 9, 30, 3, 10), DARK, id="wed-03:10-lights-out"),
    pytest.param(local(2026, 9, 27, 14, 0), ON, id="sun-14:00-weekend-valley"),
    pytest.param(local(2026, 9, 27, 9, 0), ON, id="sun-09:00-weekend-valley"),
    pytest.param(local(2026, 9, 29, 9, 0), OFF, id="tue-09:00-peak-starts"),
    pytest.param(local(2026, 10, 1, 10, 0), ON, id="national-day-valley"),
]


@pytest.mark.parametrize("in_utc", [False, True], ids=["local", "utc"])
@pytest.mark.parametrize(("now", "expected"), REFERENCE)
def test_reference_table(now: datetime, expected: dict[str, object], in_utc: bool) -> None:
    verdict = decide(now.astimezone(UTC) if in_utc else now, cn_schedule())
    got = {key: getattr(verdict, key) for key in expected}
    assert got == expected
    assert verdict.valid_until > now


def test_on_duty_sets_nothing() -> None:
    verdict = decide(local(2026, 9, 29, 20, 0), cn_schedule())
    assert verdict.persona is None
    assert verdict.tools == "allow"
    assert verdict.progress is None
    assert verdict.budget is None
    assert verdict.reasoning_effort is None
    assert not verdict.peak


def test_peak_and_lights_out_deny_tools_by_default() -> None:
    assert decide(local(2026, 9, 29, 10, 0), cn_schedule()).tools == "deny"
    assert decide(local(2026, 9, 30, 3, 10), cn_schedule()).tools == "deny"
    assert decide(local(2026, 9, 29, 10, 0), cn_schedule()).peak


def test_severity_order() -> None:
    from curfew_core.engine import SEVERITY

    order = sorted(State, key=lambda s: SEVERITY[s])
    assert order == [State.ON_DUTY, State.WINDING, State.OFF_DUTY, State.LIGHTS_OUT]
