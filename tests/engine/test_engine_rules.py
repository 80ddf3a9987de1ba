"""Every rule of the spec, one behaviour per test, expectations worked out by hand.

Default night: winding 23:00 -> 03:00 (240 minutes), lights-out until 09:00.
Default anchors 23:00 2048, 00:00 1600, 01:00 800, 02:00 320, 03:00 64, i.e.
at progress 0, 1/4, 1/2, 3/4, 1 through the window.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction

import pytest
from engine_support import CN, TICK, CNHolidays, cn_schedule, hm, local

from curfew_core.engine import (
    Action,
    Anchor,
    Curve,
    NightTimes,
    NoHolidays,
    RequestContext,
    Schedule,
    State,
    decide,
)
from curfew_core.engine.curve import round_half_away
from curfew_core.engine.decide import join_sentences
from curfew_core.engine.schedule import DEFAULT_PERSONA_ZH, DEFAULT_TIER_TEXTS_ZH

TUE = (2026, 9, 29)  # an ordinary Tuesday; the night runs into Wednesday 30th
WED = (2026, 9, 30)
SAT = (2026, 9, 26)


def tue(hour: int, minute: int = 0, second: int = 0, us: int = 0) -> datetime:
    return local(*TUE, hour, minute, second, us)


def night(hour: int, minute: int = 0, second: int = 0, us: int = 0) -> datetime:
    """Tuesday evening's night: hours before noon are Wednesday morning."""
    day = WED if hour < 12 else TUE
    return local(*day, hour, minute, second, us)


# -- curves ---------------------------------------------------------------------

DEFAULT_POINTS = [
    (Fraction(0), 2048),
    (Fraction(1, 4), 1600),
    (Fraction(1, 2), 800),
    (Fraction(3, 4), 320),
    (Fraction(1), 64),
]


def half_away(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2)) if x >= 0 else -math.floor(-x + Fraction(1, 2))


def oracle(curve: Curve, p: Fraction, points: list[tuple[Fraction, int]] = DEFAULT_POINTS) -> int:
    """The spec's curves in exact arithmetic (independent of the engine's code)."""
    (f0, v0), (fn, vn) = points[0], points[-1]
    if p <= f0:
        raw = Fraction(v0)
    elif p >= fn:
        raw = Fraction(vn)
    elif curve is Curve.EASE_IN:
        ratio = (p - f0) / (fn - f0)
        raw = v0 + (vn - v0) * ratio * ratio
    else:
        i = max(k for k in range(len(points) - 1) if points[k][0] <= p)
        (a, va), (b, vb) = points[i], points[i + 1]
        raw = Fraction(va) if curve is Curve.STEP else va + (vb - va) * (p - a) / (b - a)
    return half_away(raw)


LINEAR_BY_HAND = [
    ((23, 0), 2048),  # on the first anchor
    ((23, 15), 1936),  # 2048 - 448/4
    ((23, 30), 1824),  # 2048 - 448/2
    ((0, 0), 1600),  # on an anchor
    ((0, 45), 1000),  # 1600 - 800 * 3/4
    ((1, 0), 800),
    ((1, 30), 560),  # 800 - 480/2
    ((2, 0), 320),
    ((2, 15), 256),  # 320 - 256/4
    ((2, 59), 68),  # 320 - 256 * 59/60 = 68.27
]
STEP_BY_HAND = [
    ((23, 0), 2048),
    ((23, 59), 2048),  # held until the next anchor
    ((0, 0), 1600),
    ((0, 30), 1600),
    ((1, 0), 800),
    ((1, 59), 800),
    ((2, 0), 320),
    ((2, 59), 320),
]
# Ease-in: 2048 + (64 - 2048) * p**2 between the OUTER anchors only (inner ignored).
EASE_IN_BY_HAND = [
    ((23, 0), 2048),
    ((23, 20), 2034),  # p = 1/12: 2048 - 1984/144 = 2034.22
    ((23, 30), 2017),  # p = 1/8: 2048 - 31
    ((0, 0), 1924),  # p = 1/4: 2048 - 124 (not the 1600 anchor)
    ((1, 0), 1552),  # p = 1/2: 2048 - 496
    ((2, 0), 932),  # p = 3/4: 2048 - 1116
    ((2, 40), 381),  # p = 11/12: 2048 - 1984 * 121/144 = 380.89
]


