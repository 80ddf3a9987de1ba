"""The new doors in-process: every way a request ends early still answers in
OpenAI's shape with the curfew's headers, and sends nothing upstream."""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings

from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import client

pytestmark = pytest.mark.django_db(transaction=True)

POST_DOORS = ["/v1/responses", "/v1/embeddings", "/v1/completions"]


@pytest.fixture
def recorded(upstream: FakeUpstream) -> FakeUpstream:
    """The fake upstream as the proxy's upstream, so a leak would be recorded."""
    return upstream


@pytest.mark.parametrize("path", POST_DOORS)
async def test_a_wrong_method_is_a_405_naming_post(token: str, path: str) -> None:
    response = await client(token).get(path)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert response["X-Curfew-Action"] == "none"


async def test_a_stored_response_takes_get_and_delete_only(token: str) -> None:
    response = await client(token).post("/v1/responses/resp_1", {})
    assert response.status_code == 405
    assert response["Allow"] == "GET, DELETE"


@pytest.mark.parametrize("path", [*POST_DOORS, "/v1/responses/resp_1"])
async def test_a_wrong_token_is_a_401_in_openai_shape(
    token: str, recorded: FakeUpstream, path: str
) -> None:
    with override_settings(CURFEW_UPSTREAM_BASE_URL=f"{recorded.base_url}/v1"):
        answer = client("cfw_not-a-token")
        response = await (
            answer.get(path) if "resp_" in path else answer.post(path, {"model": "m"})
        )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert response["WWW-Authenticate"] == 'Bearer realm="curfew"'
    assert response["X-Curfew-State"] == "unknown"
    assert recorded.requests == []


@pytest.mark.parametrize("path", POST_DOORS)
async def test_an_unexpected_failure_still_answers_in_openai_shape(
    token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    from curfew_core.proxy import calls

    def broken(*args: object) -> None:
        raise RuntimeError("database on fire")

    monkeypatch.setattr(calls, "judge", broken)
    with caplog.at_level(logging.ERROR, logger="curfew.edge"):
        response = await client(token).post(path, {"model": "m"})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert response["X-Curfew-Action"] == "none"
    assert "database on fire" not in response.content.decode()


@pytest.mark.parametrize("path", POST_DOORS)
async def test_a_bad_body_is_a_400_naming_the_door(
    token: str, recorded: FakeUpstream, path: str
) -> None:
    with override_settings(CURFEW_UPSTREAM_BASE_URL=f"{recorded.base_url}/v1"):
        response = await client(token).post(path, [1, 2])
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "JSON object" in message
    assert response["X-Curfew-State"] == "on-duty"
    assert recorded.requests == []
