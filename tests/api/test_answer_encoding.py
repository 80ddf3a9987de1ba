"""The hot answers' bytes are the wire models' own, without building them.

``verdict_json`` and ``bundle_state_json`` write the verdict and state answers
with the standard library's encoder instead of ``model_dump_json`` (a fifth of
a warm verdict's work was building and dumping the model). Here they are held
byte for byte to the models' output: over every kind of verdict, over a week
of instants for several schedules, and over generated verdicts with any value
the wire allows (and some it does not: those must take the model's path and
answer, or fail, exactly as it does).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, get_args
from zoneinfo import ZoneInfo

import pytest
from curfew_client.wire import ReasoningEffort
from django.test import override_settings as django_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curfew_core.engine import Action, Overrides, RequestContext, State, Verdict, decide
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors import verdicts
from curfew_core.selectors.bundles import UserBundle
from curfew_core.selectors.verdicts import (
    bundle_state_json,
    decide_for,
    max_age,
    verdict_answer,
    verdict_json,
)
from tests.api.test_wire_contract import kinds

SHANGHAI = ZoneInfo("Asia/Shanghai")
START = datetime(2026, 9, 28, 0, 0, tzinfo=SHANGHAI)

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "dry run": {"dry_run": True},
    "lights-out reply": {"lights_out_reply": 'Zzz "quoted" \\ \n\t\u0001 夜'},
    "elsewhere": {"timezone": "America/St_Johns", "winding_reasoning_effort": "low"},
    "disabled": {"enabled": False},
}


def model_verdict(verdict: Verdict, now: datetime, timezone: str | None = None) -> bytes:
    """What the answer was before: the model, dumped."""
    answer = verdict_answer(verdict, max_age=max_age(verdict, now=now), timezone=timezone)
    return answer.model_dump_json().encode()


def model_state(verdict: Verdict, bundle: UserBundle, now: datetime) -> bytes:
    return verdicts._state_answer(verdict, bundle, now=now).model_dump_json().encode()


def bundle(config: dict[str, Any], overrides: Overrides | None = None) -> UserBundle:
    full = schedule_config.with_defaults(config)
    return UserBundle(
        user_id=1,
        version=1,
        config=full,
        schedule=schedule_config.build(full),
        overrides=overrides or Overrides(None, None, None),
    )


@pytest.mark.parametrize("kind", list(kinds()))
def test_every_kind_of_verdict_is_written_as_the_model_writes_it(kind: str) -> None:
    verdict = kinds()[kind]
    for now in (verdict.at, verdict.at - timedelta(hours=3), verdict.valid_until):
        assert verdict_json(verdict, now=now) == model_verdict(verdict, now)
        # The user's zone (issue 42), and the fixed parts kept per zone.
        for zone in ("Asia/Shanghai", "Europe/Paris", 'Odd/"Zone\\'):
            written = verdict_json(verdict, now=now, timezone=zone)
            assert written == model_verdict(verdict, now, zone)
            assert json.loads(written)["timezone"] == zone


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_week_of_verdicts_and_states_is_written_as_the_models_write_them(name: str) -> None:
    overrides = [
        Overrides(None, None, None),
        Overrides(START + timedelta(days=2, hours=23), None, None),
        Overrides(None, START + timedelta(days=4, hours=22), None),
    ]
    requests = [RequestContext(max_tokens=4096), RequestContext(purpose="title")]
    seen = set()
    for case, override in enumerate(overrides):
        mine = bundle(CONFIGS[name], override)
        for step in range(0, 8 * 24 * 60, 23):
            now = START + timedelta(minutes=step)
            request = requests[step % len(requests)]
            verdict, _ = decide_for(mine, now=now, request=request)
            seen.add((verdict.state, verdict.action, case))
            zone = mine.config["timezone"]
            written = verdict_json(verdict, now=now, timezone=zone)
            assert written == model_verdict(verdict, now, zone)
            state, _ = decide_for(mine, now=now)
            assert bundle_state_json(mine, now=now) == model_state(state, mine, now)
    assert len(seen) >= 3


# -- generated verdicts ------------------------------------------------------------------

ZONES = st.one_of(
    st.sampled_from([UTC, SHANGHAI, ZoneInfo("America/St_Johns"), ZoneInfo("Asia/Kathmandu")]),
    st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(timezone),
)
INSTANTS = st.datetimes(
    min_value=datetime(1971, 1, 1),  # noqa: DTZ001 - bounds of an aware strategy
    max_value=datetime(2999, 12, 31),  # noqa: DTZ001
    timezones=ZONES,
)
#: Any text: quotes, backslashes, control characters, any script.
TEXT = st.text(max_size=30)
EFFORTS = st.one_of(st.none(), st.sampled_from(get_args(ReasoningEffort)))
INTS = st.one_of(st.none(), st.integers(), st.integers(0, 100_000))
PROGRESS = st.one_of(st.none(), st.floats(0, 1), st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def wire_verdicts(draw: st.DrawFn) -> Verdict:
    action = draw(st.sampled_from(list(Action)))
    reply = draw(st.one_of(st.none(), TEXT))
    would = None
    if draw(st.booleans()):
        would = {
            "action": draw(st.sampled_from([a.value for a in Action])),
            "reply": draw(st.one_of(st.none(), TEXT)),
            "max_tokens": draw(INTS),
            "persona": draw(st.one_of(st.none(), TEXT)),
            "tools": draw(st.sampled_from(["allow", "deny"])),
            "reasoning_effort": draw(EFFORTS),
        }
    return Verdict(
        state=draw(st.sampled_from(list(State))),
        schedule_state=draw(st.sampled_from(list(State))),
        action=action,
        reply=reply,
        max_tokens=draw(INTS),
        persona=draw(st.one_of(st.none(), TEXT)),
        tools=draw(st.sampled_from(["allow", "deny"])),
        reasoning_effort=draw(EFFORTS),
        progress=draw(PROGRESS),
        peak=draw(st.booleans()),
        reason=draw(TEXT),
        exempt=draw(st.booleans()),
        dry_run=draw(st.booleans()),
        valid_until=draw(INSTANTS),
        at=draw(INSTANTS),
        budget=draw(INTS),
        override=draw(st.sampled_from([None, "overtime", "off"])),
        override_until=draw(st.one_of(st.none(), INSTANTS)),
        debug_at=draw(st.one_of(st.none(), INSTANTS)),
        debug_until=draw(st.one_of(st.none(), INSTANTS)),
        would=would,
    )


GENERATED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same_outcome(fast: Any, model: Any) -> None:
    """Both write the same bytes, or both fail with the same error."""
    try:
        expected = model()
    except Exception as exc:
        with pytest.raises(type(exc)):
            fast()
        return
    assert fast() == expected


@GENERATED
@given(
    verdict=wire_verdicts(),
    ahead=st.timedeltas(timedelta(hours=-2), timedelta(days=2)),
    zone=st.one_of(st.none(), TEXT),
)
def test_any_verdict_is_written_as_the_model_writes_it(
    verdict: Verdict, ahead: timedelta, zone: str | None
) -> None:
    now = verdict.valid_until - ahead
    same_outcome(
        lambda: verdict_json(verdict, now=now, timezone=zone),
        lambda: model_verdict(verdict, now, zone),
    )


STATE_BUNDLES = [bundle(config) for config in CONFIGS.values()]
WOULD_NOTHING = {
    "action": "pass",
    "reply": None,
    "max_tokens": None,
    "persona": None,
    "tools": "allow",
    "reasoning_effort": None,
}


@GENERATED
@given(
    verdict=wire_verdicts(),
    mine=st.sampled_from(STATE_BUNDLES),
    ahead=st.timedeltas(timedelta(hours=-2), timedelta(days=2)),
)
def test_any_state_is_written_as_the_model_writes_it(
    verdict: Verdict, mine: UserBundle, ahead: timedelta
) -> None:
    now = verdict.at - ahead
    same_outcome(
        lambda: verdicts._state_json(verdict, mine, now=now),
        lambda: model_state(verdict, mine, now),
    )


@pytest.mark.parametrize(
    "change",
    [
        {"reply": "\ud800"},  # not UTF-8: the model's path fails as it did
        {"progress": float("nan")},  # the model writes null
        {"max_tokens": True},  # a flag is no count: the model refuses it
        {"tools": "maybe"},
        {"reasoning_effort": "extreme"},
        {"at": datetime(2026, 9, 29, 10, 0)},  # noqa: DTZ001 - naive: the model refuses it
        {"would": {"action": "pass"}},  # incomplete: the model refuses it
        # Another key beside the model's own: ignored, as the model ignores it.
        {"would": {**WOULD_NOTHING, "extra": 1}},
    ],
)
def test_what_the_encoder_does_not_vouch_for_takes_the_models_path(
    change: dict[str, Any],
) -> None:
    verdict = dataclasses.replace(kinds()["off-duty"], **change)
    same_outcome(
        lambda: verdict_json(verdict, now=verdict.valid_until),
        lambda: model_verdict(verdict, verdict.valid_until),
    )
    mine = STATE_BUNDLES[0]
    same_outcome(
        lambda: verdicts._state_json(verdict, mine, now=verdict.valid_until),
        lambda: model_state(verdict, mine, verdict.valid_until),
    )


def test_the_engines_verdicts_over_any_instant_are_written_as_the_model_writes_them() -> None:
    """The engine's own output, over a spread of instants and zones (the
    generated verdicts above cover values the engine never makes)."""
    mine = bundle({"timezone": "Asia/Kathmandu", "dry_run": False})
    instant = datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    for step in range(400):
        instant += timedelta(hours=7, minutes=13, seconds=11, microseconds=7)
        verdict = decide(instant, mine.schedule, RequestContext(max_tokens=step * 50 or None))
        assert verdict_json(verdict, now=instant) == model_verdict(verdict, instant)
        assert verdicts._state_json(verdict, mine, now=instant) == model_state(
            verdict, mine, instant
        )


def test_the_engines_verdicts_never_need_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every verdict and state the engine makes is written without the model
    (the comparisons above would pass as well if it always took the model's path)."""
    expected = {kind: model_verdict(verdict, verdict.at) for kind, verdict in kinds().items()}
    mine = bundle(CONFIGS["lights-out reply"])
    states = {}
    for step in range(0, 24 * 60, 37):
        now = START + timedelta(minutes=step)
        states[now] = model_state(decide_for(mine, now=now)[0], mine, now)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model's path was taken")

    monkeypatch.setattr(verdicts, "verdict_answer", refused)
    monkeypatch.setattr(verdicts, "_state_answer", refused)
    for kind, verdict in kinds().items():
        assert verdict_json(verdict, now=verdict.at) == expected[kind], kind
    for now, body in states.items():
        assert bundle_state_json(mine, now=now) == body


