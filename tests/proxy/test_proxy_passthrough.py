"""On duty a forwarded request reaches the upstream whole (issue 24, item 3):
every header the client sent but hop-by-hop ones, credentials, cookies and
Curfew's own, and its query string, after the fixed path.

Sent as raw bytes on a real socket to the served proxy, on every door that
forwards, and read off the recording fake upstream. Each header an SDK or
agent adds must arrive with its value; the control group (what must not
arrive) is sent in the same request. An attacker's query cannot change the
upstream's path or host.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_openai_more import STORED_RESPONSE_ID
from curfew_testkit.fake_upstream import FakeUpstream, Recorded
from tests.proxy import rawhttp
from tests.proxy.conftest import ANTHROPIC_KEY, UPSTREAM_KEY, Proxy
from tests.proxy.owners import own
from tests.proxy.test_proxy_gates import ON_DUTY, WINDING

CHAT = b'{"model": "m",  "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9000}'


@dataclass(frozen=True)
class Door:
    method: str
    path: str
    body: bytes
    #: Where the fake upstream records it.
    upstream_path: str
    anthropic: bool = False


DOORS = {
    "chat": Door("POST", "/v1/chat/completions", CHAT, "/v1/chat/completions"),
    "responses": Door("POST", "/v1/responses", b'{"model": "m", "input": "hi"}', "/v1/responses"),
    "completions": Door(
        "POST", "/v1/completions", b'{"model": "m", "prompt": "hi"}', "/v1/completions"
    ),
    "embeddings": Door(
        "POST", "/v1/embeddings", b'{"model": "m", "input": "hi"}', "/v1/embeddings"
    ),
    "models": Door("GET", "/v1/models", b"", "/v1/models"),
    "model": Door("GET", "/v1/models/fake-model", b"", "/v1/models/fake-model"),
    "stored response": Door(
        "GET",
        f"/v1/responses/{STORED_RESPONSE_ID}",
        b"",
        f"/v1/responses/{STORED_RESPONSE_ID}",
    ),
    "messages": Door(
        "POST",
        "/v1/messages",
        b'{"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}',
        "/anthropic/v1/messages",
        anthropic=True,
    ),
    "count_tokens": Door(
        "POST",
        "/v1/messages/count_tokens",
        b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
        "/anthropic/v1/messages/count_tokens",
        anthropic=True,
    ),
}

#: What SDKs and agents add, each of which must arrive as sent.
PASSED = [
    ("idempotency-key", "stainless-python-retry-6f1c2a"),
    ("openai-beta", "responses=experimental"),
    ("session-id", "0199a1b2-codex-session"),
    ("thread-id", "0199a1b2-codex-thread"),
    ("x-client-request-id", "0199a1b2-req"),
    ("originator", "codex_cli_rs"),
    ("x-codex-turn-metadata", '{"turn_id":"t-3","sandbox":"none"}'),
    ("x-codex-beta-features", "a"),
    ("x-codex-beta-features", "b"),  # a repeated header arrives twice
    ("user-agent", "codex_cli_rs/0.50.0 (Debian 13; x86_64)"),
    ("accept", "text/event-stream"),
    ("x-stainless-retry-count", "0"),
    ("anthropic-beta", "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"),
    ("x-odd_name", "an underscore in a name that is not a dropped one"),
    # UTF-8 on the wire (rawhttp writes latin-1; the fake reads latin-1 back).
    ("x-text", "日本 é".encode().decode("latin-1")),
]
#: The control group: sent in the same request, none may arrive.
DROPPED = [
    ("Connection", "close, x-named-by-connection"),
    ("x-named-by-connection", "hop-by-hop by the client's say"),
    ("keep-alive", "timeout=5"),
    ("proxy-connection", "keep-alive"),
    ("te", "trailers"),
    ("trailer", "x-checksum"),
    ("upgrade", "h2c"),
    ("cookie", "session=client-cookie"),
    ("proxy-authorization", "Basic Y2xpZW50OnByb3h5"),
    ("api-key", "client-azure-key"),
    ("openai-organization", "org-the-clients-own"),
    ("openai-project", "proj_the_clients_own"),
    ("x_api_key", "client-underscored-key"),
    ("x-curfew-session", "s-passthrough"),
    ("x-curfew-purpose", "chat"),
    ("x_curfew_note", "curfew's own, spelt with underscores"),
    ("accept-encoding", "br, zstd"),
    ("x-latin", "caf\xe9"),  # not UTF-8: could not arrive as the bytes sent
]
#: Each dropped name (lower case), but those the HTTP client sets anew for the
#: upstream's connection: only the client's value must not arrive there.
DROPPED_NAMES = {name.lower() for name, _ in DROPPED} - {"accept-encoding", "connection"}


def _credentials(door: Door, proxy: Proxy) -> list[tuple[str, str]]:
    """The token where the door reads it, and a decoy in the other header:
    neither may reach the upstream."""
    if door.anthropic:
        return [("x-api-key", proxy.token), ("Authorization", "Bearer client-decoy")]
    return [("Authorization", f"Bearer {proxy.token}"), ("x-api-key", "client-decoy")]


def _sent(door: Door, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic) -> Recorded:
    fake = anthropic_upstream if door.anthropic else upstream
    [sent] = fake.requests
    assert sent.route == door.upstream_path
    return sent


def _chunked(body: bytes) -> bytes:
    half = len(body) // 2
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (body[:half], body[half:]))


@pytest.mark.parametrize("name", DOORS)
def test_every_header_but_the_dropped_ones_arrives_as_sent(
    proxy: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic, name: str
) -> None:
    door = DOORS[name]
    if name == "stored response":
        own(proxy.app, "proxy-ada", STORED_RESPONSE_ID)  # only its maker reads it
    proxy.travel(ON_DUTY)
    headers = [*_credentials(door, proxy), *PASSED, *DROPPED]
    if door.body:
        headers += [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]
        body = _chunked(door.body) + b"0\r\n\r\n"
    else:
        body = b""
    response = rawhttp.request(
        proxy.app.base_url, door.method, door.path, headers=headers, body=body
    )
    assert response.status == 200, response.body[:300]
    assert response.headers["x-curfew-action"] == "pass"
    sent = _sent(door, upstream, anthropic_upstream)
    arrived = sent.header_list
    for header in PASSED:
        assert header in arrived, f"{header[0]} did not arrive as sent"
    names = {header for header, _ in arrived}
    assert not names & DROPPED_NAMES, names & DROPPED_NAMES
    for dropped_name, value in DROPPED:
        assert (dropped_name.lower(), value) not in arrived
    # The credentials the upstream sees are the operator's, once, in its header.
    key = ANTHROPIC_KEY if door.anthropic else UPSTREAM_KEY
    auth = [(h, v) for h, v in arrived if h in ("authorization", "x-api-key", "x_api_key")]
    assert auth == (
        [("x-api-key", key)] if door.anthropic else [("authorization", f"Bearer {key}")]
    )
    assert proxy.token not in json.dumps(arrived)
    # Remade for the upstream's connection: its host, the body's real length.
    fake = anthropic_upstream if door.anthropic else upstream
    assert sent.headers["Host"] == f"127.0.0.1:{fake.port}"
    assert sent.body == door.body  # on duty, the very bytes
    if door.body:
        assert sent.headers["Content-Length"] == str(len(door.body))
        assert "transfer-encoding" not in names


def test_a_clamped_body_goes_with_its_own_length_and_the_clients_headers(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(WINDING)
    response = rawhttp.request(
        proxy.app.base_url,
        "POST",
        "/v1/chat/completions?trace=1",
        headers=[("Authorization", f"Bearer {proxy.token}"), *PASSED],
        body=CHAT,
    )
    assert response.headers["x-curfew-action"] == "clamp"
    [sent] = upstream.requests
    assert sent.json["max_tokens"] < 9000
    assert sent.headers["Content-Length"] == str(len(sent.body)) != str(len(CHAT))
    assert (sent.route, sent.query) == ("/v1/chat/completions", "trace=1")
    for header in PASSED:
        assert header in sent.header_list


def test_the_anthropic_version_defaults_only_when_the_client_sent_none(
    proxy: Proxy, anthropic_upstream: FakeAnthropic
) -> None:
    proxy.travel(ON_DUTY)
    door = DOORS["messages"]
    for version in ("2023-06-01; odd but text", None):
        headers = [("x-api-key", proxy.token), ("Content-Type", "application/json")]
        if version is not None:
            headers.append(("anthropic-version", version))
        rawhttp.request(proxy.app.base_url, "POST", door.path, headers=headers, body=door.body)
    odd, default = anthropic_upstream.message_requests
    assert [v for h, v in odd.header_list if h == "anthropic-version"] == [
        "2023-06-01; odd but text"
    ]
    assert [v for h, v in default.header_list if h == "anthropic-version"] == ["2023-06-01"]


# -- the query string ----------------------------------------------------------------


@pytest.mark.parametrize("name", DOORS)
def test_the_query_string_arrives_after_the_fixed_path(
    proxy: Proxy, upstream: FakeUpstream, anthropic_upstream: FakeAnthropic, name: str
) -> None:
    """Claude Code's ``/v1/messages?beta=true`` and any client's query."""
    door = DOORS[name]
    if name == "stored response":
        own(proxy.app, "proxy-ada", STORED_RESPONSE_ID)  # only its maker reads it
    proxy.travel(ON_DUTY)
    query = "beta=true&api-version=2025-04-01&q=a%2Fb+c&empty="
    response = rawhttp.request(
        proxy.app.base_url,
        door.method,
        f"{door.path}?{query}",
        headers=[*_credentials(door, proxy), ("Content-Type", "application/json")],
        body=door.body,
    )
    assert response.status == 200, response.body[:300]
    sent = _sent(door, upstream, anthropic_upstream)
    assert sent.path == f"{door.upstream_path}?{query}"


def test_no_query_means_none_upstream(proxy: Proxy, upstream: FakeUpstream) -> None:
    """The control for the test above: nothing is made up."""
    proxy.travel(ON_DUTY)
    rawhttp.request(
        proxy.app.base_url,
        "POST",
        "/v1/chat/completions",
        headers={"Authorization": f"Bearer {proxy.token}"},
        body=CHAT,
    )
    [sent] = upstream.requests
    assert sent.path == "/v1/chat/completions"


LONG = "a=" + "x" * 6000
#: ``(query as sent, query as it must arrive)``: an attacker's query stays a query.
ATTACKS = [
    ("x=1#frag", "x=1"),
    ("x=1#/../../user/balance", "x=1"),
    ("/../../user/balance", "/../../user/balance"),
    ("a=/../../../x&b=..", "a=/../../../x&b=.."),
    ("%2F..%2F..%2Fuser%2Fbalance", "%2F..%2F..%2Fuser%2Fbalance"),
    ("%2e%2e/%2e%2e/x", "%2e%2e/%2e%2e/x"),
    ("x=%zz%", "x=%25zz%25"),
    ("@evil.example:80/x", "@evil.example:80/x"),
    ("?x=1??", "?x=1??"),
    (LONG, LONG),
]


@pytest.mark.parametrize(("raw_query", "arrives"), ATTACKS)
@pytest.mark.parametrize("name", ["chat", "messages", "model"])
def test_an_attackers_query_cannot_change_the_upstream_path(
    proxy: Proxy,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
    name: str,
    raw_query: str,
    arrives: str,
) -> None:
    door = DOORS[name]
    proxy.travel(ON_DUTY)
    response = rawhttp.request(
        proxy.app.base_url,
        door.method,
        f"{door.path}?{raw_query}",
        headers=[*_credentials(door, proxy), ("Content-Type", "application/json")],
        body=door.body,
    )
    assert response.status == 200, response.body[:300]
    sent = _sent(door, upstream, anthropic_upstream)
    assert sent.path == f"{door.upstream_path}?{arrives}"
    assert sent.headers["Host"].startswith("127.0.0.1:")
