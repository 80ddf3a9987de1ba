"""The served app with Redis refused, and with PostgreSQL unreachable: every door
answers in its own shape (status, content type, body, ``Retry-After``, close code).

Served, because part of the failure is below Django: the WebSocket handshake
runs through Channels and the ASGI server, where an uncaught error becomes an
HTTP 500 instead of the documented 1011 close.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.faults.conftest import REFUSED_REDIS_URL, UNREACHABLE_DATABASE_URL

CLOSE_UNAVAILABLE = 1011
SESSION_COOKIE = "sessionid"


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    app: ServedApp,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", app.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        conn.close()


def assert_json_503(answer: Answer) -> dict[str, Any]:
    assert answer.status == 503, answer.body[:300]
    assert answer.content_type == "application/json"
    assert answer.headers["Retry-After"].isdigit()
    body: dict[str, Any] = answer.json()
    assert set(body) == {"error", "message"}
    assert body["error"] == "unavailable"
    return body


def assert_page_503(answer: Answer) -> None:
    assert answer.status == 503, answer.body[:300]
    assert answer.content_type.startswith("text/html")
    assert answer.headers["Retry-After"].isdigit()
    text = answer.body.decode()
    assert "Temporarily unavailable" in text
    # The app's own hashed stylesheet (collectstatic ran), under the strict CSP.
    assert re.search(r'href="/static/curfew/curfew\.[0-9a-f]+\.css"', text), text[:500]
    assert "style-src 'self'" in answer.headers["Content-Security-Policy"]


def ws_close_code(app: ServedApp, path: str, headers: dict[str, str] | None = None) -> int:
    """Open the socket and return the close code it ends with (a handshake refused
    with an HTTP status fails the test: the browser would only see 1006)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    def drain(ws: Any) -> None:
        while True:
            ws.recv(timeout=10)

    url = f"ws://127.0.0.1:{app.port}{path}"
    with (
        connect(url, additional_headers=headers or {}) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        drain(ws)
    frame = closed.value.rcvd
    assert frame is not None, "closed without a close frame"
    return int(frame.code)


def make_session(app: ServedApp, username: str) -> str:
    """A signed-in session key for ``username``, made straight in the database."""
    out = app.manage(
        "shell",
        "-c",
        "from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY\n"
        "from django.contrib.auth.models import User\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        f"u = User.objects.get(username={username!r})\n"
        "s = SessionStore()\n"
        "s[SESSION_KEY] = str(u.pk)\n"
        "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'\n"
        "s[HASH_SESSION_KEY] = u.get_session_auth_hash()\n"
        "s.create()\n"
        "print(s.session_key)\n",
    ).stdout
    return out.strip().splitlines()[-1]


def session_socket_headers(app: ServedApp, session_key: str) -> dict[str, str]:
    return {"Origin": app.base_url, "Cookie": f"{SESSION_COOKIE}={session_key}"}


@dataclass
class Outage:
    app: ServedApp
    api: str
    embed: str
    session: str


@pytest.fixture(scope="module")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    """collectstatic once for both servers (hashed names, as in production)."""
    workdir = tmp_path_factory.mktemp("outage-static")
    ServedApp(workdir, env={"REDIS_URL": ""}).manage("collectstatic", "--no-input", "-v0")
    return str(workdir / "static")


def _outage(workdir: Path, env: dict[str, str], *, prepared_env: dict[str, str]) -> Outage:
    """Users and tokens made while everything works; then serve with ``env`` broken."""
    healthy = ServedApp(workdir, env=prepared_env)
    healthy.manage("migrate", "--no-input", "-v0")
    api = healthy.create_user("faulty")
    embed = healthy.manage("curfew", "embed-token", "--user", "faulty").stdout.split()[-1]
    session = make_session(healthy, "faulty")
    app = ServedApp(workdir, env={**prepared_env, **env})
    app.start()
    return Outage(app, api, embed, session)


@pytest.fixture(scope="module")
def redis_refused(tmp_path_factory: pytest.TempPathFactory, static_root: str) -> Iterator[Outage]:
    outage = _outage(
        tmp_path_factory.mktemp("redis-refused"),
        {"REDIS_URL": REFUSED_REDIS_URL},
        prepared_env={"REDIS_URL": "", "CURFEW_STATIC_ROOT": static_root},
    )
    yield outage
    outage.app.stop()


@pytest.fixture(scope="module")
def database_down(tmp_path_factory: pytest.TempPathFactory, static_root: str) -> Iterator[Outage]:
    outage = _outage(
        tmp_path_factory.mktemp("database-down"),
        # Each request waits this long for a connection before its 503 (5 s by default).
        {"DATABASE_URL": UNREACHABLE_DATABASE_URL, "CURFEW_DATABASE_POOL_WAIT": "1"},
        prepared_env={"REDIS_URL": "", "CURFEW_STATIC_ROOT": static_root},
    )
    yield outage
    outage.app.stop()


# -- Redis refused ---------------------------------------------------------------------


def test_redis_refused_embed_state(redis_refused):
    o = redis_refused
    assert_json_503(request(o.app, "GET", f"/embed/state?token={o.embed}"))


def test_redis_refused_embed_capsule_page(redis_refused):
    o = redis_refused
    answer = request(o.app, "GET", f"/embed/capsule/?token={o.embed}")
    assert_page_503(answer)
    assert "frame-ancestors *" in answer.headers["Content-Security-Policy"]


def test_redis_refused_api(redis_refused):
    o = redis_refused
    assert_json_503(
        request(
            o.app,
            "POST",
            "/api/v1/verdict",
            body=b"{}",
            headers={"Authorization": f"Bearer {o.api}", "Content-Type": "application/json"},
        )
    )


def test_redis_refused_proxy_answers_in_openai_shape(redis_refused):
    """The proxy's own helper answers (503 with Retry-After is its item); here:
    never HTML, always OpenAI's error object, labelled as undecided."""
    o = redis_refused
    answer = request(
        o.app,
        "POST",
        "/v1/chat/completions",
        body=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Authorization": f"Bearer {o.api}", "Content-Type": "application/json"},
    )
    assert answer.status >= 500
    assert answer.content_type == "application/json"
    assert set(answer.json()["error"]) >= {"message", "type", "code"}
    assert answer.headers["X-Curfew-Action"] == "none"


def test_redis_refused_sign_in_is_never_an_html_500(redis_refused):
    o = redis_refused
    page = request(o.app, "GET", "/login/")
    assert page.status == 200
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body.decode())
    assert csrf is not None
    cookie = page.headers["Set-Cookie"].split(";", 1)[0]
    form = f"csrfmiddlewaretoken={csrf.group(1)}&username=faulty&password=correct+horse+battery"
    answer = request(
        o.app,
        "POST",
        "/login/",
        body=form.encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": cookie,
            "Origin": o.app.base_url,
            "Referer": f"{o.app.base_url}/login/",
        },
    )
    # The sign-in itself is committed before the cache is touched: either it
    # stands (a redirect) or the styled page says to retry.
    if answer.status != 302:
        assert_page_503(answer)


