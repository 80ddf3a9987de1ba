"""Replies as templates (issue 24 item 4): ``{until}`` says when what stops the
call ends, so a user sees "Curfew: peak hours until 12:00." rather than a bare
``。`` they take for a broken tool. Expectations worked out by hand on the
default schedule: peak 09:00-12:00 and 14:00-18:00, lights-out 03:00-09:00."""

from __future__ import annotations

from datetime import timedelta

import pytest
from engine_support import cn_schedule, local

from curfew_core.engine import Overrides, Schedule, State, decide
from curfew_core.engine.decide import reply_for
from curfew_testkit.engine_reference import reference_decide

OFF = "Curfew: peak hours until {until}."
DARK = "Curfew: lights out until {until}."


def templated(**changes: object) -> Schedule:
    return cn_schedule(off_duty_reply=OFF, lights_out_reply=DARK, **changes)


@pytest.mark.parametrize(
    ("hour", "reply"),
    [
        (10, "Curfew: peak hours until 12:00."),
        (15, "Curfew: peak hours until 18:00."),
        (4, "Curfew: lights out until 09:00."),
    ],
)
def test_until_is_when_the_state_ends(hour: int, reply: str) -> None:
    moment = local(2026, 9, 30, hour)  # a Wednesday
    assert decide(moment, templated()).reply == reply
    assert reference_decide(moment, templated()).reply == reply


def test_back_to_back_peak_windows_end_together() -> None:
    # 09:00-12:00 then 12:00-13:30: one stretch of peak hours, over at 13:30.
    schedule = templated(peak_windows=((540, 720), (720, 810)))
    assert decide(local(2026, 9, 30, 10), schedule).reply == "Curfew: peak hours until 13:30."


def test_a_forced_off_ends_when_the_override_does() -> None:
    now = local(2026, 9, 30, 20)
    until = now + timedelta(hours=2, minutes=15)
    verdict = decide(now, templated(), overrides=Overrides(forced_off_until=until))
    assert verdict.reply == "Curfew: lights out until 22:15."


def test_an_end_more_than_a_day_ahead_has_its_date() -> None:
    now = local(2026, 9, 30, 20)
    until = now + timedelta(days=1, hours=1)
    verdict = decide(now, templated(), overrides=Overrides(forced_off_until=until))
    assert verdict.reply == "Curfew: lights out until 2026-10-01 21:00."
    # The text drops its date a day before the end: the verdict is only good until then.
    assert verdict.valid_until == until - timedelta(days=1)
    later = decide(
        until - timedelta(days=1), templated(), overrides=Overrides(forced_off_until=until)
    )
    assert later.reply == "Curfew: lights out until 21:00."


def test_pretending_reads_until_on_the_pretended_clock() -> None:
    now = local(2026, 9, 30, 20)  # really on duty
    pretend = Overrides(debug_at=local(2026, 9, 30, 15, 30), debug_until=now + timedelta(hours=1))
    assert decide(now, templated(), overrides=pretend).reply == "Curfew: peak hours until 18:00."


def test_a_dry_run_reports_the_filled_reply() -> None:
    verdict = decide(local(2026, 9, 30, 10), templated(dry_run=True))
    assert verdict.reply is None
    assert verdict.would is not None
    assert verdict.would["reply"] == "Curfew: peak hours until 12:00."


def test_other_braces_and_plain_replies_stay_as_they_are() -> None:
    schedule = cn_schedule(off_duty_reply="{x} {} { until}", lights_out_reply="明天再说。")
    assert decide(local(2026, 9, 30, 10), schedule).reply == "{x} {} { until}"
    assert decide(local(2026, 9, 30, 4), schedule).reply == "明天再说。"


def test_reply_for_fills_only_the_placeholder() -> None:
    assert reply_for(State.OFF_DUTY, templated(), "12:00") == "Curfew: peak hours until 12:00."
    assert reply_for(State.LIGHTS_OUT, templated(), "09:00") == "Curfew: lights out until 09:00."
    assert reply_for(State.OFF_DUTY, cn_schedule(), "12:00") == "。"
    assert reply_for(State.ON_DUTY, templated(), "12:00") is None


def test_a_date_in_the_other_reply_does_not_cut_the_verdict_short() -> None:
    # Found by hypothesis: a forced off a day away is told with its date, which
    # drops a day before the end; the verdict must stop there only if the
    # reply given holds {until}, not because the off-duty one does.
    now = local(2026, 9, 30, 20)
    until = now + timedelta(days=1, hours=1)
    schedule = cn_schedule(off_duty_reply=OFF, lights_out_reply="明天再说。")
    verdict = decide(now, schedule, overrides=Overrides(forced_off_until=until))
    assert verdict.reply == "明天再说。"
    assert verdict.valid_until > until - timedelta(days=1)
    assert verdict == reference_decide(now, schedule, overrides=Overrides(forced_off_until=until))
