"""The wire models: one declaration that parses, writes and describes the answers."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from curfew_client import Action, CurfewVerdict, State, StateAnswer, VerdictAnswer
from curfew_client.wire import ActionName, StateName, json_schema
from wire_samples import STATE, WINDING


def test_a_verdict_round_trips_byte_for_byte() -> None:
    text = json.dumps(WINDING, ensure_ascii=False, separators=(",", ":"))
    verdict = CurfewVerdict.model_validate_json(text)
    assert verdict.state == State.WINDING
    assert verdict.action == Action.CLAMP
    assert (verdict.max_tokens, verdict.budget) == (1000, 1824)
    assert verdict.origin == "server"
    assert verdict.model_dump_json() == text  # ``origin`` is the client's, never on the wire


def test_an_older_servers_verdict_without_its_time_zone_still_parses() -> None:
    # Servers before issue 42 wrote no ``timezone``: the client tells times in its own.
    older = {key: value for key, value in WINDING.items() if key != "timezone"}
    verdict = CurfewVerdict.model_validate_json(json.dumps(older))
    assert verdict.timezone is None
    assert CurfewVerdict.model_validate_json(json.dumps(WINDING)).timezone == "Asia/Shanghai"


def test_a_state_answer_round_trips_byte_for_byte() -> None:
    text = json.dumps(STATE, ensure_ascii=False, separators=(",", ":"))
    assert StateAnswer.model_validate_json(text).model_dump_json() == text


def test_one_name_per_meaning() -> None:
    # ``budget`` is the curve's budget in both answers; ``max_tokens`` only the clamp.
    assert "budget" in VerdictAnswer.model_fields
    assert "budget" in StateAnswer.model_fields
    assert "max_tokens" not in StateAnswer.model_fields


def test_the_named_constants_are_the_declared_literals() -> None:
    def named(constants: type) -> list[object]:
        return [value for name, value in vars(constants).items() if name.isupper()]

    assert named(State) == list(get_args(StateName))
    assert named(Action) == list(get_args(ActionName))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("state", "asleep"),
        ("action", "maybe"),
        ("tools", "some"),
        ("override", "holiday"),
        ("max_tokens", "500"),  # a number as text is not a clamp
        ("max_tokens", True),
        ("valid_until", "2026-09-29T23:31:00"),  # an instant needs its offset
        ("reasoning_effort", "extreme"),
    ],
)
def test_a_malformed_answer_is_refused(field: str, value: object) -> None:
    CurfewVerdict.model_validate_json(json.dumps(WINDING))  # the control: the valid one parses
    with pytest.raises(ValueError, match=field):
        CurfewVerdict.model_validate_json(json.dumps({**WINDING, field: value}))


def test_a_missing_field_is_refused() -> None:
    for field in WINDING:
        if field == "timezone":
            continue  # older servers write none (``test_an_older_servers_verdict_...``)
        with pytest.raises(ValueError, match=field):
            CurfewVerdict.from_payload({k: v for k, v in WINDING.items() if k != field})


def test_a_newer_server_may_add_fields() -> None:
    verdict = CurfewVerdict.from_payload({**WINDING, "origin": "fail_open", "later": 1})
    assert verdict.origin == "server"  # the server cannot claim an origin


@pytest.mark.parametrize(("model", "sample"), [(VerdictAnswer, WINDING), (StateAnswer, STATE)])
def test_the_json_schema_describes_what_the_model_writes(
    model: type[BaseModel], sample: dict[str, Any]
) -> None:
    schema = json_schema(model)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    validator.validate(json.loads(model.model_validate_json(json.dumps(sample)).model_dump_json()))
    assert schema["required"] == list(sample)  # every key, always present
    # And the schema is not vacuous: a wrong state or a missing key fails it.
    assert not validator.is_valid({**sample, "state": "asleep"})
    assert not validator.is_valid({k: v for k, v in sample.items() if k != "at"})
