"""The Gemini door served for real (uvicorn, its access log at DEBUG), a REST
client's ``?key=<curfew token>`` on the wire: the query reaches Google's API
as sent but that ``key`` (the operator's key goes as ``x-goog-api-key``), and
the server's log, every logger and uvicorn's access line of each request, never
holds the token (``curfew_site/redaction.py``; ``tests/readme``'s
``assert_no_secret_logged`` for the other doors)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from curfew_testkit.server import ServedApp
from tests.proxy import rawhttp
from tests.proxy.conftest import Proxy
from tests.proxy.test_gemini import BODY, GOOGLE_KEY, STREAM, FakeGemini
from tests.proxy.test_proxy_gates import OFF_DUTY, ON_DUTY

#: Query parameters a client sends beside its key, in its own order and escapes.
OTHERS = "alt=sse&x=a%20b&%24fields=candidates"


@pytest.fixture(scope="module")
def google() -> Iterator[FakeGemini]:
    fake = FakeGemini().start()
    yield fake
    fake.stop()


class _AccessLogged(ServedApp):
    """The served app with uvicorn's access log on (``make run``'s is): a
    line per request, its path and query as sent, through the redaction."""

    def command(self) -> list[str]:
        return [part for part in super().command() if part != "--no-access-log"]


@pytest.fixture(scope="module")
def gemini_app(tmp_path_factory: pytest.TempPathFactory, google: FakeGemini) -> Iterator[ServedApp]:
    app = _AccessLogged(
        Path(tmp_path_factory.mktemp("gemini")),
        env={
            "CURFEW_GEMINI_UPSTREAM_BASE_URL": google.base_url,
            "CURFEW_GEMINI_UPSTREAM_API_KEY": GOOGLE_KEY,
            # Everything the proxy and its HTTP client log, so the grep sees it all.
            "CURFEW_LOG_LEVEL": "DEBUG",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
def served(gemini_app: ServedApp) -> Proxy:
    return Proxy(gemini_app, gemini_app.create_user("gemini-ada"))


@pytest.fixture(autouse=True)
def _fresh(google: FakeGemini) -> None:
    google.requests.clear()


def _post(served: Proxy, query: str, headers: list[tuple[str, str]]) -> rawhttp.RawResponse:
    return rawhttp.request(
        served.app.base_url,
        "POST",
        f"{STREAM}?{query}",
        headers=[*headers, ("Content-Type", "application/json")],
        body=json.dumps(BODY).encode(),
    )


def test_with_the_header_a_query_key_is_left_out_and_the_rest_goes_as_sent(
    served: Proxy, google: FakeGemini
) -> None:
    served.travel(ON_DUTY)
    query = f"alt=sse&key={served.token}&x=a%20b&%24fields=candidates"
    response = _post(served, query, [("x-goog-api-key", served.token)])
    assert response.status == 200, response.body[:300]
    assert response.headers["x-curfew-action"] == "pass"
    [sent] = google.requests
    assert sent.path == f"{STREAM}?{OTHERS}"
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY
    assert served.token[4:] not in json.dumps(sent.lines)


def test_the_query_key_alone_is_the_token(served: Proxy, google: FakeGemini) -> None:
    served.travel(ON_DUTY)
    response = _post(served, f"alt=sse&key={served.token}&x=a%20b&%24fields=candidates", [])
    assert response.status == 200, response.body[:300]
    assert response.headers["x-curfew-action"] == "pass"
    [sent] = google.requests
    assert sent.path == f"{STREAM}?{OTHERS}"
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY
    assert served.token[4:] not in json.dumps(sent.lines)


def test_the_servers_log_never_holds_a_query_key(served: Proxy, google: FakeGemini) -> None:
    """On duty and off, a known token and an unknown one, with and without
    the header: the access log has each request line, and no token."""
    unknown = "cfw_" + "Q7" * 21 + "z"
    for moment in (ON_DUTY, OFF_DUTY):
        served.travel(moment)
        for key in (served.token, unknown):
            _post(served, f"alt=sse&key={key}", [])
            _post(served, f"key={key}&alt=sse", [("x-goog-api-key", served.token)])
    log = served.app.log_path.read_text(errors="replace")
    # The control: the access lines are in it, each key cut where it stood.
    assert log.count("streamGenerateContent?alt=sse&key=[redacted] HTTP/1.1") == 4, log[-3000:]
    assert log.count("streamGenerateContent?key=[redacted]&alt=sse HTTP/1.1") == 4
    for secret in (served.token, served.token[4:], unknown[4:], GOOGLE_KEY):
        leaked = [line for line in log.splitlines() if secret in line]
        assert not leaked, f"a credential in the server's log: {leaked[:3]}"
