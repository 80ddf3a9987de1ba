"""The served OpenAPI document: valid 3.1, complete, and true to the answers."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from curfew_core.api import urls as api_urls
from curfew_core.config import FIELDS


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
    routes = {
        "/" + str(pattern.pattern)
        for pattern in api_urls.urlpatterns
        if pattern.name != "api-not-found"
    }
    assert routes == set(document["paths"])
    # And the routes are where the document's server says they are.
    assert document["servers"] == [{"url": "/api/v1"}]
    resolver = get_resolver()
    for route in routes:
        assert resolver.resolve("/api/v1" + route)


def test_settings_schema_names_every_setting(document: dict[str, Any]) -> None:
    settings = document["components"]["schemas"]["Settings"]["properties"]
    assert set(settings) == set(FIELDS)
    get = document["paths"]["/schedule"]["get"]["responses"]["200"]
    out = get["content"]["application/json"]["schema"]
    assert set(out["required"]) == {*FIELDS, "version"}


def _schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    response = document["paths"][path][method]["responses"]["200"]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


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
    error = document["components"]["schemas"]["Error"]
    OAS31Validator(error).validate(api.patch("/api/v1/schedule", {"curve": "cubic"}).json())
    OAS31Validator(error).validate(Client().get("/api/v1/state").json())