@pytest.mark.parametrize(
    ("curve", "table"),
    [
        (Curve.LINEAR, LINEAR_BY_HAND),
        (Curve.STEP, STEP_BY_HAND),
        (Curve.EASE_IN, EASE_IN_BY_HAND),
    ],
)
def test_curve_values_by_hand(curve: Curve, table: list[tuple[tuple[int, int], int]]) -> None:
    schedule = cn_schedule(curve=curve)
    for (hour, minute), tokens in table:
        verdict = decide(night(hour, minute), schedule)
        assert verdict.state is State.WINDING, (hour, minute)
        assert verdict.budget == tokens, (curve, hour, minute)
        assert verdict.max_tokens == tokens, (curve, hour, minute)


@pytest.mark.parametrize("curve", list(Curve))
def test_curve_matches_exact_oracle_through_the_window(curve: Curve) -> None:
    schedule = cn_schedule(curve=curve)
    start = night(23, 0)
    window = 240 * 60
    for second in range(0, window, 7):
        verdict = decide(start + timedelta(seconds=second), schedule)
        expected = oracle(curve, Fraction(second, window))
        assert verdict.budget == expected, (curve, second)
        assert verdict.progress == pytest.approx(second / window)


def test_window_ends_in_lights_out_not_on_the_last_anchor() -> None:
    schedule = cn_schedule()
    assert decide(night(2, 59, 59, 999_999), schedule).state is State.WINDING
    assert decide(night(3, 0), schedule).state is State.LIGHTS_OUT


def test_rounding_is_half_away_from_zero() -> None:
    # Decreasing 101 -> 100 over the window: 100.5 at 01:00, banker's would say 100.
    down = cn_schedule(anchors=(Anchor(hm("23:00"), 101), Anchor(hm("03:00"), 100)))
    assert decide(night(1, 0), down).budget == 101
    assert decide(night(0, 0), down).budget == 101  # 100.75
    assert decide(night(2, 0), down).budget == 100  # 100.25
    # Increasing 100 -> 101: 100.5 at 01:00 goes up to 101 as well.
    up = cn_schedule(anchors=(Anchor(hm("23:00"), 100), Anchor(hm("03:00"), 101)))
    assert decide(night(1, 0), up).budget == 101
    assert decide(night(0, 0), up).budget == 100  # 100.25


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.5, 1), (1.5, 2), (2.5, 3), (100.5, 101), (2.4999, 2), (-0.5, -1), (-2.5, -3), (0.0, 0)],
)
def test_round_half_away(value: float, expected: int) -> None:
    assert round_half_away(value) == expected


# -- clamp -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [(None, 1824), (100, 100), (1823, 1823), (1824, 1824), (1825, 1824), (100_000, 1824)],
)
def test_clamp_is_min_and_never_raises(requested: int | None, expected: int) -> None:
    verdict = decide(night(23, 30), cn_schedule(), RequestContext(max_tokens=requested))
    assert verdict.action is Action.CLAMP
    assert verdict.budget == 1824
    assert verdict.max_tokens == expected
    if requested is not None:
        assert verdict.max_tokens <= requested


def test_on_duty_leaves_max_tokens_alone() -> None:
    verdict = decide(tue(20, 0), cn_schedule(), RequestContext(max_tokens=50))
    assert verdict.max_tokens is None
    assert verdict.action is Action.PASS


# -- persona tiers ----------------------------------------------------------------


