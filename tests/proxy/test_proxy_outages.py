"""An outage is answered in OpenAI's shape (issue 9, item 8): with Redis refused
or the database unreachable, the proxy says 503 with ``Retry-After`` and its
``X-Curfew-*`` headers, never a 500, and sends nothing upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ServedApp, free_port

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["type"] == "server_error"
    assert error["code"] == "unavailable"
    assert int(response.headers["Retry-After"]) > 0
    assert response.headers["X-Curfew-State"] == "unknown"
    assert response.headers["X-Curfew-Action"] == "none"


def _calls(app: ServedApp, token: str) -> list[httpx.Response]:
    auth = {"Authorization": f"Bearer {token}"}
    return [
        httpx.post(f"{app.base_url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30),
        httpx.get(f"{app.base_url}/v1/models", headers=auth, timeout=30),
        httpx.get(f"{app.base_url}/v1/models/fake-model", headers=auth, timeout=30),
    ]


@pytest.fixture
def redis_refused(tmp_path: Path, upstream: FakeUpstream) -> Iterator[tuple[ServedApp, str]]:
    app = ServedApp(
        tmp_path,
        env={
            "REDIS_URL": "",
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("outage-ada")
    # Nothing listens there: Redis refuses every connection.
    app.env["REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    app.start()
    try:
        yield app, token
    finally:
        app.stop()


@pytest.fixture
def database_unreachable(tmp_path: Path, upstream: FakeUpstream) -> Iterator[ServedApp]:
    app = ServedApp(
        tmp_path,
        env={
            "REDIS_URL": "",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/curfew",
            # Each call waits this long for a connection before its 503 (5 s by default).
            "CURFEW_DATABASE_POOL_WAIT": "1",
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.start()
    try:
        yield app
    finally:
        app.stop()


def test_redis_refused_is_a_503_in_openai_shape(
    redis_refused: tuple[ServedApp, str], upstream: FakeUpstream
) -> None:
    app, token = redis_refused
    for response in _calls(app, token):
        _assert_unavailable(response)
    assert upstream.requests == []


def test_an_unreachable_database_is_a_503_in_openai_shape(
    database_unreachable: ServedApp, upstream: FakeUpstream
) -> None:
    # A token the process has never seen: its lookup must ask the database.
    for response in _calls(database_unreachable, "cfw_never-seen-before"):
        _assert_unavailable(response)
    assert upstream.requests == []
