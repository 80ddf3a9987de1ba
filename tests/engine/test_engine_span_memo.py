"""A verdict asked again a moment later (``decide``'s ``_Span``): a gateway
asks many times a second, and between two moments of one local minute on the
same side of every edge and step the schedule reads the same, so the last
verdict per (schedule, request, overrides) is reused with the new instant,
progress and horizon. Every answer must still be the first principles' own
(``curfew_testkit.engine_reference``), field for field, however the moments
come: microseconds apart, across minutes, percents, steps, edges and offset
changes, backwards; and a new schedule object (a saved edit) or other
overrides are never answered from another's memo.
"""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from engine_support import PROPERTY, TICK, cn_schedule
from hypothesis import given
from hypothesis import strategies as st
from test_engine_fast_path import fields, same_verdict
from test_engine_properties import INSTANTS, REQUESTS, near_an_offset_change, schedules

from curfew_core.engine import Curve, Overrides, RequestContext, Schedule, Verdict, decide

decide_module = sys.modules["curfew_core.engine.decide"]

#: Steps from a microsecond to a few minutes, mostly small (a busy gateway).
STEPS = st.one_of(
    st.timedeltas(min_value=TICK, max_value=timedelta(milliseconds=5)),
    st.timedeltas(min_value=TICK, max_value=timedelta(seconds=40)),
    st.timedeltas(min_value=TICK, max_value=timedelta(minutes=7)),
    st.timedeltas(min_value=timedelta(minutes=-3), max_value=timedelta(0)),
)


@PROPERTY
@given(
    schedule=schedules(),
    start=INSTANTS,
    steps=st.lists(STEPS, min_size=1, max_size=40),
    request=REQUESTS,
    forced=st.one_of(st.none(), st.timedeltas(timedelta(minutes=-5), timedelta(hours=3))),
)
def test_moments_after_moments_decide_as_the_first_principles(
    schedule: Schedule,
    start: datetime,
    steps: list[timedelta],
    request: RequestContext,
    forced: timedelta | None,
) -> None:
    overrides = Overrides(forced_off_until=None if forced is None else start + forced)
    moment = start
    for step in steps:
        verdict = same_verdict(moment, schedule, request, overrides)
        # And on each side of the verdict's own end.
        same_verdict(verdict.valid_until - TICK, schedule, request, overrides)
        same_verdict(verdict.valid_until, schedule, request, overrides)
        moment += step


@PROPERTY
@given(case=near_an_offset_change(), steps=st.lists(STEPS, min_size=1, max_size=30))
def test_moments_around_offset_changes_decide_as_the_first_principles(
    case: tuple[Schedule, datetime], steps: list[timedelta]
) -> None:
    schedule, moment = case
    moment = moment.astimezone(UTC)
    for step in steps:
        same_verdict(moment, schedule)
        moment += step


@pytest.mark.parametrize("curve", list(Curve))
def test_a_winding_night_second_by_second_as_the_first_principles(curve: Curve) -> None:
    # Every second and a bit of winding: the percent and the budget move on
    # many times, each within one span and across them.
    schedule = cn_schedule(curve=curve, tier_texts=("one", "two", "three"))
    moment = datetime(2026, 9, 29, 14, 58, tzinfo=UTC)  # 22:58 in Shanghai
    while moment < datetime(2026, 9, 29, 15, 40, tzinfo=UTC):
        same_verdict(moment, schedule)
        moment += timedelta(seconds=1, microseconds=70_001)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    real = decide_module._decide
    calls: list[datetime] = []

    def counting(now: datetime, *args: Any) -> Any:
        calls.append(now)
        return real(now, *args)

    monkeypatch.setattr(decide_module, "_decide", counting)
    return calls


def test_a_moment_later_is_answered_from_the_last_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    schedule = cn_schedule()
    start = datetime(2026, 9, 29, 15, 10, 0, 5, tzinfo=UTC)  # winding in Shanghai
    first = same_verdict(start, schedule)
    assert first.progress is not None
    later = same_verdict(start + timedelta(milliseconds=3), schedule)
    assert len(calls) == 1  # the second from the span
    assert later.progress is not None
    assert later.progress > first.progress
    assert later.at == start + timedelta(milliseconds=3)
    # The next local minute (a new reason) is worked out again.
    same_verdict(start + timedelta(minutes=1), schedule)
    assert len(calls) == 2
    # So is an instant in another zone, and one before the span.
    same_verdict(start.astimezone(schedule.timezone) + timedelta(minutes=1, seconds=1), schedule)
    same_verdict(start + timedelta(seconds=59), schedule)
    assert len(calls) == 4


def test_another_schedule_or_other_overrides_are_never_answered_from_a_memo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    now = datetime(2026, 9, 29, 15, 10, tzinfo=UTC)
    old = cn_schedule()
    edited = cn_schedule(enabled=False)  # a saved edit is a new schedule object
    assert same_verdict(now, old).state != same_verdict(now + TICK, edited).state
    assert len(calls) == 2
    same_verdict(now + 2 * TICK, edited)
    forced = Overrides(forced_off_until=now + timedelta(hours=1))
    assert same_verdict(now + 3 * TICK, old, overrides=forced).override == "off"
    assert len(calls) == 3


def test_a_verdict_from_the_memo_has_its_own_would() -> None:
    schedule = cn_schedule(dry_run=True)
    now = datetime(2026, 9, 29, 15, 10, tzinfo=UTC)
    first = decide(now, schedule)
    assert first.would is not None
    first.would["action"] = "changed by a caller"
    again = decide(now + TICK, schedule)
    assert again.would is not None
    assert again.would["action"] == "clamp"
    assert fields(again) == fields(decide_module._decide(now + TICK, schedule, *DEFAULTS))


DEFAULTS = (decide_module._DEFAULT_REQUEST, decide_module._NO_OVERRIDES)


def test_the_span_memo_stays_bounded() -> None:
    schedule = cn_schedule()
    now = datetime(2026, 9, 29, 3, 0, tzinfo=UTC)
    for n in range(decide_module._SPANS_KEPT + 10):
        decide(now, schedule, RequestContext(max_tokens=n + 1))
    assert len(decide_module._spans) <= decide_module._SPANS_KEPT


@PROPERTY
@given(
    now=INSTANTS,
    schedule=schedules(),
    request=REQUESTS,
    forced=st.one_of(st.none(), st.timedeltas(timedelta(minutes=-5), timedelta(hours=3))),
)
def test_a_verdict_made_without_the_frozen_init_is_the_same_verdict(
    now: datetime, schedule: Schedule, request: RequestContext, forced: timedelta | None
) -> None:
    overrides = Overrides(forced_off_until=None if forced is None else now + forced)
    made = decide_module._decide(now, schedule, request, overrides)
    values = {field.name: getattr(made, field.name) for field in dataclasses.fields(made)}
    built = Verdict(**values)
    assert made == built
    assert fields(made) == fields(built)
    if made.would is None:  # a dry run's dict is not hashable, either way
        assert hash(made) == hash(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.state = built.state  # type: ignore[misc]
