"""The served OpenAPI document: valid 3.1, complete, and true to the answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import jsonschema_rs
import pytest
from django.urls import get_resolver
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from curfew_core.api import openapi
from curfew_core.edge.declare import Route
from curfew_core.edge.doors import DOORS
from curfew_core.schedules.config import FIELDS
from curfew_testkit.asgi_client import Client

API_PREFIX_PATH = "/api/v1/"


@pytest.fixture
def document(db: None) -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")  # no token needed
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def test_is_a_valid_openapi_31_document(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_lists_every_api_route(document: dict[str, Any]) -> None:
    """The API door's routes and methods (the door table) are the document's,
    and nothing else is: no API route is Django's (issue 43)."""
    api_door = DOORS.door_for(API_PREFIX_PATH)
    served = {
        (route.path.removeprefix(API_PREFIX_PATH.rstrip("/")), method.lower())
        for route in api_door.routes
        for method in route.methods
    }
    assert {("/verdict", "post"), ("/schedule", "patch"), ("/savings", "get")} <= served
    documented = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert documented == served
    # And the routes are where the document's server says they are: the edge's.
    assert document["servers"] == [{"url": "/api/v1"}]
    for path, _ in served:
        assert api_door.match("/api/v1" + path) is not None
    assert not any(str(p.pattern).startswith("api/") for p in get_resolver().url_patterns)


def test_the_paths_follow_the_table() -> None:
    """A route the table serves without an operation written, or one written
    for a route it does not serve, fails the document; a route that takes no
    token says so."""
    api_door = DOORS.door_for(API_PREFIX_PATH)
    openapi_route = next(r for r in api_door.routes if r.path.endswith("openapi.json"))
    assert openapi.paths(api_door)["/openapi.json"]["get"]["security"] == []
    extra = replace(api_door, routes=(*api_door.routes, Route("/api/v1/nothing", ("GET",), "x.y")))
    with pytest.raises(LookupError, match="GET /api/v1/nothing"):
        openapi.paths(extra)
    fewer = replace(api_door, routes=tuple(r for r in api_door.routes if r is not openapi_route))
    with pytest.raises(LookupError, match=r"GET /openapi\.json"):
        openapi.paths(fewer)


def test_settings_schema_names_every_setting(document: dict[str, Any]) -> None:
    settings = document["components"]["schemas"]["Settings"]["properties"]
    assert set(settings) == set(FIELDS)
    get = document["paths"]["/schedule"]["get"]["responses"]["200"]
    out = get["content"]["application/json"]["schema"]
    assert set(out["required"]) == {*FIELDS, "version"}


