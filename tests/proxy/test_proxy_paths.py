"""No client input shapes where the proxy's request goes (issue 9, item 1).

A model id is an opaque name. Every traversal variant is sent as raw bytes on a
real socket to the served proxy (HTTP clients would normalise the path first),
and the recording fake upstream must see no request outside the proxied paths.
The control: a valid id reaches the upstream at exactly ``/v1/models/<id>``.
"""

from __future__ import annotations

import pytest

from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy import rawhttp
from tests.proxy.conftest import Proxy
from tests.proxy.test_proxy_gates import ON_DUTY

ALLOWED_UPSTREAM_PATHS = {"/v1/models", "/v1/chat/completions"}

MODEL_TRAVERSALS = [
    "/v1/models/../../user/balance",
    "/v1/models/../files",
    "/v1/models/%2e%2e/files",
    "/v1/models/%2E%2E/%2E%2E/user/balance",
    "/v1/models/..%2f..%2fx",
    "/v1/models/..%2F..%2Fx",
    "/v1/models/%2e%2e%2f%2e%2e%2fx",
    "/v1/models/%252e%252e%252fx",
    "/v1/models/..%5c..%5cx",
    "/v1/models/..",
    "/v1/models/.",
    "/v1/models/%2e",
    "/v1/models/fake-model/../../../x",
    "/v1/models/fake-model/..%2f..%2fx",
    "/v1/models/a%2fb",
    "/v1/models/..;/x",
    "/v1/models/a%00b",
    "/v1/models/a%0d%0aHost:%20evil",
    "/v1/models/a%09b",
    "/v1/models/" + "a" * 300,
]
OTHER_TRAVERSALS = [
    "/v1/chat/completions/../../x",
    "/v1/chat/completions/..%2f..%2fuser/balance",
    "/v1/chat/%2e%2e/%2e%2e/user/balance",
    "/v1/../user/balance",
    "/v1/%2e%2e/files",
    "/v1/./models/../../x",
    "/v1/",
    "/v1/x%0d%0ay",
]


def _auth(proxy: Proxy) -> dict[str, str]:
    return {"Authorization": f"Bearer {proxy.token}"}


def _assert_openai_error(response: rawhttp.RawResponse, status: int) -> None:
    assert response.status == status, (response.status, response.body[:300])
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert isinstance(error["message"], str)
    assert error["type"] == "invalid_request_error"
    assert response.headers["x-curfew-action"] == "none"


def test_a_valid_model_id_reaches_the_upstream_as_one_segment(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    """The control group: without it, a route that never forwards would pass."""
    for model in ("fake-model", "ft:gpt-4o-mini:org::a1B2", "qwen2.5-coder:7b"):
        response = rawhttp.request(
            proxy.app.base_url, "GET", f"/v1/models/{model}", headers=_auth(proxy)
        )
        assert response.headers["x-curfew-action"] == "pass"
    listing = rawhttp.request(proxy.app.base_url, "GET", "/v1/models", headers=_auth(proxy))
    assert listing.status == 200
    assert [r.path for r in upstream.requests] == [
        "/v1/models/fake-model",
        "/v1/models/ft:gpt-4o-mini:org::a1B2",
        "/v1/models/qwen2.5-coder:7b",
        "/v1/models",
    ]


@pytest.mark.parametrize("raw_path", MODEL_TRAVERSALS)
def test_a_model_id_cannot_leave_its_path_segment(
    proxy: Proxy, upstream: FakeUpstream, raw_path: str
) -> None:
    response = rawhttp.request(proxy.app.base_url, "GET", raw_path, headers=_auth(proxy))
    _assert_openai_error(response, 400)
    assert response.json()["error"]["param"] == "model"
    assert upstream.requests == [], f"{raw_path} reached the upstream"


@pytest.mark.parametrize("raw_path", OTHER_TRAVERSALS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_no_other_path_reaches_the_upstream(
    proxy: Proxy, upstream: FakeUpstream, raw_path: str, method: str
) -> None:
    proxy.travel(ON_DUTY)
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    response = rawhttp.request(
        proxy.app.base_url,
        method,
        raw_path,
        headers={**_auth(proxy), "Content-Type": "application/json"},
        body=body if method == "POST" else b"",
    )
    assert response.status in (400, 404), (raw_path, response.status)
    _assert_openai_error(response, response.status)
    assert {r.path for r in upstream.requests} <= ALLOWED_UPSTREAM_PATHS
    assert upstream.requests == [], f"{method} {raw_path} reached the upstream"


def test_the_model_in_a_chat_body_does_not_shape_the_path(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(ON_DUTY)
    body = b'{"model": "../../user/balance", "messages": [{"role": "user", "content": "hi"}]}'
    rawhttp.request(
        proxy.app.base_url,
        "POST",
        "/v1/chat/completions",
        headers={**_auth(proxy), "Content-Type": "application/json"},
        body=body,
    )
    assert [r.path for r in upstream.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize(
    "segments",
    [("models", ".."), ("models", "a/b"), ("models", "%2e%2e"), ("..",), ("models", "")],
)
def test_the_url_builder_refuses_anything_but_plain_segments(segments: tuple[str, ...]) -> None:
    from django.test import override_settings

    from curfew_core.proxy import upstream

    with override_settings(CURFEW_UPSTREAM_BASE_URL="https://llm.example/api/v1/"):
        assert upstream.upstream_url(upstream.MODELS) == "https://llm.example/api/v1/models"
        assert (
            upstream.upstream_url(upstream.model_path("ft:m@x+1~2"))
            == "https://llm.example/api/v1/models/ft:m@x+1~2"
        )
        with pytest.raises(upstream.UnsafePath):
            upstream.upstream_url(segments)
