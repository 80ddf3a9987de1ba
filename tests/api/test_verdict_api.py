"""POST /api/v1/verdict: the issue's reference points, the clamp, the
short-circuit answer and every scope rule, each with its control group."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.conf import settings

from curfew_core.schedules.config import DEFAULTS
from curfew_testkit.asgi_client import Client

VERDICT = "/api/v1/verdict"
#: Every field the issue says a verdict carries, plus the cache advice.
VERDICT_FIELDS = {
    "reply",
    "stream",
    "max_tokens",
    "persona",
    "tools",
    "reasoning_effort",
    "state",
    "schedule_state",
    "action",
    "progress",
    "peak",
    "reason",
    "exempt",
    "dry_run",
    "valid_until",
    "max_age",
}


def ask(api: Any, at: str, **body: Any) -> dict[str, Any]:
    response = api.post(VERDICT, {"at": at, **body})
    assert response.status_code == 200, response.content
    data: dict[str, Any] = response.json()
    return data


def save(api: Any, **changes: Any) -> None:
    response = api.patch("/api/v1/schedule", changes)
    assert response.status_code == 200, response.content


# 2026-09-29 is a Tuesday; 2026-09-27 a Sunday; 2026-10-01 National Day.
REFERENCE = [
    ("2026-09-29T10:00:00+08:00", "off-duty", None),
    ("2026-09-29T20:00:00+08:00", "on-duty", None),
    ("2026-09-29T23:30:00+08:00", "winding", 1824),
    ("2026-09-30T01:30:00+08:00", "winding", 560),
    ("2026-09-30T03:10:00+08:00", "lights-out", None),
    ("2026-09-27T14:00:00+08:00", "on-duty", None),
    ("2026-09-27T09:00:00+08:00", "on-duty", None),
    ("2026-09-29T09:00:00+08:00", "off-duty", None),
    ("2026-10-01T10:00:00+08:00", "on-duty", None),
    # The same instant written in UTC is the same verdict.
    ("2026-09-29T02:00:00Z", "off-duty", None),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("at", "state", "budget"), REFERENCE)
def test_reference_points(api: Any, at: str, state: str, budget: int | None) -> None:
    verdict = ask(api, at)
    assert set(verdict) >= VERDICT_FIELDS
    assert verdict["state"] == state
    assert verdict["schedule_state"] == state
    assert verdict["max_tokens"] == budget
    assert datetime.fromisoformat(verdict["at"]) == datetime.fromisoformat(
        at.replace("Z", "+00:00")
    )
    if state == "on-duty":
        # On duty nothing is touched.
        assert verdict["action"] == "pass"
        assert verdict["reply"] is None
        assert verdict["stream"] is None
        assert verdict["persona"] is None
        assert verdict["tools"] == "allow"


@pytest.mark.django_db
def test_off_duty_is_a_complete_canned_answer(api: Any) -> None:
    verdict = ask(api, "2026-09-29T10:00:00+08:00")
    assert verdict["action"] == "short-circuit"
    assert verdict["reply"] == "。"
    assert verdict["peak"] is True
    assert verdict["tools"] == "deny"
    assert verdict["max_tokens"] is None  # no safety cap by default
    assert verdict["persona"] is None
    assert verdict["progress"] is None
    assert "2026-09-29 10:00" in verdict["reason"]
    assert "peak" in verdict["reason"]
    assert verdict["stream"] == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "。"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "。"}},
        {"type": "usage", "inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


@pytest.mark.django_db
def test_lights_out_replies_with_its_own_text(api: Any) -> None:
    verdict = ask(api, "2026-09-30T03:10:00+08:00")
    assert verdict["action"] == "short-circuit"
    assert verdict["reply"] == "明天再说。"
    assert verdict["stream"][1] == {"type": "text-delta", "index": 0, "text": "明天再说。"}
    usage = verdict["stream"][3]
    assert usage == {"type": "usage", "inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    assert verdict["tools"] == "deny"


@pytest.mark.django_db
def test_winding_carries_budget_persona_and_progress(api: Any) -> None:
    verdict = ask(api, "2026-09-29T23:30:00+08:00")
    assert verdict["action"] == "clamp"
    assert verdict["max_tokens"] == 1824
    assert verdict["budget"] == 1824
    assert verdict["progress"] == pytest.approx(0.125)
    assert verdict["reply"] is None
    assert verdict["stream"] is None
    assert verdict["tools"] == "allow"
    # The first of four bands: the persona plus the first tier's line.
    assert verdict["persona"].startswith(DEFAULTS["tired_persona"])
    assert DEFAULTS["tier_texts"][0] in verdict["persona"]
    late = ask(api, "2026-09-30T02:50:00+08:00")
    assert DEFAULTS["tier_texts"][-1] in late["persona"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("client_max", "expected"),
    [(None, 1824), (1000, 1000), (1824, 1824), (4000, 1824), (1, 1)],
)
def test_clamp_is_min_never_a_raise(api: Any, client_max: int | None, expected: int) -> None:
    verdict = ask(api, "2026-09-29T23:30:00+08:00", max_tokens=client_max)
    assert verdict["max_tokens"] == expected
    assert verdict["action"] == "clamp"


@pytest.mark.django_db
def test_on_duty_leaves_the_clients_budget_alone(api: Any) -> None:
    verdict = ask(api, "2026-09-29T20:00:00+08:00", max_tokens=99)
    assert verdict["max_tokens"] is None
    assert verdict["action"] == "pass"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("at", "expected"),
    [
        # 30 s before the winding starts: cache no longer than that.
        ("2026-09-29T22:59:30+08:00", 30),
        # Hours from any change: capped by the setting.
        ("2026-09-29T19:00:00+08:00", settings.CURFEW_VERDICT_MAX_AGE),
    ],
)
def test_max_age_never_outlives_the_verdict(api: Any, at: str, expected: int) -> None:
    verdict = ask(api, at)
    assert verdict["max_age"] == expected
    left = datetime.fromisoformat(verdict["valid_until"]) - datetime.fromisoformat(at)
    assert verdict["max_age"] <= left.total_seconds()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "at",
    [
        "2026-09-29T10:00:00+08:00",
        "2026-09-29T20:00:00+08:00",
        "2026-09-29T23:30:00+08:00",
        "2026-09-30T01:30:00+08:00",
        "2026-09-30T03:10:00+08:00",
    ],
)
def test_max_age_bounds_hold_everywhere(api: Any, at: str) -> None:
    verdict = ask(api, at)
    assert 0 <= verdict["max_age"] <= settings.CURFEW_VERDICT_MAX_AGE
    left = datetime.fromisoformat(verdict["valid_until"]) - datetime.fromisoformat(at)
    assert left.total_seconds() > 0
    assert verdict["max_age"] <= left.total_seconds()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("at", "state"),
    [("1900-01-02T10:00:00+08:00", "off-duty"), ("8999-12-29T10:00:00+08:00", "on-duty")],
)
def test_far_but_supported_instants_are_answered(api: Any, at: str, state: str) -> None:
    # 1900-01-02 was a Tuesday, 8999-12-29 is a Sunday.
    assert ask(api, at)["state"] == state


@pytest.mark.django_db
def test_null_optional_fields_mean_not_given(api: Any) -> None:
    verdict = ask(api, PEAK, session_id=None, purpose=None, subagent=None, max_tokens=None)
    assert verdict == ask(api, PEAK)
    assert verdict["action"] == "short-circuit"


@pytest.mark.django_db
def test_an_empty_body_means_now(api: Any) -> None:
    response = api.post(VERDICT, raw="")
    assert response.status_code == 200
    assert set(response.json()) >= VERDICT_FIELDS


# -- scope rules, each against a control that differs in one thing only -------


PEAK = "2026-09-29T10:00:00+08:00"
WINDING = "2026-09-29T23:30:00+08:00"


@pytest.mark.django_db
@pytest.mark.parametrize("purpose", ["compaction", "title", "summary", "Title"])
def test_a_default_exempt_purpose_passes(api: Any, purpose: str) -> None:
    control = ask(api, PEAK)
    assert control["action"] == "short-circuit"
    verdict = ask(api, PEAK, purpose=purpose)
    assert verdict["action"] == "pass"
    assert verdict["exempt"] is True
    assert verdict["reply"] is None
    assert verdict["stream"] is None
    assert verdict["max_tokens"] is None
    assert verdict["state"] == "off-duty"  # still reported, just not acted on
    assert f"purpose {purpose.lower()!r} is exempt" in verdict["reason"]


@pytest.mark.django_db
@pytest.mark.parametrize("purpose", ["anything", "session-title"])
def test_an_unlisted_purpose_is_acted_on(api: Any, purpose: str) -> None:
    """Any purpose used to pass; only the listed ones do now."""
    verdict = ask(api, PEAK, purpose=purpose)
    assert verdict["exempt"] is False
    assert verdict["action"] == "short-circuit"
    assert verdict["reply"] == "。"
    assert f"purpose {purpose!r} is not exempt" in verdict["reason"]
    lights_out = ask(api, "2026-09-30T04:00:00+08:00", purpose=purpose)
    assert lights_out["action"] == "short-circuit"
    assert lights_out["reply"] == "明天再说。"


@pytest.mark.django_db
def test_exempt_purposes_round_trip_and_decide(api: Any) -> None:
    assert api.get("/api/v1/schedule").json()["exempt_purposes"] == [
        "title",
        "compaction",
        "summary",
    ]
    four = "2026-09-30T04:00:00+08:00"
    assert ask(api, four, purpose="title")["action"] == "pass"
    # PATCH: remove "title", add one's own; case and repeats fold.
    response = api.patch(
        "/api/v1/schedule", {"exempt_purposes": ["compaction", "Nightly-Backup", "nightly-backup"]}
    )
    assert response.status_code == 200, response.content
    assert response.json()["exempt_purposes"] == ["compaction", "nightly-backup"]
    assert api.get("/api/v1/schedule").json()["exempt_purposes"] == [
        "compaction",
        "nightly-backup",
    ]
    assert ask(api, four, purpose="title")["action"] == "short-circuit"
    assert ask(api, four, purpose="NIGHTLY-BACKUP")["action"] == "pass"
    assert ask(api, four, purpose="compaction")["action"] == "pass"
    # The whole schedule sent back (with its version) with an empty list:
    # no purpose is exempt any more. (The API has no PUT; PATCH takes it all.)
    whole = api.get("/api/v1/schedule").json()
    whole["exempt_purposes"] = []
    response = api.patch("/api/v1/schedule", whole)
    assert response.status_code == 200, response.content
    assert api.get("/api/v1/schedule").json()["exempt_purposes"] == []
    for purpose in ("compaction", "nightly-backup", "title"):
        assert ask(api, four, purpose=purpose)["action"] == "short-circuit"


@pytest.mark.django_db
def test_exempt_session_passes_and_the_other_session_does_not(api: Any) -> None:
    save(api, exempt_sessions=["vip-session"])
    exempt = ask(api, PEAK, session_id="vip-session")
    control = ask(api, PEAK, session_id="ordinary-session")
    assert exempt["exempt"] is True
    assert exempt["action"] == "pass"
    assert exempt["reply"] is None
    assert control["exempt"] is False
    assert control["action"] == "short-circuit"
    assert control["reply"] == "。"
    # In winding too: the exempt session keeps its budget.
    assert ask(api, WINDING, session_id="vip-session", max_tokens=4000)["max_tokens"] is None
    assert ask(api, WINDING, session_id="ordinary-session", max_tokens=4000)["max_tokens"] == 1824


@pytest.mark.django_db
def test_subagents_are_spared_only_when_configured(api: Any) -> None:
    assert ask(api, PEAK, subagent=True)["action"] == "short-circuit"  # default: applies
    save(api, apply_to_subagents=False)
    spared = ask(api, PEAK, subagent=True)
    assert spared["action"] == "pass"
    assert spared["reply"] is None
    assert ask(api, PEAK, subagent=False)["action"] == "short-circuit"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("at", "would_action"),
    [(PEAK, "short-circuit"), (WINDING, "clamp"), ("2026-09-30T03:10:00+08:00", "short-circuit")],
)
def test_dry_run_decides_but_never_acts(api: Any, at: str, would_action: str) -> None:
    save(api, dry_run=True, safety_max_tokens=512)
    verdict = ask(api, at, max_tokens=4000)
    assert verdict["dry_run"] is True
    assert verdict["action"] == "pass"
    assert verdict["reply"] is None
    assert verdict["stream"] is None
    assert verdict["max_tokens"] is None
    assert verdict["persona"] is None
    assert verdict["tools"] == "allow"
    assert verdict["state"] != "on-duty"  # it still says what the curfew thinks
    assert verdict["would"]["action"] == would_action


@pytest.mark.django_db
def test_disabled_stands_everything_down(api: Any) -> None:
    save(api, enabled=False)
    for at in (PEAK, WINDING, "2026-09-30T03:10:00+08:00"):
        verdict = ask(api, at, max_tokens=4000)
        assert verdict["state"] == "on-duty"
        assert verdict["action"] == "pass"
        assert verdict["max_tokens"] is None
        assert verdict["reply"] is None
    save(api, enabled=True)
    assert ask(api, PEAK)["action"] == "short-circuit"


@pytest.mark.django_db
def test_safety_cap_only_off_duty_and_only_when_set(api: Any) -> None:
    assert ask(api, PEAK)["max_tokens"] is None  # off by default
    save(api, safety_max_tokens=512)
    assert ask(api, PEAK)["max_tokens"] == 512
    assert ask(api, PEAK, max_tokens=300)["max_tokens"] == 300  # min, never a raise
    assert ask(api, "2026-09-30T03:10:00+08:00", max_tokens=9000)["max_tokens"] == 512
    assert ask(api, WINDING, max_tokens=4000)["max_tokens"] == 1824  # the curve governs
    assert ask(api, "2026-09-29T20:00:00+08:00")["max_tokens"] is None  # on duty untouched


@pytest.mark.django_db
def test_tools_and_reasoning_effort_follow_the_settings(api: Any) -> None:
    assert ask(api, WINDING)["reasoning_effort"] is None
    save(api, winding_reasoning_effort="low", deny_tools_when_off_duty=False)
    assert ask(api, WINDING)["reasoning_effort"] == "low"
    assert ask(api, "2026-09-29T20:00:00+08:00")["reasoning_effort"] is None
    assert ask(api, PEAK)["tools"] == "allow"


@pytest.mark.django_db
def test_peak_shift_off_leaves_a_pure_curfew(api: Any) -> None:
    save(api, peak_shift=False)
    verdict = ask(api, PEAK)
    assert verdict["state"] == "on-duty"
    assert verdict["peak"] is False
    assert ask(api, WINDING)["max_tokens"] == 1824


@pytest.mark.django_db
def test_curve_setting_reaches_the_verdict(api: Any) -> None:
    save(api, curve="step")
    assert ask(api, WINDING)["max_tokens"] == 2048  # holds 23:00's value until 00:00
    save(api, curve="ease_in")
    eased = ask(api, WINDING)["max_tokens"]
    assert 1824 < eased < 2048  # holds high first


@pytest.mark.django_db
def test_timezone_setting_moves_the_day(api: Any) -> None:
    save(api, timezone="Europe/London", holiday_calendar="GB")
    # 10:00 in Shanghai is 03:00 in London: lights-out, not peak.
    assert ask(api, PEAK)["state"] == "lights-out"
    assert ask(api, "2026-09-29T10:00:00+01:00")["state"] == "off-duty"


@pytest.mark.django_db
def test_extra_holiday_makes_a_valley_day(api: Any) -> None:
    save(api, extra_holidays=["2026-09-29"])
    verdict = ask(api, PEAK)
    assert verdict["state"] == "on-duty"
    assert ask(api, "2026-09-28T10:00:00+08:00")["state"] == "off-duty"  # control: Monday


@pytest.mark.django_db
def test_weekday_override_gives_friday_its_own_night(api: Any) -> None:
    save(api, weekdays={"fri": {"curfew_start": "01:00", "lights_out": "04:00"}})
    # Friday 2026-10-02 is in the National Day week; use Friday 2026-09-25.
    assert ask(api, "2026-09-25T23:30:00+08:00")["state"] == "on-duty"
    assert ask(api, "2026-09-26T01:30:00+08:00")["state"] == "winding"
    assert ask(api, "2026-09-24T23:30:00+08:00")["state"] == "winding"  # Thursday control


# -- bad verdict requests ------------------------------------------------------


#: Well-formed (the document admits them), but where the calendar runs out:
#: 422, never a 500.
UNPROCESSABLE_VERDICTS = [
    ({"at": "9999-12-31T23:59:59+00:00"}, "at"),
    ({"at": "9999-12-31T23:59:59-12:00"}, "at"),
    ({"at": "0001-01-01T00:00:00+00:00"}, "at"),
    ({"at": "0001-01-01T00:00:00+14:00"}, "at"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "field"), UNPROCESSABLE_VERDICTS)
def test_instants_out_of_range_are_a_422(api: Any, body: dict[str, Any], field: str) -> None:
    response = api.post(VERDICT, body)
    assert response.status_code == 422
    assert response.json()["error"] == "unprocessable"
    assert response.json()["fields"][field]


BAD_VERDICTS = [
    ({"at": "yesterday"}, "at"),
    ({"at": "2026-09-29T10:00:00"}, "at"),  # no offset
    ({"at": "2026-09-29"}, "at"),
    ({"at": 1790000000}, "at"),
    ({"at": "2026-13-01T10:00:00+08:00"}, "at"),
    # Python reads these, RFC 3339 (the document's date-time) does not.
    ({"at": "2026-09-29 10:00:00+08:00"}, "at"),
    ({"at": "2026-09-29T10:00+08:00"}, "at"),
    ({"at": "20260929T100000+0800"}, "at"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": -5}, "max_tokens"),
    ({"max_tokens": 12.5}, "max_tokens"),
    ({"max_tokens": "100"}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"subagent": "yes"}, "subagent"),
    ({"session_id": 7}, "session_id"),
    ({"purpose": ["compaction"]}, "purpose"),
    ({"session_id": "x" * 201}, "session_id"),
    ({"model": "gpt"}, "model"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "field"), BAD_VERDICTS)
def test_bad_verdict_requests_name_the_field(api: Any, body: dict[str, Any], field: str) -> None:
    response = api.post(VERDICT, body)
    assert response.status_code == 400
    data = response.json()
    assert data["error"] == "invalid"
    assert field in data["fields"]
    assert data["fields"][field]


@pytest.mark.django_db
@pytest.mark.parametrize(("raw", "problem"), [("{nope", "JSON"), ("[1, 2]", "object")])
def test_verdict_body_must_be_a_json_object(api: Any, raw: str, problem: str) -> None:
    response = api.post(VERDICT, raw=raw)
    assert response.status_code == 400
    assert problem in response.json()["fields"]["body"]


@pytest.mark.django_db
def test_an_oversized_body_is_a_json_413(api: Any) -> None:
    response = api.post(VERDICT, raw='{"session_id": "' + "x" * 3_000_000 + '"}')
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert "too large" in response.json()["fields"]["body"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/verdicts", "/api/v1/verdict/", "/api/v1/"])
def test_unknown_api_routes_answer_json(api: Any, path: str) -> None:
    strict = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {api.token}")
    for response in (api.get(path), strict.post(path, "{}", content_type="application/json")):
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
        assert "openapi.json" in response.json()["message"]


@pytest.mark.django_db
def test_verdict_only_answers_post(api: Any) -> None:
    response = api.get(VERDICT)
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert response["Allow"] == "POST"


@pytest.mark.django_db
def test_a_whole_number_float_is_a_budget(api: Any) -> None:
    """JSON Schema's integer admits 508.0, so the verdict takes it as 508."""
    at = "2026-09-29T23:30:00+08:00"
    whole = api.post(VERDICT, {"max_tokens": 508.0, "at": at})
    assert whole.status_code == 200, whole.content
    assert whole.json() == api.post(VERDICT, {"max_tokens": 508, "at": at}).json()