def tier_of(persona: str | None, texts: tuple[str, ...]) -> int:
    assert persona is not None
    found = [i for i, text in enumerate(texts) if persona.endswith(text)]
    assert len(found) == 1, persona
    return found[0]


@pytest.mark.parametrize(
    ("moment", "tier"),
    [
        (night(23, 0), 0),
        (night(23, 59, 59, 999_999), 0),
        (night(0, 0), 1),
        (night(0, 59, 59, 999_999), 1),
        (night(1, 0), 2),
        (night(2, 0), 3),
        (night(2, 59, 59, 999_999), 3),
    ],
)
def test_default_four_tiers_split_the_window_in_hours(moment: datetime, tier: int) -> None:
    verdict = decide(moment, cn_schedule())
    assert verdict.persona is not None
    assert verdict.persona.startswith(DEFAULT_PERSONA_ZH)
    assert tier_of(verdict.persona, DEFAULT_TIER_TEXTS_ZH) == tier


@pytest.mark.parametrize("count", [1, 2, 3, 5, 6])
def test_tier_bands_are_equal_parts_of_the_window(count: int) -> None:
    texts = tuple(f"<tier {i}>" for i in range(count))
    schedule = cn_schedule(tier_texts=texts, tired_persona="sleepy")
    band = timedelta(minutes=240) / count
    start = night(23, 0)
    for k in range(count):
        edge = start + band * k
        assert tier_of(decide(edge, schedule).persona, texts) == k
        if k:
            assert tier_of(decide(edge - TICK, schedule).persona, texts) == k - 1
    assert tier_of(decide(night(2, 59, 59, 999_999), schedule).persona, texts) == count - 1


def test_persona_is_tired_persona_plus_tier_text() -> None:
    verdict = decide(night(23, 30), cn_schedule(tired_persona="P", tier_texts=("A", "B")))
    assert verdict.persona is not None
    assert verdict.persona.startswith("P")
    assert verdict.persona.endswith("A")
    assert "B" not in verdict.persona


def test_persona_only_while_winding() -> None:
    for moment in (tue(10, 0), tue(20, 0), night(3, 30)):
        assert decide(moment, cn_schedule()).persona is None


# -- tools and reasoning effort ---------------------------------------------------


def test_tools_denied_off_duty_and_lights_out_only_when_configured() -> None:
    deny = cn_schedule()
    allow = cn_schedule(deny_tools_when_off_duty=False)
    for moment in (tue(10, 0), night(3, 30)):
        assert decide(moment, deny).tools == "deny"
        assert decide(moment, allow).tools == "allow"
    for moment in (tue(20, 0), night(23, 30)):
        assert decide(moment, deny).tools == "allow"


def test_reasoning_effort_only_while_winding() -> None:
    schedule = cn_schedule(winding_reasoning_effort="low")
    assert decide(night(23, 30), schedule).reasoning_effort == "low"
    assert decide(night(1, 30), schedule).reasoning_effort == "low"
    for moment in (tue(10, 0), tue(20, 0), night(3, 30)):
        assert decide(moment, schedule).reasoning_effort is None
    assert decide(night(23, 30), cn_schedule()).reasoning_effort is None


# -- dry run ------------------------------------------------------------------------


def test_dry_run_never_acts_but_reports_what_it_would_do() -> None:
    schedule = cn_schedule(dry_run=True, winding_reasoning_effort="low")
    verdict = decide(night(23, 30), schedule, RequestContext(max_tokens=4000))
    assert verdict.state is State.WINDING
    assert verdict.dry_run
    assert verdict.action is Action.PASS
    assert (verdict.reply, verdict.max_tokens, verdict.persona) == (None, None, None)
    assert verdict.tools == "allow"
    assert verdict.reasoning_effort is None
    assert verdict.budget == 1824
    assert verdict.would is not None
    assert verdict.would["action"] == "clamp"
    assert verdict.would["max_tokens"] == 1824
    assert verdict.would["persona"]
    assert verdict.would["reasoning_effort"] == "low"


