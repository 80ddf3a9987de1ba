"""Bad bodies on /v1/chat/completions are 400s in OpenAI's shape, never a 500
(issue 9, item 4), and nothing goes upstream. A valid body sent the same way
is the control: it reaches the upstream."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGE = b'{"model": "m", "messages": [{"role": "user", "content": "%s"}]}'
BAD_BODIES = {
    "a 5000-digit budget": b'{"model": "m", "messages": [], "max_tokens": ' + b"9" * 5000 + b"}",
    "100,000 open brackets": b"[" * 100_000,
    "100,000 nested objects": b'{"a":' * 100_000,
    "a lone high surrogate": MESSAGE % b"\\ud800",
    "a lone low surrogate in a key": b'{"model": "m", "messages": [], "\\udc00": 1}',
    "a surrogate pair reversed": MESSAGE % b"\\ude00\\ud83d",
    "invalid UTF-8": b'{"model": "\xff\xfe", "messages": []}',
    "encoded surrogate bytes": b'{"model": "\xed\xa0\x80", "messages": []}',
    "a JSON array": b'[{"model": "m"}]',
    "a JSON string": b'"hello"',
    "JSON null": b"null",
    "a JSON number": b"42",
    "Infinity": b'{"model": "m", "messages": [], "max_tokens": Infinity}',
    "NaN": b'{"model": "m", "messages": [], "temperature": NaN}',
    "an overflowing float": b'{"model": "m", "messages": [], "max_tokens": 1e999}',
    "not JSON at all": b"model=m&messages=hi",
    "empty": b"",
}


@pytest.fixture
def live(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield upstream


async def _post(token: str, raw: bytes) -> object:
    return await client(token).client.post(
        "/v1/chat/completions",
        raw,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.mark.parametrize("name", list(BAD_BODIES))
async def test_a_bad_body_is_a_400_in_openai_shape(
    token: str,
    live: FakeUpstream,
    name: str,
) -> None:
    response = await _post(token, BAD_BODIES[name])
    assert response.status_code == 400, (name, response.content[:300])  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_request"
    assert response["X-Curfew-State"] == "on-duty"  # type: ignore[index]
    assert response["X-Curfew-Action"] == "none"  # type: ignore[index]
    assert live.requests == []


async def test_an_escaped_surrogate_pair_is_fine_and_passes_byte_for_byte(
    token: str,
    live: FakeUpstream,
) -> None:
    """The control: Python's json (ensure_ascii) writes emoji as escaped pairs."""
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "\\ud83d\\ude00 hi"}]}'
    response = await _post(token, raw)
    assert response.status_code == 200  # type: ignore[attr-defined]
    await body_of(response)
    [sent] = live.chat_requests
    assert sent.body == raw
