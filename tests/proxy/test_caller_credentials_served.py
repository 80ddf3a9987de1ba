"""A served proxy that lets callers bring their own provider credential
(``CURFEW_PROXY_CALLER_CREDENTIALS=1``, issue 42): on every door that
forwards, exactly the caller's credential reaches the upstream, with every
header ``test_proxy_passthrough`` passes, and no Curfew token, no operator
key and nothing that proxy drops; and the server's own log, at DEBUG, from
every logger and uvicorn's access log, never holds the credential.

Sent as raw bytes on a real socket (``rawhttp``), read off the recording fake
upstreams, as ``test_proxy_passthrough`` does for the operator's key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream, Recorded
from curfew_testkit.server import ServedApp
from tests.proxy import rawhttp
from tests.proxy.conftest import ANTHROPIC_KEY, UPSTREAM_KEY, Proxy
from tests.proxy.test_proxy_gates import OFF_DUTY, ON_DUTY
from tests.proxy.test_proxy_passthrough import DOORS, DROPPED, PASSED, Door

#: A Claude login's shape on the Messages door, one like nothing any redaction
#: knows on the OpenAI doors (a log line holding it could only have written it).
OAUTH = "sk-ant-oat01-" + "ServedLogin5" * 5
OPAQUE = "opaque-served-credential-Kp3Ws9"
#: With the caller's own OpenAI key its organization and project are its own.
ACCOUNT = {"openai-organization", "openai-project"}


@pytest.fixture(scope="module")
def own_app(
    tmp_path_factory: pytest.TempPathFactory,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
) -> Iterator[ServedApp]:
    app = ServedApp(
        Path(tmp_path_factory.mktemp("own-credentials")),
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": UPSTREAM_KEY,
            "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": f"{anthropic_upstream.base_url}/anthropic",
            "CURFEW_ANTHROPIC_UPSTREAM_API_KEY": ANTHROPIC_KEY,
            "CURFEW_PROXY_CALLER_CREDENTIALS": "1",
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
def own(own_app: ServedApp) -> Proxy:
    return Proxy(own_app, own_app.create_user("own-ada"))


def _credential(door: Door) -> tuple[str, str]:
    if door.anthropic:
        return ("Authorization", f"Bearer {OAUTH}")
    return ("Authorization", f"Bearer {OPAQUE}")


def _sent(door: Door, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic) -> Recorded:
    fake = anthropic_upstream if door.anthropic else upstream
    [sent] = fake.requests
    assert sent.route == door.upstream_path
    return sent


@pytest.mark.parametrize("name", DOORS)
def test_exactly_the_callers_credential_arrives(
    own: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic, name: str
) -> None:
    door = DOORS[name]
    own.travel(ON_DUTY)
    credential = _credential(door)
    headers = [("X-Curfew-Token", own.token), credential, *PASSED, *DROPPED]
    if door.body:
        headers.append(("Content-Type", "application/json"))
    response = rawhttp.request(
        own.app.base_url, door.method, door.path, headers=headers, body=door.body
    )
    assert response.status == 200, response.body[:300]
    assert response.headers["x-curfew-action"] == "pass"
    sent = _sent(door, upstream, anthropic_upstream)
    arrived = sent.header_list
    for header in PASSED:
        assert header in arrived, f"{header[0]} did not arrive as sent"
    # The credential: the caller's, once, in its header; nothing else of Curfew's.
    auth = [(h, v) for h, v in arrived if h in ("authorization", "x-api-key", "x_api_key")]
    assert auth == [(credential[0].lower(), credential[1])]
    every = json.dumps(arrived)
    for secret in (own.token, own.token[4:], UPSTREAM_KEY, ANTHROPIC_KEY):
        assert secret not in every
    assert not [h for h, _ in arrived if h.startswith(("x-curfew", "x_curfew"))]
    # What the proxy drops is dropped still, but the caller's own OpenAI account.
    for dropped_name, value in DROPPED:
        low = dropped_name.lower()
        if low in ACCOUNT and not door.anthropic:
            assert (low, value) in arrived
        else:
            assert (low, value) not in arrived
    assert sent.body == door.body  # on duty, the very bytes


def test_off_duty_nothing_reaches_the_upstream(
    own: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic
) -> None:
    own.travel(OFF_DUTY)
    for name in ("messages", "chat", "responses"):
        door = DOORS[name]
        response = rawhttp.request(
            own.app.base_url,
            door.method,
            door.path,
            headers=[
                ("X-Curfew-Token", own.token),
                _credential(door),
                ("Content-Type", "application/json"),
            ],
            body=door.body,
        )
        assert response.status == 200, response.body[:300]
        assert response.headers["x-curfew-action"] == "short-circuit"
    assert upstream.requests == []
    assert anthropic_upstream.requests == []


def test_the_servers_log_never_holds_the_credential(
    own: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic
) -> None:
    """After every door above, a refusal by the upstream and a broken body:
    the log (DEBUG, uvicorn's access log) holds neither credential, nor the
    Curfew token (``tests/readme``'s ``assert_no_secret_logged``, for these)."""
    own.travel(ON_DUTY)
    door = DOORS["messages"]
    own_key = [("X-Curfew-Token", own.token), ("x-api-key", OPAQUE)]
    anthropic_upstream.fail = (401, json.dumps({"error": {"message": OPAQUE}}).encode())
    refused = rawhttp.request(own.app.base_url, "POST", door.path, headers=own_key, body=door.body)
    assert refused.status == 401
    assert OPAQUE.encode() not in refused.body
    broken = rawhttp.request(own.app.base_url, "POST", door.path, headers=own_key, body=b"{")
    assert broken.status == 400
    log = own.app.log_path.read_text(errors="replace")
    assert "/v1/messages" in log  # the control: the access log is in it
    for secret in (OAUTH, OAUTH[13:], OPAQUE, own.token, own.token[4:]):
        leaked = [line for line in log.splitlines() if secret in line]
        assert not leaked, f"a credential in the server's log: {leaked[:3]}"