# -- answers written from templates ------------------------------------------------------
#
# ``verdict_json`` writes the fields that stay the same from one answer to the
# next once (``verdicts._templates``), and per answer only those that move
# with the instant. Answers that share a template must still each be the
# model's own bytes, and values equal to a dict but written apart (``True``
# and ``1``, one instant in two zones) must never share one.


@GENERATED
@given(
    verdict=wire_verdicts(),
    moments=st.lists(
        st.tuples(PROGRESS, INSTANTS, INSTANTS, st.timedeltas(timedelta(0), timedelta(days=2))),
        min_size=1,
        max_size=4,
    ),
)
def test_answers_that_share_a_template_are_each_written_as_the_model_writes_them(
    verdict: Verdict, moments: list[tuple[float | None, datetime, datetime, timedelta]]
) -> None:
    verdicts._templates.clear()
    for progress, at, valid_until, ahead in moments:
        moved = dataclasses.replace(verdict, progress=progress, at=at, valid_until=valid_until)
        now = valid_until - ahead
        same_outcome(lambda: verdict_json(moved, now=now), lambda: model_verdict(moved, now))  # noqa: B023


def test_a_template_is_reused_and_moving_fields_are_written_anew() -> None:
    """The second answer of a key comes from its template (one entry), with
    its own progress, instants and age."""
    verdicts._templates.clear()
    first = kinds()["winding"]
    later = dataclasses.replace(
        first,
        progress=(first.progress or 0) / 2 + 0.25,
        at=first.at + timedelta(seconds=7, microseconds=3),
        valid_until=first.valid_until + timedelta(seconds=1),
    )
    assert verdict_json(first, now=first.at) == model_verdict(first, first.at)
    assert len(verdicts._templates) == 1
    assert verdict_json(later, now=later.at) == model_verdict(later, later.at)
    assert len(verdicts._templates) == 1
    assert verdict_json(later, now=later.at) != verdict_json(first, now=first.at)


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({"max_tokens": 1}, {"max_tokens": True}),
        ({"budget": 0}, {"budget": False}),
        ({"peak": True}, {"peak": 1}),
        ({"exempt": False}, {"exempt": 0}),
        (
            {"override": "off", "override_until": datetime(2026, 9, 29, 10, 0, tzinfo=UTC)},
            {"override": "off", "override_until": datetime(2026, 9, 29, 18, 0, tzinfo=SHANGHAI)},
        ),
        (
            {"debug_at": datetime(2026, 9, 29, 10, 0, tzinfo=UTC)},
            {"debug_at": datetime(2026, 9, 29, 18, 0, tzinfo=SHANGHAI)},
        ),
        (
            {"would": {**WOULD_NOTHING, "max_tokens": 1}},
            {"would": {**WOULD_NOTHING, "max_tokens": True}},
        ),
        ({"reply": "zzz"}, {"reply": type("Text", (str,), {})("zzz")}),
    ],
)
def test_values_equal_but_written_apart_never_share_a_template(
    first: dict[str, Any], then: dict[str, Any]
) -> None:
    verdicts._templates.clear()
    base = kinds()["off-duty"]
    for change in (first, then):
        verdict = dataclasses.replace(base, **change)
        same_outcome(
            lambda: verdict_json(verdict, now=verdict.valid_until),  # noqa: B023
            lambda: model_verdict(verdict, verdict.valid_until),  # noqa: B023
        )


