"""Whatever escapes a door's own error handling is answered in the door's shape.

An outage (Redis, the database) anywhere in a view is a 503 with ``Retry-After``;
any other uncaught exception is a 500; both in the shape of the door, debug off.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from curfew_core.edge import dialects
from curfew_core.store.outage_log import Notice
from curfew_testkit.asgi_client import Client

pytestmark = [pytest.mark.urls("tests.faults.urls"), pytest.mark.django_db]

OUTAGES = ["redis", "database"]


def get(path: str) -> Any:
    return Client(raise_request_exception=False).get(path)


def assert_api_shape(response: Any, status: int) -> None:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert set(body) == {"error", "message"}
    assert body["error"] == ("unavailable" if status == 503 else "internal_error")


def assert_openai_shape(response: Any, status: int) -> None:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "server_error"
    assert (response["X-Curfew-State"], response["X-Curfew-Action"]) == ("unknown", "none")


def assert_page(response: Any, status: int) -> None:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    assert "/static/curfew/curfew.css" in text
    assert "style=" not in text
    assert "<style" not in text
    title = "Temporarily unavailable" if status == 503 else "Something went wrong"
    assert title in text


def assert_retry(response: Any, status: int) -> None:
    if status == 503:
        assert response["Retry-After"].isdigit()
    else:
        assert "Retry-After" not in response, "a bug is not an outage: retrying will not help"


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_api_door(fault, status, settings):
    assert not settings.DEBUG
    response = get(f"/api/boom/{fault}")
    assert_api_shape(response, status)
    assert_retry(response, status)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_api_thread_route(
    fault: str, status: int, api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync handler of the API door fails on the edge's thread: the same shapes."""
    from tests.faults.urls import FAULTS

    def boom(user_id: int) -> Any:
        raise FAULTS[fault]()

    monkeypatch.setattr("curfew_core.api.views.committed_schedule", boom)
    response = api.get("/api/v1/schedule")
    assert_api_shape(response, status)
    assert_retry(response, status)


def _failing_edge_handler(monkeypatch: pytest.MonkeyPatch, handler: str, fault: str) -> None:
    """The edge's handler of a route, failing on purpose (the edge is not Django's)."""
    from curfew_site.asgi import application
    from tests.faults.urls import FAULTS

    async def boom(request: Any) -> Any:
        raise FAULTS[fault]()

    edge = application.application_mapping["http"]
    monkeypatch.setitem(edge.handlers, handler, boom)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_proxy_door(fault, status, api, monkeypatch):
    _failing_edge_handler(monkeypatch, "curfew_core.proxy.chat.chat_completions", fault)
    response = Client(raise_request_exception=False).post(
        "/v1/chat/completions",
        "{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api.token}",
    )
    assert_openai_shape(response, status)
    assert_retry(response, status)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_anthropic_door(fault, status, api, monkeypatch):
    _failing_edge_handler(monkeypatch, "curfew_core.proxy.messages.messages", fault)
    response = Client(raise_request_exception=False).post(
        "/v1/messages", "{}", content_type="application/json", HTTP_X_API_KEY=api.token
    )
    assert response.status_code == status
    body = json.loads(response.content)
    assert body["type"] == "error"
    assert body["error"]["type"] == "api_error"  # Anthropic names a 5xx it has no name for so
    assert (response["X-Curfew-State"], response["X-Curfew-Action"]) == ("unknown", "none")
    assert_retry(response, status)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_api_edge_door(fault, status, api, monkeypatch):
    _failing_edge_handler(monkeypatch, "curfew_core.api.hot.verdict", fault)
    response = api.post("/api/v1/verdict", {})
    assert_api_shape(response, status)
    assert_retry(response, status)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_embed_state_door(fault, status):
    response = get(f"/embed/state/boom/{fault}")
    assert_api_shape(response, status)
    assert_retry(response, status)


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("database", 503), ("bug", 500)])
def test_page_door(fault, status):
    response = get(f"/boom/{fault}")
    assert_page(response, status)
    assert_retry(response, status)
    assert "frame-ancestors 'self'" in response["Content-Security-Policy"]


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("bug", 500)])
def test_a_page_door_without_collected_static_files_still_answers_a_page(
    fault: str,
    status: int,
    tmp_path: Any,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found from outside (2026-12-06): served with the manifest's storage and
    no ``collectstatic`` (``bin/serve run`` without ``prepare``), every page
    failed, and so did the error page (its stylesheet's ``{% static %}``):
    uvicorn's bare ``text/plain`` 500. The last answer now goes out plain,
    without its stylesheet, and says why in the log (once: each test's
    notice is its own)."""
    monkeypatch.setattr(dialects, "_unrendered", Notice(dialects.log, logging.ERROR))
    settings.STATIC_ROOT = str(tmp_path)
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    response = get(f"/boom/{fault}")
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    title = "Temporarily unavailable" if status == 503 else "Something went wrong"
    assert f"<h1>{title}</h1>" in text
    assert_retry(response, status)
    assert "could not be rendered" in caplog.text


@pytest.mark.parametrize(("fault", "status"), [("redis", 503), ("bug", 500)])
def test_iframe_capsule_error_page_can_be_framed(fault, status):
    response = get(f"/embed/capsule/boom/{fault}")
    assert_page(response, status)
    assert "frame-ancestors *" in response["Content-Security-Policy"]
    assert "X-Frame-Options" not in response


def test_a_door_that_answers_its_own_errors_keeps_its_answer(api):
    """The safety net is under the doors, not over them: a 401 stays the API's 401."""
    response = Client(raise_request_exception=False).post(
        "/api/v1/verdict", "{}", content_type="application/json"
    )
    assert response.status_code == 401
    assert json.loads(response.content)["error"] == "unauthorized"