@pytest.mark.parametrize(("moment", "reply"), [(tue(10, 0), "。"), (night(3, 30), "明天再说。")])
def test_dry_run_short_circuit_is_only_reported(moment: datetime, reply: str) -> None:
    verdict = decide(moment, cn_schedule(dry_run=True))
    assert verdict.action is Action.PASS
    assert verdict.reply is None
    assert verdict.max_tokens is None
    assert verdict.tools == "allow"
    assert verdict.would is not None
    assert verdict.would["action"] == "short-circuit"
    assert verdict.would["reply"] == reply
    assert verdict.would["tools"] == "deny"
    # Control: the same moment without the dry run acts.
    acted = decide(moment, cn_schedule())
    assert acted.reply == reply
    assert acted.would is None
    assert not acted.dry_run


# -- scope: exemptions ----------------------------------------------------------------

EXEMPTIONS = [
    pytest.param(cn_schedule(), RequestContext(purpose="title"), RequestContext(), id="purpose"),
    pytest.param(
        cn_schedule(exempt_sessions=frozenset({"s-1"})),
        RequestContext(session_id="s-1"),
        RequestContext(session_id="s-2"),
        id="session",
    ),
    pytest.param(
        cn_schedule(apply_to_subagents=False),
        RequestContext(subagent=True),
        RequestContext(subagent=False),
        id="subagent-spared",
    ),
]


@pytest.mark.parametrize(("schedule", "exempt", "control"), EXEMPTIONS)
@pytest.mark.parametrize("moment", [tue(10, 0), night(23, 30), night(3, 30)], ids=str)
def test_exemptions_pass(
    schedule: Schedule, exempt: RequestContext, control: RequestContext, moment: datetime
) -> None:
    free = decide(moment, schedule, exempt)
    assert free.exempt
    assert free.action is Action.PASS
    assert (free.reply, free.max_tokens, free.persona) == (None, None, None)
    assert free.tools == "allow"
    bound = decide(moment, schedule, control)
    assert not bound.exempt
    assert bound.action is not Action.PASS
    assert free.state == bound.state


# -- scope: purposes are a per-user list, not any text ------------------------------

LIGHTS_OUT_4AM = night(4, 0)


def test_an_unlisted_purpose_is_acted_on_like_any_call() -> None:
    """The seed exempted any purpose at all; "anything" at 04:00 no longer passes."""
    verdict = decide(LIGHTS_OUT_4AM, cn_schedule(), RequestContext(purpose="anything"))
    assert verdict.state is State.LIGHTS_OUT
    assert not verdict.exempt
    assert verdict.action is Action.SHORT_CIRCUIT
    assert verdict.reply == "明天再说。"
    assert "purpose 'anything' is not exempt" in verdict.reason
    # Control: the same moment with no purpose at all is decided the same way.
    plain = decide(LIGHTS_OUT_4AM, cn_schedule())
    assert (plain.action, plain.reply, plain.tools) == (
        verdict.action,
        verdict.reply,
        verdict.tools,
    )


@pytest.mark.parametrize("purpose", ["title", "compaction", "summary", "Title", " title\t"])
def test_a_default_purpose_passes_at_four(purpose: str) -> None:
    verdict = decide(LIGHTS_OUT_4AM, cn_schedule(), RequestContext(purpose=purpose))
    assert verdict.state is State.LIGHTS_OUT
    assert verdict.exempt
    assert verdict.action is Action.PASS
    assert verdict.reply is None
    assert f"purpose {purpose.strip().lower()!r} is exempt" in verdict.reason


def test_a_user_who_removes_title_gets_it_short_circuited() -> None:
    schedule = cn_schedule(exempt_purposes=frozenset({"compaction", "summary"}))
    verdict = decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose="title"))
    assert not verdict.exempt
    assert verdict.action is Action.SHORT_CIRCUIT
    # Control: what is still listed still passes.
    kept = decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose="compaction"))
    assert kept.exempt
    assert kept.action is Action.PASS