@GENERATED
@given(
    instant=st.datetimes(
        min_value=datetime(1, 1, 1),  # noqa: DTZ001 - bounds of an aware strategy
        max_value=datetime(9999, 12, 31, 23, 59, 59, 999_999),  # noqa: DTZ001
        timezones=st.just(UTC),
    ),
    micro=st.sampled_from([None, 0, 1, 999_999]),
)
def test_a_utc_instant_is_written_as_isoformat_writes_it(
    instant: datetime, micro: int | None
) -> None:
    """UTC instants are written from a memo of their whole seconds
    (``verdicts._utc_text``): the same text as ``isoformat``, with and
    without microseconds, a second apart or the same second again."""
    if micro is not None:
        instant = instant.replace(microsecond=micro)
    for moment in (instant, instant.replace(microsecond=0), instant.replace(microsecond=7)):
        assert verdicts._instant(moment) == moment.isoformat()
        assert verdicts._instant(moment) == moment.isoformat()  # from the memo


@settings(max_examples=300, deadline=None)
@given(
    valid_until=INSTANTS,
    now=INSTANTS,
    near=st.timedeltas(min_value=timedelta(seconds=-5), max_value=timedelta(days=2)),
    longest=st.integers(0, 10**7),
    close=st.booleans(),
)
def test_max_age_is_the_plain_min_of_the_expiry_and_the_bound(
    valid_until: datetime, now: datetime, near: timedelta, longest: int, close: bool
) -> None:
    """``max_age`` is the whole seconds to the expiry, at most the bound, never
    below 0, for instants in any zones (close ones, and ``valid_until`` just at
    the bound too). Its quick twin went (issue 43: no edge bench run on a
    quiet machine showed it paying 5 %)."""
    if close:
        # Instants a little apart, at the bound's edge and either side of it.
        valid_until = now + near
        if near > timedelta(seconds=longest):
            valid_until = now + timedelta(seconds=longest) + near % timedelta(seconds=2)
    verdict = dataclasses.replace(kinds()["winding"], valid_until=valid_until)
    with django_settings(CURFEW_VERDICT_MAX_AGE=longest):
        assert max_age(verdict, now=now) == max(
            0, min(int((valid_until - now).total_seconds()), longest)
        )