def test_redis_refused_token_socket_closes_1011(redis_refused):
    o = redis_refused
    assert ws_close_code(o.app, f"/ws/capsule/?token={o.embed}") == CLOSE_UNAVAILABLE


def test_redis_refused_session_socket_closes_1011(redis_refused):
    o = redis_refused
    code = ws_close_code(o.app, "/ws/capsule/", session_socket_headers(o.app, o.session))
    assert code == CLOSE_UNAVAILABLE


# -- PostgreSQL unreachable ----------------------------------------------------------------


def test_database_down_cold_embed_token_gets_the_styled_page(database_down):
    o = database_down
    answer = request(o.app, "GET", f"/embed/capsule/?token={o.embed}")
    assert_page_503(answer)


def test_database_down_embed_state(database_down):
    o = database_down
    assert_json_503(request(o.app, "GET", f"/embed/state?token={o.embed}"))


def test_database_down_api(database_down):
    o = database_down
    assert_json_503(
        request(
            o.app,
            "POST",
            "/api/v1/verdict",
            body=b"{}",
            headers={"Authorization": f"Bearer {o.api}", "Content-Type": "application/json"},
        )
    )


def test_database_down_settings_page(database_down):
    o = database_down
    answer = request(o.app, "GET", "/", headers={"Cookie": f"{SESSION_COOKIE}={o.session}"})
    assert_page_503(answer)


def test_database_down_readyz_names_the_database(database_down):
    answer = request(database_down.app, "GET", "/readyz")
    assert answer.status == 503
    assert answer.json()["database"] == "unreachable"


def test_database_down_token_socket_closes_1011(database_down):
    o = database_down
    assert ws_close_code(o.app, f"/ws/capsule/?token={o.embed}") == CLOSE_UNAVAILABLE


def test_database_down_session_socket_closes_1011(database_down):
    o = database_down
    code = ws_close_code(o.app, "/ws/capsule/", session_socket_headers(o.app, o.session))
    assert code == CLOSE_UNAVAILABLE