@pytest.mark.parametrize("purpose", ["title", "compaction", "summary", "anything"])
def test_an_empty_list_exempts_no_purpose(purpose: str) -> None:
    schedule = cn_schedule(exempt_purposes=frozenset())
    verdict = decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose=purpose))
    assert not verdict.exempt
    assert verdict.action is Action.SHORT_CIRCUIT


def test_a_users_own_purpose_passes_and_the_defaults_are_only_defaults() -> None:
    schedule = cn_schedule(exempt_purposes=frozenset({"nightly-backup"}))
    assert decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose="nightly-backup")).exempt
    assert not decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose="title")).exempt


@pytest.mark.parametrize(
    "purpose",
    [
        "\u017fummary",  # "ſ": casefold() makes it "summary"
        "\u212a",  # Kelvin sign: lower() makes it "k"
        "ti tle",
        "title\n",
    ],
)
def test_only_an_exact_ascii_name_matches(purpose: str) -> None:
    schedule = cn_schedule(exempt_purposes=frozenset({"summary", "k", "title"}))
    verdict = decide(LIGHTS_OUT_4AM, schedule, RequestContext(purpose=purpose))
    assert not verdict.exempt
    assert verdict.action is Action.SHORT_CIRCUIT


def test_a_long_unlisted_purpose_is_cut_short_in_the_reason() -> None:
    verdict = decide(LIGHTS_OUT_4AM, cn_schedule(), RequestContext(purpose="x" * 200))
    assert not verdict.exempt
    assert "x" * 41 not in verdict.reason
    assert "x" * 39 + "…" in verdict.reason


def test_a_purpose_on_duty_is_not_mentioned() -> None:
    """On duty nothing is exempted from anything: the scope is not consulted."""
    verdict = decide(tue(20, 0), cn_schedule(), RequestContext(purpose="anything"))
    assert verdict.action is Action.PASS
    assert not verdict.exempt
    assert "purpose" not in verdict.reason


def test_subagents_bound_by_default() -> None:
    verdict = decide(tue(10, 0), cn_schedule(), RequestContext(subagent=True))
    assert not verdict.exempt
    assert verdict.action is Action.SHORT_CIRCUIT


# -- safety cap -------------------------------------------------------------------------


@pytest.mark.parametrize("moment", [tue(10, 0), night(3, 30)], ids=["off-duty", "lights-out"])
@pytest.mark.parametrize(("requested", "expected"), [(None, 256), (100, 100), (1000, 256)])
def test_safety_cap_when_short_circuiting(
    moment: datetime, requested: int | None, expected: int
) -> None:
    request = RequestContext(max_tokens=requested)
    verdict = decide(moment, cn_schedule(safety_max_tokens=256), request)
    assert verdict.action is Action.SHORT_CIRCUIT
    assert verdict.max_tokens == expected


def test_safety_cap_only_when_set_and_only_off_duty() -> None:
    assert decide(tue(10, 0), cn_schedule()).max_tokens is None
    assert decide(night(3, 30), cn_schedule(), RequestContext(max_tokens=10)).max_tokens is None
    capped = cn_schedule(safety_max_tokens=256)
    assert decide(night(23, 30), capped).max_tokens == 1824  # winding: the curve, not the cap
    assert decide(tue(20, 0), capped).max_tokens is None  # on duty: untouched


# -- switches -----------------------------------------------------------------------------


@pytest.mark.parametrize("moment", [tue(10, 0), tue(20, 0), night(23, 30), night(3, 30)], ids=str)
def test_disabled_is_always_on_duty(moment: datetime) -> None:
    verdict = decide(moment, cn_schedule(enabled=False), RequestContext(max_tokens=10))
    assert verdict.state is State.ON_DUTY
    assert verdict.schedule_state is State.ON_DUTY
    assert verdict.action is Action.PASS
    assert (verdict.reply, verdict.max_tokens, verdict.persona) == (None, None, None)
    assert verdict.tools == "allow"
    assert not verdict.peak
    assert verdict.valid_until > moment


