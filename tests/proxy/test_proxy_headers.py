"""The upstream's secrets never reach a client (issue 9, item 12): only an
allow-list of upstream headers is relayed, and the operator's key, anything
shaped like an ``sk-`` key and any Bearer credential are cut out of relayed
error bodies and header values. The fake upstream echoes them all."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import CHAT, SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)

OTHER_KEY = "sk-proj-Abc123def456ghi789JKL"
LEAKY_HEADERS = [
    ("x-ratelimit-limit-requests", "60"),  # the control: safe and relayed
    ("x-ratelimit-remaining-tokens", f"{SECRET}"),
    ("x-ratelimit-reset-requests", f"1s; key={SECRET[:12]}...{SECRET[-4:]}"),
    ("x-ratelimit-key", SECRET),
    ("x-ratelimit-remaining-requests", f"Bearer {SECRET}"),
    ("x-upstream-debug", f"authorization=Bearer {SECRET}"),
    ("set-cookie", "upstream_session=abc"),
    ("retry-after", OTHER_KEY),
]


@pytest.fixture
def live(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield upstream


def _assert_no_secret(text: str) -> None:
    assert SECRET not in text
    assert SECRET[:12] not in text  # a truncated echo ("sk-inprocess…4242")
    assert OTHER_KEY not in text
    assert "upstream_session" not in text


@pytest.mark.parametrize("stream", [False, True])
async def test_only_safe_upstream_headers_are_relayed_and_none_carries_a_secret(
    token: str, live: FakeUpstream, stream: bool
) -> None:
    live.extra_headers = LEAKY_HEADERS
    response = await client(token).post("/v1/chat/completions", {**CHAT, "stream": stream})
    await body_of(response)
    assert response.status_code == 200
    relayed = {name.lower(): value for name, value in response.items()}
    assert relayed["x-ratelimit-limit-requests"] == "60"  # the control
    assert relayed["x-request-id"].startswith("req-fake")
    for name in ("x-ratelimit-key", "x-upstream-debug", "set-cookie"):
        assert name not in relayed
    _assert_no_secret(str(relayed))
    assert "Bearer" not in str(relayed)


async def test_secrets_are_cut_from_a_relayed_error_body_and_its_headers(
    token: str, live: FakeUpstream
) -> None:
    live.extra_headers = LEAKY_HEADERS
    echo = (
        f'{{"error": {{"message": "key {SECRET} (sk-inpr...4242) over quota; '
        f'org key {OTHER_KEY}; sent Authorization: Bearer {SECRET}abc", '
        f'"type": "rate_limit"}}}}'
    )
    live.fail = (429, echo.encode())
    response = await client(token).post("/v1/chat/completions", CHAT)
    assert response.status_code == 429
    text = response.content.decode()
    assert "over quota" in text  # the control: the upstream's message is relayed
    assert "[redacted]" in text
    _assert_no_secret(text)
    assert "sk-inpr" not in text
    assert f"Bearer {SECRET}" not in text
    _assert_no_secret(str(dict(response.items())))
    assert response["x-ratelimit-limit-requests"] == "60"
