"""A 404, 403 or 400 on a door Django serves in the API's shape (``/api/``
outside the edge's routes, the probes, the capsule's state) is the API's
JSON, never the site's HTML page (which the pages door keeps: the control).
Every door answers in its own shape."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory

from curfew_core.edge import outage

pytestmark = pytest.mark.django_db

API_SHAPED = ["/api/nope", "/healthz/nope", "/readyz/nope", "/embed/state/nope"]


def _api_error(response: object, status: int, code: str) -> None:
    assert response.status_code == status  # type: ignore[attr-defined]
    assert response["Content-Type"] == "application/json"  # type: ignore[index]
    body = json.loads(response.content)  # type: ignore[attr-defined]
    assert body["error"] == code, body


@pytest.mark.parametrize("path", API_SHAPED)
def test_a_path_django_does_not_know_on_an_api_door_is_json(path: str) -> None:
    _api_error(Client().get(path), 404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        "/api/%ff%fe%00x",  # not UTF-8, a NUL
        "/healthz/" + "a" * 20_000,  # huge
        "/api/..%2f..%2fetc%2fpasswd",  # a path that tries to escape
        "/embed/state/%c0%af",  # an overlong slash
    ],
)
def test_a_hostile_path_on_an_api_door_is_the_apis_json(path: str) -> None:
    response = Client().get(path)
    assert response.status_code in (400, 404)
    assert response["Content-Type"] == "application/json"
    assert "error" in json.loads(response.content)


def test_a_missing_page_is_the_sites_page() -> None:
    """The control: the pages door keeps its HTML 404."""
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"<html" in response.content


@pytest.mark.parametrize(
    ("handler", "status", "code"),
    [(outage.forbidden, 403, "forbidden"), (outage.bad_request, 400, "invalid_request")],
)
def test_a_refusal_on_an_api_door_is_json_and_on_a_page_html(
    handler: object, status: int, code: str
) -> None:
    request = RequestFactory().get("/healthz/x")
    _api_error(handler(request, PermissionDenied()), status, code)  # type: ignore[operator]
    page = RequestFactory().get("/team/")
    page.user = None  # type: ignore[assignment]
    response = handler(page, PermissionDenied())  # type: ignore[operator]
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
