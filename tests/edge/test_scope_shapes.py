"""Every token door answers under every scope shape the ASGI spec allows.

``make run`` once answered an HTML 500 on every token door: Daphne passes
``server`` as a list, and the edge used it as a dict key. The spec lets a
server pass ``server`` and ``client`` as any two-item iterable or leave them
out, mount the app under a ``root_path``, speak HTTP/1.0 and send no ``Host``.
Each door is driven through the site's ASGI app with each shape; the answer
must be the door's own (JSON), never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from curfew_testkit.asgi_client import AsgiClient
from curfew_testkit.asgi_scope import http_scope
from tests.proxy.inprocess import token_at

Shape = Callable[[dict[str, Any]], dict[str, Any]]


def _as_list(scope: dict[str, Any]) -> dict[str, Any]:
    # Daphne's shape: lists, not tuples, for the addresses and each header.
    return {
        **scope,
        "server": list(scope["server"]),
        "client": list(scope["client"]),
        "headers": [list(pair) for pair in scope["headers"]],
    }


def _no_addresses(scope: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in scope.items() if k not in ("server", "client")}


def _none_addresses(scope: dict[str, Any]) -> dict[str, Any]:
    return {**scope, "server": None, "client": None}


def _http10_no_host(scope: dict[str, Any]) -> dict[str, Any]:
    headers = [pair for pair in scope["headers"] if pair[0] != b"host"]
    return {**scope, "http_version": "1.0", "headers": headers, "server": ("127.0.0.1", 8000)}


def _root_path(scope: dict[str, Any]) -> dict[str, Any]:
    # ASGI 3: ``path`` includes ``root_path`` (uvicorn --root-path /curfew).
    return {
        **scope,
        "root_path": "/curfew",
        "path": "/curfew" + scope["path"],
        "raw_path": b"/curfew" + scope["raw_path"],
    }


def _minimal(scope: dict[str, Any]) -> dict[str, Any]:
    # Only what the spec requires of an HTTP scope.
    required = ("type", "asgi", "http_version", "method", "path", "headers")
    return {k: v for k, v in scope.items() if k in required}


SHAPES: dict[str, Shape] = {
    "lists (daphne)": _as_list,
    "no server or client": _no_addresses,
    "server and client None": _none_addresses,
    "HTTP/1.0 without Host": _http10_no_host,
    "root_path": _root_path,
    "only the required keys": _minimal,
}

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
#: (method, path, body, extra headers): every token door. Off duty (the clock
#: below), so the model doors answer themselves and nothing goes upstream.
DOORS: list[tuple[str, str, object, dict[str, str]]] = [
    ("POST", "/api/v1/verdict", {}, {}),
    ("GET", "/api/v1/state", None, {}),
    ("POST", "/v1/chat/completions", CHAT, {}),
    ("POST", "/v1/completions", {"model": "m", "prompt": "hi"}, {}),
    ("POST", "/v1/responses", {"model": "m", "input": "hi"}, {}),
    ("POST", "/v1/messages", {**CHAT, "max_tokens": 64}, {"anthropic-version": "2023-06-01"}),
    ("POST", "/v1/embeddings", {"model": "m", "input": "hi"}, {}),
]


@pytest.fixture
def off_duty_token(db: None) -> str:
    return token_at("shapes", "10:00")  # a Tuesday, 10:00: peak hours


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(
    ("method", "path", "payload", "extra"), DOORS, ids=[f"{m} {p}" for m, p, _, _ in DOORS]
)
def test_every_token_door_answers_every_scope_shape(
    shape: Shape,
    method: str,
    path: str,
    payload: object,
    extra: dict[str, str],
    off_duty_token: str,
) -> None:

    body = b"" if payload is None else json.dumps(payload).encode()
    headers = [
        (b"host", b"127.0.0.1"),
        (b"authorization", f"Bearer {off_duty_token}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode(), v.encode()) for k, v in extra.items()),
    ]
    scope = shape(http_scope(method, path, headers, client=("127.0.0.1", 5000)))
    answer = AsgiClient().call_scope(scope, body)
    content = answer.content
    assert answer.status_code != 500, content
    assert answer["Content-Type"].startswith("application/json"), (answer.status_code, content)
    if path.startswith("/api/"):
        assert answer.status_code == 200, content
        assert json.loads(content)["state"] == "off-duty"
    else:
        assert answer["X-Curfew-State"] == "off-duty", (answer.status_code, content[:300])
        assert answer.status_code in (200, 503), content[:300]  # 503: embeddings off duty