def _schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The answer's schema, a reference into ``components`` followed, with the
    components beside it so the references inside resolve too."""
    response = document["paths"][path][method]["responses"]["200"]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return _resolved(document, schema)


def _resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    components = document["components"]
    if "$ref" in schema:
        schema = components["schemas"][schema["$ref"].removeprefix("#/components/schemas/")]
    return {**schema, "components": components}


@pytest.mark.parametrize(
    "at",
    [
        "2026-09-29T10:00:00+08:00",
        "2026-09-29T20:00:00+08:00",
        "2026-09-29T23:30:00+08:00",
        "2026-09-30T03:10:00+08:00",
    ],
)
def test_verdicts_match_the_documented_schema(document: dict[str, Any], api: Any, at: str) -> None:
    verdict = api.post("/api/v1/verdict", {"at": at}).json()
    schema = _schema(document, "/verdict", "post")
    OAS31Validator(schema).validate(verdict)
    assert set(verdict) == set(schema["properties"])


def test_schedule_and_state_match_the_documented_schema(document: dict[str, Any], api: Any) -> None:
    schedule = api.get("/api/v1/schedule").json()
    OAS31Validator(_schema(document, "/schedule", "get")).validate(schedule)
    saved = api.patch("/api/v1/schedule", {"safety_max_tokens": 1024, "holiday_calendar": None})
    OAS31Validator(_schema(document, "/schedule", "patch")).validate(saved.json())
    state = api.get("/api/v1/state").json()
    state_schema = _schema(document, "/state", "get")
    OAS31Validator(state_schema).validate(state)
    assert set(state_schema["properties"]) == set(state)


def test_error_bodies_match_the_documented_schema(document: dict[str, Any], api: Any) -> None:
    error = _resolved(document, document["components"]["schemas"]["Error"])
    OAS31Validator(error).validate(api.patch("/api/v1/schedule", {"curve": "cubic"}).json())
    OAS31Validator(error).validate(Client().get("/api/v1/state").json())


# -- the document and the validators agree exactly ----------------------------


def _request_schema(document: dict[str, Any], path: str, method: str) -> Any:
    """A JSON Schema 2020-12 validator with ECMA-262 patterns, as the spec and
    schemathesis read them (python-jsonschema uses ``re.search``, whose ``$``
    also matches before a final newline)."""
    body = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    schema = {**body["schema"], "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(schema, validate_formats=True)


def _cases() -> list[tuple[str, str, dict[str, Any], bool]]:
    """(path, method, body, well-formed) from the API tests' own tables: what
    the validators answer 400 must break the document, and what they answer
    422 (or accept) must not."""
    from tests.api import test_overrides_api as overrides
    from tests.api import test_schedule_api as schedule
    from tests.api import test_verdict_api as verdicts

    cases: list[tuple[str, str, dict[str, Any], bool]] = []
    for table, path, method, formed in (
        (schedule.BAD_INPUT, "/schedule", "patch", False),
        (schedule.UNPROCESSABLE, "/schedule", "patch", True),
        (verdicts.BAD_VERDICTS, "/verdict", "post", False),
        (verdicts.UNPROCESSABLE_VERDICTS, "/verdict", "post", True),
        (overrides.BAD_OVERRIDES, "/overrides", "post", False),
        (overrides.UNPROCESSABLE_OVERRIDES, "/overrides", "post", True),
    ):
        cases += [(path, method, body, formed) for body, _field in table]
    # Found by issue 9: accepted by the document, so accepted by the API.
    cases += [
        ("/verdict", "post", {"max_tokens": 508.0}, True),
        ("/schedule", "patch", {"safety_max_tokens": 512.0}, True),
        ("/schedule", "patch", {"version": 0, "curve": "step"}, True),
        ("/schedule", "patch", {"winding_reasoning_effort": ""}, True),
        ("/schedule", "patch", {"holiday_calendar": ""}, True),
        ("/overrides", "post", {"overtime": 30.0}, True),
        ("/overrides", "post", {"debug": "2026-09-29T23:30:00+08:00"}, True),
        # Either case and repeats are well-formed (stored lowercase, folded).
        ("/schedule", "patch", {"exempt_purposes": ["Title", "title", "a.b_c-9"]}, True),
        ("/schedule", "patch", {"exempt_purposes": []}, True),
        ("/schedule", "patch", {"exempt_purposes": ["x" * 64] * 32}, True),
        # ...and refused by both.
        ("/schedule", "patch", {"exempt_sessions": [""]}, False),
        ("/schedule", "patch", {"version": None}, False),
        ("/overrides", "post", {"debug": ""}, False),
    ]
    return cases


@pytest.mark.parametrize(("path", "method", "body", "well_formed"), _cases())
def test_the_document_and_the_validators_agree(
    document: dict[str, Any], api: Any, path: str, method: str, body: Any, well_formed: bool
) -> None:
    assert _request_schema(document, path, method).is_valid(body) is well_formed
    send = api.patch if method == "patch" else api.post
    status = send("/api/v1" + path, body).status_code
    assert (status != 400) is well_formed, status


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/api/v1/verdict", "POST"),
        ("/api/v1/schedule", "GET, PATCH"),
        ("/api/v1/overrides", "POST"),
        ("/api/v1/state", "GET"),
        ("/api/v1/openapi.json", "GET"),
    ],
)
@pytest.mark.parametrize("method", ["put", "delete", "options", "trace", "post", "patch"])
def test_405s_carry_allow_in_the_api_shape(api: Any, path: str, allowed: str, method: str) -> None:
    if method.upper() in allowed:
        return
    # CSRF is enforced as a browser's request would meet it: a 405 comes first.
    for client in (
        Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {api.token}"),
        Client(enforce_csrf_checks=True),
    ):
        response = getattr(client, method)(path)
        assert response.status_code == 405, (method, path, response.content[:200])
        assert response["Allow"] == allowed
        assert response.json()["error"] == "method_not_allowed"


def test_every_token_operation_declares_its_failures(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            if operation.get("security") == []:
                continue
            for code in ("401", "429", "503"):
                assert code in responses, (path, method, code)
            for code in ("429", "503"):
                assert responses[code]["headers"]["Retry-After"]["required"] is True
            if "requestBody" in operation:
                assert {"400", "413", "422"} <= set(responses), (path, method)


def _string_schemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        kind = node.get("type")
        if (kind == "string" or (isinstance(kind, list) and "string" in kind)) and not (
            "enum" in node or "const" in node
        ):
            yield node
        for value in node.values():
            yield from _string_schemas(value)
    elif isinstance(node, list):
        for item in node:
            yield from _string_schemas(item)


def test_no_request_text_admits_nul(document: dict[str, Any]) -> None:
    """The validators refuse NUL in every text (PostgreSQL cannot store it),
    so every text a request may send has a pattern that refuses it too."""
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            for schema in _string_schemas(body["schema"] if body else None):
                assert "pattern" in schema, (path, method, schema)
                assert re.fullmatch(schema["pattern"], "a\x00") is None, (path, method, schema)


# -- every schema is generated from the declaration its code uses -------------


def test_the_answers_are_the_wire_models(document: dict[str, Any]) -> None:
    from curfew_client.wire import openapi_schemas

    components = document["components"]["schemas"]
    for name, schema in openapi_schemas().items():
        assert components[name] == schema, name
    for path, method, name in (("/verdict", "post", "Verdict"), ("/state", "get", "State")):
        response = document["paths"][path][method]["responses"]["200"]
        assert response["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{name}"
        }


def test_the_requests_and_errors_are_the_parsers_models(document: dict[str, Any]) -> None:
    from curfew_core.schedules import override_commands
    from curfew_core.schema.errors import ErrorBody
    from curfew_core.schema.verdict_request import VERDICT_FIELDS, VerdictRequestBody

    components = document["components"]["schemas"]
    assert components["VerdictRequest"] == VerdictRequestBody.model_json_schema()
    assert tuple(components["VerdictRequest"]["properties"]) == VERDICT_FIELDS
    assert components["Error"] == ErrorBody.model_json_schema()
    verbs = []
    for model in override_commands.OVERRIDE_REQUESTS:
        assert components[model.__name__] == model.model_json_schema()
        verbs += components[model.__name__]["required"]
    assert tuple(verbs) == override_commands.VERBS
    assert components["OverrideRequest"] == {
        "oneOf": [
            {"$ref": f"#/components/schemas/{model.__name__}"}
            for model in override_commands.OVERRIDE_REQUESTS
        ]
    }


def test_error_bodies_are_the_declared_model(api: Any) -> None:
    """Each error the API answers parses as ``ErrorBody`` with no key left over."""
    from curfew_core.schema.errors import ErrorBody

    for body in (
        api.patch("/api/v1/schedule", {"curve": "cubic"}).json(),
        api.post("/api/v1/verdict", {"at": "1800-01-01T00:00:00+00:00"}).json(),
        Client().get("/api/v1/state").json(),
    ):
        assert set(body) <= set(ErrorBody.model_fields), body
        ErrorBody.model_validate(body, strict=True)
