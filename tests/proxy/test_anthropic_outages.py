"""An outage at ``/v1/messages`` is answered in Anthropic's shape: with the
database unreachable or Redis refused, a 503 with ``Retry-After`` and the
``X-Curfew-*`` labels that the ``anthropic`` SDK raises as its own error, and
nothing sent upstream."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from django.db import OperationalError
from django.test import RequestFactory
from redis.exceptions import ConnectionError as RedisConnectionError

from curfew_core.edge import outage
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.server import ServedApp, free_port

BODY = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


def _env(anthropic_upstream: FakeAnthropic) -> dict[str, str]:
    return {
        "REDIS_URL": "",
        "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": f"{anthropic_upstream.base_url}/anthropic",
        "CURFEW_MANIFEST_STATIC": "0",
    }


@pytest.fixture
def database_unreachable(tmp_path: Path, anthropic_upstream: FakeAnthropic) -> Iterator[ServedApp]:
    app = ServedApp(
        tmp_path,
        env={
            **_env(anthropic_upstream),
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/curfew",
            # Each call waits this long for a connection before its 503 (5 s by default).
            "CURFEW_DATABASE_POOL_WAIT": "1",
        },
    )
    app.start()
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def redis_refused(
    tmp_path: Path, anthropic_upstream: FakeAnthropic
) -> Iterator[tuple[ServedApp, str]]:
    app = ServedApp(tmp_path, env=_env(anthropic_upstream))
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("outage-ada")
    # Nothing listens there: Redis refuses every connection.
    app.env["REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    app.start()
    try:
        yield app, token
    finally:
        app.stop()


def _assert_unavailable(response: Any) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "api_error"
    assert isinstance(body["error"]["message"], str)
    assert int(response.headers["Retry-After"]) > 0
    assert response.headers["X-Curfew-State"] == "unknown"
    assert response.headers["X-Curfew-Action"] == "none"


def _calls(app: ServedApp, token: str) -> list[httpx.Response]:
    return [
        httpx.post(f"{app.base_url}/v1/messages", json=BODY, headers=headers, timeout=30)
        for headers in ({"x-api-key": token}, {"Authorization": f"Bearer {token}"})
    ] + [
        httpx.post(
            f"{app.base_url}/v1/messages/count_tokens",
            json=BODY,
            headers={"x-api-key": token},
            timeout=30,
        )
    ]


def test_an_unreachable_database_is_a_503_in_anthropics_shape(
    database_unreachable: ServedApp, anthropic_upstream: FakeAnthropic
) -> None:
    # A token the process has never seen: its lookup must ask the database.
    for response in _calls(database_unreachable, "cfw_never-seen-before"):
        _assert_unavailable(response)
    client = anthropic.Anthropic(
        base_url=database_unreachable.base_url, api_key="cfw_never-seen-before", max_retries=0
    )
    with pytest.raises(anthropic.ServiceUnavailableError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=BODY["messages"])  # type: ignore[arg-type]
    _assert_unavailable(caught.value.response)
    assert anthropic_upstream.requests == []


def test_redis_refused_is_a_503_in_anthropics_shape(
    redis_refused: tuple[ServedApp, str], anthropic_upstream: FakeAnthropic
) -> None:
    app, token = redis_refused
    for response in _calls(app, token):
        _assert_unavailable(response)
    assert anthropic_upstream.requests == []


# -- the safety nets, for what escapes the door ------------------------------------


@pytest.mark.parametrize(
    "fault", [OperationalError("could not connect"), RedisConnectionError("Error 111")]
)
def test_the_outage_middleware_answers_messages_in_anthropics_shape(fault: Exception) -> None:
    request = RequestFactory().post("/v1/messages")
    response = outage.OutageMiddleware(lambda r: None).process_exception(request, fault)  # type: ignore[arg-type,return-value]
    assert response is not None
    _assert_unavailable(_as_httpx(response))
    # The OpenAI doors beside it keep OpenAI's shape.
    chat = outage.door_answer(RequestFactory().post("/v1/chat/completions"), 503)
    assert set(json.loads(chat.content)["error"]) == {"message", "type", "param", "code"}


def test_a_bug_escaping_to_handler500_is_a_500_in_anthropics_shape() -> None:
    try:
        raise ValueError("a plain bug")
    except ValueError:
        response = outage.server_error(RequestFactory().post("/v1/messages/count_tokens"))
    assert response.status_code == 500
    assert json.loads(response.content)["error"]["type"] == "api_error"
    assert "Retry-After" not in response


@pytest.mark.django_db(transaction=True)
async def test_an_unexpected_failure_in_the_door_is_a_500_in_anthropics_shape(
    token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from curfew_core.proxy import calls
    from curfew_testkit.asgi_client import AsyncClient

    def broken(*args: object) -> None:
        raise RuntimeError("database on fire")

    monkeypatch.setattr(calls, "judge", broken)
    with caplog.at_level(logging.ERROR, logger="curfew.edge"):
        response = await AsyncClient().post(
            "/v1/messages", BODY, content_type="application/json", headers={"x-api-key": token}
        )
    assert response.status_code == 500
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "api_error"
    assert response["X-Curfew-State"] == "unknown"
    assert "database on fire" in caplog.text


def _as_httpx(response: Any) -> httpx.Response:
    return httpx.Response(
        response.status_code, headers=dict(response.items()), content=response.content
    )