def test_peak_shift_off_switches_the_peak_gate_off_only() -> None:
    schedule = cn_schedule(peak_shift=False)
    assert decide(tue(10, 0), schedule).state is State.ON_DUTY
    assert not decide(tue(10, 0), schedule).peak
    assert decide(night(23, 30), schedule).budget == 1824
    assert decide(night(3, 30), schedule).state is State.LIGHTS_OUT


def test_weekend_valley_off_makes_saturday_peak() -> None:
    saturday_ten = local(*SAT, 10, 0)
    assert decide(saturday_ten, cn_schedule()).state is State.ON_DUTY
    verdict = decide(saturday_ten, cn_schedule(weekend_valley=False))
    assert verdict.state is State.OFF_DUTY
    assert verdict.peak


def test_peak_window_edges_are_half_open() -> None:
    schedule = cn_schedule()
    assert decide(night(8, 59, 59, 999_999), schedule).state is State.LIGHTS_OUT
    assert decide(night(9, 0), schedule).state is State.OFF_DUTY  # lights-out ends, peak starts
    assert decide(night(11, 59, 59, 999_999), schedule).state is State.OFF_DUTY
    assert decide(tue(12, 0), schedule).state is State.ON_DUTY
    assert decide(tue(14, 0), schedule).state is State.OFF_DUTY
    assert decide(tue(18, 0), schedule).state is State.ON_DUTY


# -- holidays ---------------------------------------------------------------------------


def test_holiday_lookup_makes_a_valley_day() -> None:
    national_day = local(2026, 10, 1, 10, 0)
    assert decide(national_day, Schedule()).state is State.OFF_DUTY  # NoHolidays default
    verdict = decide(national_day, cn_schedule())
    assert verdict.state is State.ON_DUTY
    assert "National Day" in verdict.reason
    # Substituted day off (a Wednesday in the package's CN calendar).
    assert decide(local(2026, 10, 7, 10, 0), cn_schedule()).state is State.ON_DUTY
    assert decide(local(2026, 10, 8, 10, 0), cn_schedule()).state is State.OFF_DUTY


def test_extra_holiday() -> None:
    schedule = cn_schedule(holidays=CNHolidays(extra=[date(*TUE)]))
    verdict = decide(tue(10, 0), schedule)
    assert verdict.state is State.ON_DUTY
    assert "personal holiday" in verdict.reason
    assert decide(local(*WED, 10, 0), schedule).state is State.OFF_DUTY


def test_holiday_does_not_lift_the_curfew() -> None:
    schedule = cn_schedule()
    assert decide(local(2026, 10, 1, 23, 30), schedule).budget == 1824
    assert decide(local(2026, 10, 2, 3, 30), schedule).state is State.LIGHTS_OUT


def test_no_holidays_lookup() -> None:
    assert NoHolidays().holiday_name(date(2026, 10, 1)) is None
    assert CN.holiday_name(date(2026, 10, 1)) is not None


# -- wrapping windows ------------------------------------------------------------------------


def test_wrapping_peak_window_belongs_to_the_day_it_starts_on() -> None:
    schedule = cn_schedule(peak_windows=((hm("22:00"), hm("02:00")),))
    # An ordinary weekend (2026-10-10 before it is a make-up workday).
    fri, sat, sun, mon = (2026, 10, 16), (2026, 10, 17), (2026, 10, 18), (2026, 10, 19)
    assert decide(local(*fri, 21, 59), schedule).state is State.ON_DUTY
    assert decide(local(*fri, 22, 30), schedule).state is State.OFF_DUTY
    # Friday's window runs on into (valley) Saturday and beats the winding gate.
    late = decide(local(*sat, 1, 30), schedule)
    assert late.state is State.OFF_DUTY
    assert late.peak
    assert decide(local(*sat, 2, 0), schedule).budget == 320
    # Saturday's own window does not exist (weekend valley), nor Sunday's on Monday.
    assert decide(local(*sat, 22, 30), schedule).state is State.ON_DUTY
    assert decide(local(*sun, 1, 30), schedule).state is State.WINDING
    assert decide(local(*mon, 1, 30), schedule).state is State.WINDING
    assert decide(local(*mon, 22, 30), schedule).state is State.OFF_DUTY


