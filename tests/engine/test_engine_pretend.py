""" "Pretend it is ..." (the time machine, ``Overrides.debug_at``) ends by itself at
``debug_until``: the verdict's ``valid_until`` never passes that end, and from it
on the schedule rules as if the time machine had been cleared."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from engine_support import cn_schedule, local

from curfew_core.engine import Action, OverrideError, Overrides, State, decide, parse_duration

TUE_20 = local(2026, 9, 29, 20, 0)  # on duty; the curfew starts at 23:00
PRETEND_AT = local(2026, 9, 30, 1, 30)  # winding, budget 560
END = TUE_20 + timedelta(hours=1)


def test_pretending_reads_the_schedule_at_the_moment_until_its_end() -> None:
    overrides = Overrides(debug_at=PRETEND_AT, debug_until=END)
    verdict = decide(TUE_20, cn_schedule(), overrides=overrides)
    assert verdict.state is State.WINDING
    assert verdict.max_tokens == 560
    assert verdict.at == PRETEND_AT
    assert (verdict.debug_at, verdict.debug_until) == (PRETEND_AT, END)
    # Caches and capsules must look again when it ends, not 24 h later.
    assert verdict.valid_until == END
    assert "pretending it is Wed 01:30 until 21:00 real time" in verdict.reason


def test_the_reason_says_which_clock_each_time_is_on() -> None:
    """The line reads the pretended moment (Wed 01:30) while the pretend ends
    at a real 21:00: "pretending until 21:00" read as 21:00 pretended. The
    pretend's part names the pretended moment and says its end is real."""
    overrides = Overrides(debug_at=PRETEND_AT, debug_until=END.astimezone(UTC))
    parts = decide(TUE_20, cn_schedule(), overrides=overrides).reason.split(" · ")
    assert parts[0] == "2026-09-30 01:30"
    assert parts[-1] == "pretending it is Wed 01:30 until 21:00 real time"
    assert "pretending until 21:00" not in parts
    endless = decide(TUE_20, cn_schedule(), overrides=Overrides(debug_at=PRETEND_AT))
    assert endless.reason.split(" · ")[-1] == "pretending it is Wed 01:30"


def test_valid_until_is_the_earlier_of_the_end_and_an_override() -> None:
    overtime = TUE_20 + timedelta(minutes=20)
    overrides = Overrides(overtime_until=overtime, debug_at=PRETEND_AT, debug_until=END)
    assert decide(TUE_20, cn_schedule(), overrides=overrides).valid_until == overtime
    # Overtime over, the pretend still on: its end bounds the next verdict.
    after = decide(overtime, cn_schedule(), overrides=overrides)
    assert after.state is State.WINDING
    assert after.valid_until == END


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=1), timedelta(hours=1)])
def test_after_the_end_the_schedule_rules(late: timedelta) -> None:
    now = END + late
    overrides = Overrides(debug_at=PRETEND_AT, debug_until=END)
    verdict = decide(now, cn_schedule(), overrides=overrides)
    plain = decide(now, cn_schedule())
    assert verdict == plain
    assert verdict.state is State.ON_DUTY
    assert verdict.action is Action.PASS
    assert verdict.at == now
    assert (verdict.debug_at, verdict.debug_until) == (None, None)
    assert "pretending" not in verdict.reason


def test_one_instant_before_the_end_it_still_pretends() -> None:
    now = END - timedelta(microseconds=1)
    verdict = decide(now, cn_schedule(), overrides=Overrides(debug_at=PRETEND_AT, debug_until=END))
    assert verdict.state is State.WINDING
    assert verdict.valid_until == END


def test_an_end_in_another_zone_is_the_same_instant() -> None:
    overrides = Overrides(debug_at=PRETEND_AT, debug_until=END.astimezone(UTC))
    assert decide(END - timedelta(seconds=1), cn_schedule(), overrides=overrides).debug_at
    assert decide(END, cn_schedule(), overrides=overrides).debug_at is None


def test_a_time_machine_without_an_end_is_still_read() -> None:
    """``debug_until=None`` (the engine's default) keeps the old meaning: until cleared."""
    verdict = decide(TUE_20, cn_schedule(), overrides=Overrides(debug_at=PRETEND_AT))
    assert (verdict.debug_at, verdict.debug_until) == (PRETEND_AT, None)
    assert verdict.valid_until == TUE_20 + timedelta(hours=24)


def test_debug_at_now() -> None:
    overrides = Overrides(debug_at=PRETEND_AT, debug_until=END)
    assert overrides.debug_at_now(TUE_20) == PRETEND_AT
    assert overrides.debug_at_now(END) is None
    assert Overrides().debug_at_now(TUE_20) is None


def test_the_parsers_errors_keep_their_template_and_parameters() -> None:
    """The engine cannot import ``Message``; its errors carry what a door needs
    to say them again in the reader's language, and the same English text."""
    with pytest.raises(OverrideError) as refused:
        parse_duration("forever")
    error = refused.value
    assert str(error) == (
        "'forever' is not a duration; use e.g. 30m, 2h, 90s, 1h30m or a number of minutes"
    )
    assert error.template.startswith("%(text)s is not a duration")
    assert error.params == {"text": "'forever'"}
