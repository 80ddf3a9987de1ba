"""The embeddings door: forwarded untouched whenever anything goes through,
refused (HTTP 503, ``curfew_off_duty``) off duty and at lights-out with nothing
sent upstream. The recording fake upstream is the control group.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import httpx
import openai
import pytest

from curfew_core.proxy.passthrough import retry_after_seconds
from curfew_testkit.fake_openai_more import EMBEDDING
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import EXEMPT_SESSION, UPSTREAM_KEY, Proxy
from tests.proxy.test_proxy_gates import (
    LIGHTS_OUT,
    OFF_DUTY,
    ON_DUTY,
    SHANGHAI,
    WINDING,
    expected,
    sdk,
)


def embeddings_sent(upstream: FakeUpstream) -> list[bytes]:
    return [r.body for r in upstream.requests if r.path == "/v1/embeddings"]


@pytest.mark.parametrize(("moment", "state"), [(OFF_DUTY, "off-duty"), (LIGHTS_OUT, "lights-out")])
def test_off_duty_the_sdk_raises_and_nothing_goes_upstream(
    proxy: Proxy, upstream: FakeUpstream, moment: str, state: str
) -> None:
    proxy.travel(moment)
    # max_retries left at the SDK default: X-Should-Retry stops it retrying.
    client = openai.OpenAI(base_url=proxy.base_url, api_key=proxy.token, timeout=20)
    with pytest.raises(openai.InternalServerError) as caught:
        client.embeddings.create(model="text-embedding-3-small", input="hello")
    error = caught.value
    assert error.status_code == 503
    assert error.code == "curfew_off_duty"
    assert error.type == "curfew_off_duty"
    assert state in error.message
    response = error.response
    assert response.headers["X-Curfew-State"] == state
    assert response.headers["X-Should-Retry"] == "false"
    # Under the time machine the verdict only expires with its cache horizon;
    # the exact count from a real schedule edge is the unit test below.
    assert int(response.headers["Retry-After"]) >= 1
    assert upstream.requests == []  # not even the SDK's retries


@pytest.mark.parametrize("moment", [ON_DUTY, WINDING])
def test_on_duty_and_winding_forward_the_very_bytes(
    proxy: Proxy, upstream: FakeUpstream, moment: str
) -> None:
    proxy.travel(moment)
    raw_body = (
        b'{"input": ["a", "b"],  "model":"text-embedding-3-small", "encoding_format":"float"}'
    )
    response = httpx.post(
        f"{proxy.base_url}/embeddings",
        content=raw_body,
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.headers["X-Curfew-Action"] == "pass"
    assert [d["embedding"] for d in response.json()["data"]] == [EMBEDDING, EMBEDDING]
    assert embeddings_sent(upstream) == [raw_body]
    [sent] = upstream.requests
    assert sent.headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_the_sdk_gets_its_vectors_on_duty(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    result = sdk(proxy).embeddings.create(model="text-embedding-3-small", input="hello")
    assert [item.embedding for item in result.data] == [EMBEDDING]  # base64 decoded by the SDK
    assert len(embeddings_sent(upstream)) == 1


def test_an_exempt_session_is_forwarded_even_off_duty(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(OFF_DUTY)
    result = sdk(proxy, session=EXEMPT_SESSION).embeddings.create(model="m", input="hello")
    assert len(result.data) == 1
    assert len(embeddings_sent(upstream)) == 1


async def test_async_sdk_raises_off_duty(
    proxy: Proxy, upstream: FakeUpstream, closing: None
) -> None:
    proxy.travel(LIGHTS_OUT)
    client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key=proxy.token, timeout=20)
    with pytest.raises(openai.InternalServerError) as caught:
        await client.embeddings.create(model="m", input="hello")
    assert caught.value.code == "curfew_off_duty"
    assert upstream.requests == []


def test_a_wrong_token_is_refused_in_openai_shape(proxy: Proxy, upstream: FakeUpstream) -> None:
    proxy.travel(ON_DUTY)
    client = openai.OpenAI(base_url=proxy.base_url, api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.embeddings.create(model="m", input="hello")
    assert caught.value.response.json()["error"]["code"] == "invalid_api_key"
    assert upstream.requests == []


@pytest.mark.parametrize(("moment", "seconds"), [(OFF_DUTY, 7200), (LIGHTS_OUT, 21000)])
def test_retry_after_counts_to_the_verdict_change(moment: str, seconds: int) -> None:
    """Without a time machine ``valid_until`` is the schedule's next edge: off
    duty at 10:00 ends at the 12:00 lunch break, lights-out at 03:10 at 09:00."""
    at = datetime.fromisoformat(moment).replace(tzinfo=SHANGHAI)
    verdict = expected(moment)
    assert retry_after_seconds(verdict, at) == seconds
    assert retry_after_seconds(verdict, verdict.valid_until) == 1  # never 0


# -- a dry run never acts (every new door) ------------------------------------------


@pytest.fixture
def dry_run(proxy: Proxy) -> Iterator[None]:
    proxy.api("PATCH", "schedule", {"dry_run": True})
    try:
        yield
    finally:
        proxy.api("PATCH", "schedule", {"dry_run": False})


@pytest.mark.parametrize(
    ("path", "raw_body"),
    [
        ("embeddings", b'{"model": "m",  "input": "hello", "encoding_format": "float"}'),
        ("responses", b'{"model": "m",  "input": "hi", "max_output_tokens": 9000}'),
        ("completions", b'{"model": "m",  "prompt": "hi", "max_tokens": 9000}'),
    ],
)
def test_a_dry_run_forwards_the_very_bytes_even_off_duty(
    proxy: Proxy, upstream: FakeUpstream, dry_run: None, path: str, raw_body: bytes
) -> None:
    proxy.travel(OFF_DUTY)
    response = httpx.post(
        f"{proxy.base_url}/{path}",
        content=raw_body,
        headers={"Authorization": f"Bearer {proxy.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.headers["X-Curfew-State"] == "off-duty"
    assert response.headers["X-Curfew-Action"] == "pass"
    [sent] = upstream.requests
    assert (sent.path, sent.body) == (f"/v1/{path}", raw_body)