def test_night_without_midnight_wrap_in_winding() -> None:
    schedule = cn_schedule(
        night=NightTimes(hm("21:00"), hm("23:00"), hm("07:00")),
        anchors=(Anchor(hm("21:00"), 1000), Anchor(hm("23:00"), 100)),
    )
    assert decide(tue(20, 59), schedule).state is State.ON_DUTY
    assert decide(tue(22, 0), schedule).budget == 550
    assert decide(night(23, 0), schedule).state is State.LIGHTS_OUT
    assert decide(night(6, 59), schedule).state is State.LIGHTS_OUT
    assert decide(night(7, 0), schedule).state is State.ON_DUTY


def test_curfew_after_midnight_belongs_to_the_evening_before() -> None:
    schedule = cn_schedule(
        night=NightTimes(hm("00:30"), hm("02:30"), hm("09:00")),
        anchors=(Anchor(hm("00:30"), 1000), Anchor(hm("02:30"), 200)),
    )
    assert decide(night(23, 30), schedule).state is State.ON_DUTY
    assert decide(night(0, 29), schedule).state is State.ON_DUTY
    assert decide(night(0, 30), schedule).budget == 1000
    assert decide(night(1, 30), schedule).budget == 600
    assert decide(night(2, 30), schedule).state is State.LIGHTS_OUT
    assert decide(night(9, 0), schedule).state is State.OFF_DUTY


def test_zero_length_window_goes_straight_to_lights_out() -> None:
    schedule = cn_schedule(night=NightTimes(hm("23:00"), hm("23:00"), hm("09:00")))
    assert decide(tue(22, 59, 59, 999_999), schedule).state is State.ON_DUTY
    at_curfew = decide(night(23, 0), schedule)
    assert at_curfew.state is State.LIGHTS_OUT
    assert at_curfew.reply == "明天再说。"
    for moment in (night(23, 30), night(1, 0), night(8, 59)):
        assert decide(moment, schedule).state is State.LIGHTS_OUT
    assert decide(night(9, 0), schedule).state is State.OFF_DUTY
    # Never winding in the whole day.
    start = tue(12, 0)
    states = {decide(start + timedelta(minutes=m), schedule).state for m in range(0, 1440, 5)}
    assert State.WINDING not in states


def test_zero_length_peak_window_is_empty() -> None:
    schedule = cn_schedule(peak_windows=((hm("10:00"), hm("10:00")),))
    assert decide(tue(10, 0), schedule).state is State.ON_DUTY


# -- per-weekday nights ------------------------------------------------------------------------

FRIDAY_LATE = {4: NightTimes(hm("01:00"), hm("03:00"), hm("10:00"))}
# An ordinary weekend (2026-10-10 before it is a make-up workday, with peak hours).
THU, FRI, SAT_AFTER = (2026, 10, 15), (2026, 10, 16), (2026, 10, 17)


