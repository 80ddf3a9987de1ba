"""The verdict and state answers are the shared wire models (``curfew_client.wire``):
built in one place on the server, parsed by the client, described by the OpenAPI
document. Each check runs on several kinds of verdict, so a field that only
appears in one of them (the stream, ``would``, an override) is covered."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from curfew_client import CurfewVerdict
from curfew_client.wire import (
    StateAnswer,
    VerdictAnswer,
    json_schema,
    openapi_schemas,
    synthetic_stream,
)
from jsonschema import Draft202012Validator
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from curfew_core.engine import Overrides, RequestContext, Verdict, decide
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.verdicts import verdict_answer, verdict_json
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock, local

SHANGHAI = ZoneInfo("Asia/Shanghai")
WINDING = datetime(2026, 9, 29, 23, 30, tzinfo=SHANGHAI)
OFF_DUTY = datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI)
LIGHTS_OUT = datetime(2026, 9, 30, 3, 10, tzinfo=SHANGHAI)


def schedule(**changes: Any) -> Any:
    return schedule_config.build(schedule_config.with_defaults(changes))


def kinds() -> dict[str, Verdict]:
    """One verdict of each kind the API answers."""
    return {
        "winding": decide(WINDING, schedule(), RequestContext(max_tokens=4096)),
        "off-duty": decide(OFF_DUTY, schedule()),
        "lights-out": decide(LIGHTS_OUT, schedule(lights_out_reply="Zzz")),
        "exempt": decide(OFF_DUTY, schedule(), RequestContext(purpose="title")),
        "dry run": decide(WINDING, schedule(dry_run=True)),
        "forced off": decide(
            WINDING, schedule(), overrides=Overrides(None, WINDING + timedelta(hours=2), None)
        ),
        "overtime": decide(
            OFF_DUTY, schedule(), overrides=Overrides(OFF_DUTY + timedelta(hours=1), None, None)
        ),
    }


KINDS = pytest.mark.parametrize("kind", list(kinds()))


def test_the_kinds_cover_every_optional_part() -> None:
    answers = [verdict_answer(verdict, max_age=60) for verdict in kinds().values()]
    assert {answer.state for answer in answers} == {"on-duty", "winding", "off-duty", "lights-out"}
    assert any(answer.would is not None for answer in answers)
    assert any(answer.stream is not None for answer in answers)
    assert {answer.override for answer in answers} == {None, "off", "overtime"}


def test_a_short_circuit_carries_its_reply_as_the_synthetic_stream() -> None:
    verdicts = kinds()
    assert verdict_answer(verdicts["off-duty"], max_age=0).stream == synthetic_stream("。")
    assert verdict_answer(verdicts["lights-out"], max_age=0).stream == synthetic_stream("Zzz")
    # No reply, no stream: on duty, winding, and an exempt call in off-duty hours.
    for kind in ("winding", "exempt", "overtime"):
        assert verdict_answer(verdicts[kind], max_age=0).stream is None, kind


@KINDS
def test_the_client_reads_exactly_what_the_server_writes(kind: str) -> None:
    verdict = kinds()[kind]
    body = verdict_json(verdict, now=verdict.at)
    parsed = CurfewVerdict.model_validate_json(body)
    assert parsed.model_dump_json().encode() == body
    assert (parsed.state, parsed.action, parsed.max_tokens, parsed.budget) == (
        verdict.state.value,
        verdict.action.value,
        verdict.max_tokens,
        verdict.budget,
    )
    assert parsed.valid_until == verdict.valid_until
    # A reply always comes with its stream, and only then (a dry run has neither).
    assert (parsed.stream is None) == (parsed.reply is None)


@pytest.fixture
def schemas(db: None) -> dict[str, Any]:
    document: dict[str, Any] = Client().get("/api/v1/openapi.json").json()
    found: dict[str, Any] = document["components"]["schemas"]
    return found


@KINDS
def test_the_served_document_describes_the_models_output(
    kind: str, schemas: dict[str, Any]
) -> None:
    verdict = kinds()[kind]
    answer = json.loads(verdict_json(verdict, now=verdict.at))
    # Its references point into the document's components.
    OAS31Validator({**schemas["Verdict"], "components": {"schemas": schemas}}).validate(answer)
    # The models' own schema says the same (it is what the document can embed).
    Draft202012Validator(json_schema(VerdictAnswer)).validate(answer)


def test_the_served_document_and_the_models_name_the_same_fields(schemas: dict[str, Any]) -> None:
    assert set(schemas["Verdict"]["properties"]) == set(VerdictAnswer.model_fields)
    assert set(schemas["State"]["properties"]) == set(StateAnswer.model_fields)


@pytest.mark.django_db
def test_the_state_api_answers_the_state_model(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 23:30"))
    body = api.get("/api/v1/state").json()
    assert body["budget"] == 1824
    Draft202012Validator(json_schema(StateAnswer)).validate(body)
    assert list(body) == list(StateAnswer.model_fields)
    assert StateAnswer.model_validate_json(json.dumps(body)).model_dump(mode="json") == body


def test_the_models_schemas_embed_in_an_openapi_document() -> None:
    """What ``api/openapi.py`` puts in ``components.schemas``: a valid OpenAPI
    3.1 document whose references resolve, and which the server's answers
    satisfy."""
    components = openapi_schemas()
    assert {"Verdict", "State", "Would", "DaySegment"} <= set(components)
    document = {
        "openapi": "3.1.0",
        "info": {"title": "wire", "version": "1"},
        "paths": {},
        "components": {"schemas": components},
    }
    validate(document)
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:wire", resource)

    def validator(name: str) -> OAS31Validator:
        return OAS31Validator({"$ref": f"urn:wire#/components/schemas/{name}"}, registry=registry)

    for kind, verdict in kinds().items():
        answer = json.loads(verdict_json(verdict, now=verdict.at))
        validator("Verdict").validate(answer)
        assert not validator("Verdict").is_valid({**answer, "tools": "some"}), kind
    dry_run = json.loads(verdict_json(kinds()["dry run"], now=WINDING))
    assert not validator("Verdict").is_valid({**dry_run, "would": {"action": "clamp"}})
