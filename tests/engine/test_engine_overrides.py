"""Overrides (overtime, force-off, time machine) and the parsing of their arguments."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from engine_support import SHANGHAI, cn_schedule, local

from curfew_core.engine import (
    Action,
    OverrideError,
    Overrides,
    State,
    decide,
    parse_debug_moment,
    parse_duration,
)

TUE_10 = local(2026, 9, 29, 10, 0)  # peak; the peak gate next changes at 12:00
TUE_20 = local(2026, 9, 29, 20, 0)  # on duty; the curfew starts at 23:00
TUE_2330 = local(2026, 9, 29, 23, 30)  # winding, budget 1824


# -- overtime ------------------------------------------------------------------------


def test_overtime_suspends_the_curfew_and_says_what_the_schedule_says() -> None:
    until = TUE_2330 + timedelta(minutes=30)
    verdict = decide(TUE_2330, cn_schedule(), overrides=Overrides(overtime_until=until))
    assert verdict.state is State.ON_DUTY
    assert verdict.schedule_state is State.WINDING
    assert verdict.override == "overtime"
    assert verdict.override_until == until
    assert verdict.action is Action.PASS
    assert (verdict.reply, verdict.max_tokens, verdict.persona) == (None, None, None)
    assert verdict.valid_until <= until
    assert "overtime until 00:00" in verdict.reason


def test_overtime_valid_until_is_its_expiry_when_the_schedule_is_steady() -> None:
    until = TUE_10 + timedelta(minutes=30)
    verdict = decide(TUE_10, cn_schedule(), overrides=Overrides(overtime_until=until))
    assert verdict.state is State.ON_DUTY
    assert verdict.schedule_state is State.OFF_DUTY
    assert verdict.valid_until == until
    after = decide(until, cn_schedule(), overrides=Overrides(overtime_until=until))
    assert after.state is State.OFF_DUTY
    assert after.override is None
    assert after.reply == "。"


def test_expired_overtime_is_ignored() -> None:
    past = TUE_10 - timedelta(seconds=1)
    verdict = decide(TUE_10, cn_schedule(), overrides=Overrides(overtime_until=past))
    assert verdict.state is State.OFF_DUTY
    assert verdict.override is None
    assert verdict.override_until is None


# -- force off -----------------------------------------------------------------------


def test_force_off_is_lights_out_until_its_expiry() -> None:
    until = TUE_20 + timedelta(hours=1)
    verdict = decide(TUE_20, cn_schedule(), overrides=Overrides(forced_off_until=until))
    assert verdict.state is State.LIGHTS_OUT
    assert verdict.schedule_state is State.ON_DUTY
    assert verdict.override == "off"
    assert verdict.action is Action.SHORT_CIRCUIT
    assert verdict.reply == "明天再说。"
    assert verdict.tools == "deny"
    # The schedule's next edge is 23:00; the override expires first.
    assert verdict.valid_until == until
    assert decide(until, cn_schedule(), overrides=Overrides(forced_off_until=until)).state is (
        State.ON_DUTY
    )


def test_force_off_beats_overtime() -> None:
    overrides = Overrides(
        overtime_until=TUE_20 + timedelta(hours=2), forced_off_until=TUE_20 + timedelta(hours=1)
    )
    verdict = decide(TUE_20, cn_schedule(), overrides=overrides)
    assert verdict.override == "off"
    assert verdict.state is State.LIGHTS_OUT
    assert verdict.valid_until <= TUE_20 + timedelta(hours=1)


def test_disabled_ignores_overrides() -> None:
    until = TUE_20 + timedelta(hours=1)
    verdict = decide(
        TUE_20, cn_schedule(enabled=False), overrides=Overrides(forced_off_until=until)
    )
    assert verdict.state is State.ON_DUTY
    assert verdict.override is None
    assert verdict.action is Action.PASS


def test_override_expiry_compared_as_a_real_instant() -> None:
    # The same expiry written in another zone is the same instant.
    until = (TUE_20 + timedelta(hours=1)).astimezone(timezone(timedelta(hours=-7)))
    overrides = Overrides(forced_off_until=until)
    verdict = decide(TUE_20.astimezone(UTC), cn_schedule(), overrides=overrides)
    assert verdict.override == "off"
    assert verdict.valid_until == until


# -- time machine --------------------------------------------------------------------


def test_time_machine_reads_the_schedule_at_another_moment() -> None:
    debug = local(2026, 9, 30, 1, 30)
    verdict = decide(TUE_20, cn_schedule(), overrides=Overrides(debug_at=debug))
    assert verdict.state is State.WINDING
    assert verdict.max_tokens == 560
    assert verdict.at == debug
    assert verdict.debug_at == debug
    assert "2026-09-30 01:30" in verdict.reason
    assert "pretending" in verdict.reason
    # Only real-time limits: nothing but the 24h horizon here.
    assert verdict.valid_until == TUE_20 + timedelta(hours=24)


def test_time_machine_valid_until_bounded_by_real_override_expiry() -> None:
    until = TUE_20 + timedelta(minutes=45)
    overrides = Overrides(overtime_until=until, debug_at=local(2026, 9, 30, 3, 30))
    verdict = decide(TUE_20, cn_schedule(), overrides=overrides)
    # Overtime is measured against the real now, and still holds.
    assert verdict.state is State.ON_DUTY
    assert verdict.schedule_state is State.LIGHTS_OUT
    assert verdict.valid_until == until
    later = decide(until, cn_schedule(), overrides=overrides)
    assert later.state is State.LIGHTS_OUT


# -- parse_duration ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("90s", timedelta(seconds=90)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1h 30m", timedelta(hours=1, minutes=30)),
        ("45", timedelta(minutes=45)),
        (" 2H ", timedelta(hours=2)),
        ("1s", timedelta(seconds=1)),
        ("24h", timedelta(hours=24)),
        ("1440", timedelta(hours=24)),
        ("23h59m59s", timedelta(hours=23, minutes=59, seconds=59)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "0",
        "0m",
        "0s",
        "-5",
        "1.5h",
        "25h",
        "24h1s",
        "1441",
        "abc",
        "m",
        "30x",
        "h30",
        "30m1h",
        "²",  # a digit to str.isdigit, not a number to int()
        "99999999999999999999",  # overflows timedelta
        "99999999999999999999h",
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(OverrideError):
        parse_duration(text)


# -- parse_debug_moment --------------------------------------------------------------

EVENING = local(2026, 9, 29, 20, 15, 30)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("23:30", local(2026, 9, 29, 23, 30)),  # later this evening
        ("01:30", local(2026, 9, 30, 1, 30)),  # after midnight: tonight
        ("20:00", local(2026, 9, 30, 20, 0)),  # already passed today: tomorrow
        ("20:15", local(2026, 9, 29, 20, 15)),  # the clock reads it right now
        ("2026-10-01 10:00", local(2026, 10, 1, 10, 0)),
        ("2026-10-01T10:00", local(2026, 10, 1, 10, 0)),
        ("2020-01-01 00:00", local(2020, 1, 1, 0, 0)),
        (
            "2026-10-01T10:00:00+00:00",
            datetime(2026, 10, 1, 10, 0, tzinfo=UTC),
        ),
    ],
)
def test_parse_debug_moment(text: str, expected: datetime) -> None:
    got = parse_debug_moment(text, now=EVENING, tz=SHANGHAI)
    assert got == expected
    assert got.tzinfo is not None


def test_parse_debug_moment_keeps_an_explicit_offset() -> None:
    got = parse_debug_moment("2026-10-01T10:00+05:30", now=EVENING, tz=SHANGHAI)
    assert got.utcoffset() == timedelta(hours=5, minutes=30)


def test_parse_debug_moment_reads_hh_mm_in_the_schedule_zone() -> None:
    # 20:15 in Shanghai is 12:15 UTC; "13:00" is tomorrow in Shanghai, not today in UTC.
    got = parse_debug_moment("13:00", now=EVENING.astimezone(UTC), tz=SHANGHAI)
    assert got == local(2026, 9, 30, 13, 0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "junk",
        "24:00",
        "7:30",
        "12:60",
        "2026-13-01 10:00",
        "2026-02-30 10:00",
        "tomorrow",
        "2026-10-01 10:00 please",
        "10:00pm",
    ],
)
def test_parse_debug_moment_rejects_junk(text: str) -> None:
    with pytest.raises(OverrideError):
        parse_debug_moment(text, now=EVENING, tz=SHANGHAI)