def test_friday_night_starts_after_midnight_and_sleeps_in() -> None:
    schedule = cn_schedule(weekdays=FRIDAY_LATE)
    assert decide(local(*FRI, 23, 30), schedule).state is State.ON_DUTY
    assert decide(local(*SAT_AFTER, 0, 30), schedule).state is State.ON_DUTY
    assert decide(local(*SAT_AFTER, 1, 0), schedule).budget == 2048
    # The default anchors stretched onto 01:00-03:00: 00:00's 1600 now sits at 01:30.
    assert decide(local(*SAT_AFTER, 1, 30), schedule).budget == 1600
    assert decide(local(*SAT_AFTER, 1, 15), schedule).budget == 1824
    assert decide(local(*SAT_AFTER, 2, 30), schedule).budget == 320
    assert decide(local(*SAT_AFTER, 3, 0), schedule).state is State.LIGHTS_OUT
    assert decide(local(*SAT_AFTER, 9, 30), schedule).state is State.LIGHTS_OUT
    assert decide(local(*SAT_AFTER, 10, 0), schedule).state is State.ON_DUTY


def test_friday_night_tiers_stretch_too() -> None:
    schedule = cn_schedule(weekdays=FRIDAY_LATE)
    texts = DEFAULT_TIER_TEXTS_ZH
    assert tier_of(decide(local(*SAT_AFTER, 1, 29), schedule).persona, texts) == 0
    assert tier_of(decide(local(*SAT_AFTER, 1, 30), schedule).persona, texts) == 1
    assert tier_of(decide(local(*SAT_AFTER, 2, 30), schedule).persona, texts) == 3


def test_other_weekdays_unaffected_by_friday() -> None:
    schedule = cn_schedule(weekdays=FRIDAY_LATE)
    assert decide(local(*THU, 23, 30), schedule).budget == 1824
    assert decide(local(*FRI, 3, 10), schedule).state is State.LIGHTS_OUT
    assert decide(local(*FRI, 9, 0), schedule).state is State.OFF_DUTY
    assert decide(local(2026, 10, 18, 0, 0), schedule).budget == 1600  # Saturday's night


# -- reason ------------------------------------------------------------------------------------


def test_reason_names_the_local_moment_and_the_rule() -> None:
    peak = decide(tue(10, 0), cn_schedule())
    assert "peak hours" in peak.reason
    assert "2026-09-29 10:00" in peak.reason
    dark = decide(night(3, 30), cn_schedule())
    assert "lights out" in dark.reason
    assert "2026-09-30 03:30" in dark.reason
    assert "09:00" in dark.reason


def test_reason_is_local_even_for_a_utc_instant() -> None:
    verdict = decide(tue(10, 0).astimezone(UTC), cn_schedule())
    assert "2026-09-29 10:00" in verdict.reason
    assert "peak hours" in verdict.reason


def test_naive_instant_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        decide(datetime(2026, 9, 29, 10, 0), cn_schedule())  # noqa: DTZ001


# -- persona and tier text, joined as the language writes it -----------------------


def test_a_chinese_persona_and_tier_join_without_a_stray_space() -> None:
    # The default persona ends in 。: the tier follows with no gap (was "打断。 正常回答").
    verdict = decide(night(23, 30), cn_schedule())
    assert verdict.persona == DEFAULT_PERSONA_ZH + DEFAULT_TIER_TEXTS_ZH[0]
    assert "。 " not in verdict.persona


def test_a_latin_persona_and_tier_keep_their_space() -> None:
    schedule = cn_schedule(tired_persona="You are sleepy.", tier_texts=("Be brief.",))
    assert decide(night(23, 30), schedule).persona == "You are sleepy. Be brief."


@pytest.mark.parametrize(
    ("parts", "joined"),
    [
        (("夜深了。", "正常回答"), "夜深了。正常回答"),
        (("夜深了！", "简短"), "夜深了！简短"),
        (("困了", "简短"), "困了简短"),
        (("Tired.", "Short."), "Tired. Short."),
        (("Tired.", "正常回答"), "Tired. 正常回答"),
        (("夜深了。", "Be brief."), "夜深了。Be brief."),
        (("Tired. ", "Short."), "Tired. Short."),
        (("", "正常回答"), "正常回答"),
        (("Tired.", ""), "Tired."),
        (("", ""), ""),
    ],
)
def test_join_sentences(parts: tuple[str, str], joined: str) -> None:
    assert join_sentences(*parts) == joined
