"""Bad input at the JSON doors: every one is a 400 in the API's shape that
names the field, and nothing is written (issue 9, items 3 and 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from curfew_core.schedules import config as schedule_config
from tests.api.conftest import stored

SURROGATE = "\ud800"
HUGE = "9" * 5000


def _with_bad_text(value: Any, bad: str) -> tuple[Any, bool]:
    """``value`` with its first text replaced by ``bad`` (and whether one was found)."""
    if isinstance(value, str):
        return bad, True
    if isinstance(value, list):
        out = list(value)
        for index, item in enumerate(out):
            out[index], found = _with_bad_text(item, bad)
            if found:
                return out, True
        return out, False
    if isinstance(value, dict):
        out_map = dict(value)
        for key, item in out_map.items():
            out_map[key], found = _with_bad_text(item, bad)
            if found:
                return out_map, True
        return out_map, False
    return value, False


# Every setting that holds text somewhere, found from the declaration itself
# (the defaults), plus the ones whose default holds none (empty list, dict, null).
_EXAMPLES: dict[str, Any] = {
    **schedule_config.DEFAULTS,
    "weekdays": {"fri": {"curfew_start": "00:30"}},
    "extra_holidays": ["2026-10-09"],
    "exempt_sessions": ["chat-1"],
    "holiday_calendar": "CN",
    "winding_reasoning_effort": "low",
}
TEXT_SETTINGS = sorted(
    key for key in schedule_config.FIELDS if _with_bad_text(_EXAMPLES[key], "")[1]
)


def _raw(body: Any) -> str:
    # ensure_ascii writes a lone surrogate as the escape "\ud800", which is
    # how it arrives over the wire (the raw code point cannot be UTF-8).
    return json.dumps(body)


def test_every_text_setting_is_covered() -> None:
    assert {
        "tired_persona",
        "tier_texts",
        "exempt_sessions",
        "exempt_purposes",
        "anchors",
        "weekdays",
    } <= set(TEXT_SETTINGS)
    assert all(key in _EXAMPLES for key in schedule_config.FIELDS)


@pytest.mark.parametrize("bad", [SURROGATE, "a\udfffb", "nul\x00"])
@pytest.mark.parametrize("key", TEXT_SETTINGS)
def test_invalid_text_in_any_setting_is_refused_by_the_validation_layer(key: str, bad: str) -> None:
    value, found = _with_bad_text(_EXAMPLES[key], bad)
    assert found
    with pytest.raises(schedule_config.ConfigError) as caught:
        schedule_config.apply_changes({}, {key: value})
    assert set(caught.value.errors) == {key}


@pytest.mark.parametrize("bad", [SURROGATE, "nul\x00"])
@pytest.mark.parametrize("key", TEXT_SETTINGS)
def test_invalid_text_in_any_setting_is_a_400_and_nothing_is_written(
    api: Any, key: str, bad: str
) -> None:
    before = stored(api.user)
    value, _ = _with_bad_text(_EXAMPLES[key], bad)
    response = api.patch("/api/v1/schedule", raw=_raw({key: value}))
    assert response.status_code == 400, response.content[:300]
    assert key in response.json()["fields"]
    assert stored(api.user) == before
    # And every read of the account still works.
    assert api.get("/api/v1/schedule").status_code == 200
    assert api.post("/api/v1/verdict", {}).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/verdict", {"session_id": SURROGATE}, "session_id"),
        ("/api/v1/verdict", {"purpose": "x" + SURROGATE}, "purpose"),
        ("/api/v1/verdict", {"session_id": "a\x00b"}, "session_id"),
        ("/api/v1/overrides", {"overtime": SURROGATE}, "overtime"),
        ("/api/v1/overrides", {"debug": SURROGATE}, "debug"),
        ("/api/v1/schedule", {SURROGATE: 1}, "body"),
        ("/api/v1/schedule", {"weekdays": {SURROGATE: {}}}, "weekdays"),
    ],
)
def test_invalid_text_elsewhere_is_a_400_naming_the_field(
    api: Any, path: str, body: Any, field: str
) -> None:
    before = stored(api.user)
    send = api.patch if path.endswith("schedule") else api.post
    response = send(path, raw=_raw(body))
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert field in response.json()["fields"]
    assert stored(api.user) == before


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        ("/api/v1/verdict", '{"max_tokens": ' + HUGE + "}", "body"),
        ("/api/v1/schedule", '{"safety_max_tokens": ' + HUGE + "}", "body"),
        ("/api/v1/overrides", '{"overtime": ' + HUGE + "}", "body"),
        ("/api/v1/verdict", "[" * 100_000, "body"),
        ("/api/v1/schedule", "[" * 100_000, "body"),
        ("/api/v1/overrides", "[" * 100_000, "body"),
        ("/api/v1/verdict", '{"session_id": ' + "[" * 50 + "]" * 50 + "}", "body"),
        ("/api/v1/verdict", '{"max_tokens": NaN}', "body"),
        ("/api/v1/schedule", '{"safety_max_tokens": Infinity}', "body"),
        ("/api/v1/verdict", b'{"purpose": "\xff"}', "body"),
        ("/api/v1/overrides", '{"overtime": "' + HUGE + 'm"}', "overtime"),
        ("/api/v1/overrides", '{"overtime": "' + HUGE + '"}', "overtime"),
        ("/api/v1/overrides", '{"overtime": "1h' + HUGE + 's"}', "overtime"),
        ("/api/v1/overrides", '{"debug": "' + HUGE + '"}', "debug"),
        ("/api/v1/overrides", '{"debug": "9999-12-31 23:59"}', "debug"),
        ("/api/v1/overrides", '{"debug": "0001-01-01 00:00"}', "debug"),
        ("/api/v1/verdict", '{"at": "9999-12-31T23:59:59+00:00"}', "at"),
        ("/api/v1/verdict", '{"at": "0001-01-01T00:00:00-23:59"}', "at"),
        ("/api/v1/verdict", '{"at": "' + HUGE + '"}', "at"),
        ("/api/v1/schedule", '{"anchors": [["23:00", ' + "9" * 4000 + "]]}", "anchors"),
        ("/api/v1/schedule", '{"extra_holidays": ["9999-12-31"]}', None),
    ],
)
def test_bad_bodies_are_a_400_in_the_api_shape(
    api: Any, path: str, raw: str | bytes, field: str | None
) -> None:
    before = stored(api.user)
    send = api.patch if path.endswith("schedule") else api.post
    response = send(path, raw=raw)
    if field is None:  # allowed: must simply not break anything
        assert response.status_code in (200, 400)
    else:
        # Out of range but well-formed (the schema admits it): 422; else 400.
        well_formed = "9999-12-31" in str(raw) or "0001-01-01" in str(raw)
        assert response.status_code == (422 if well_formed else 400), response.content[:300]
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["error"] == ("unprocessable" if well_formed else "invalid")
        assert field in body["fields"]
        assert len(response.content) < 2000  # a bad value is not echoed whole
        assert stored(api.user) == before
    assert api.get("/api/v1/state").status_code == 200


def test_no_body_is_no_fields_but_whitespace_is_not_json(api: Any) -> None:
    assert api.post("/api/v1/verdict", raw="").status_code == 200
    response = api.post("/api/v1/verdict", raw="\n\n")
    assert response.status_code == 400
    assert "JSON" in response.json()["fields"]["body"]
