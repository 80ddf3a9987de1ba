"""Every proxy door leaves exactly one decision in the ledger per model call,
with the action taken and the upstream's usage (streamed or not); a
short-circuit records zero usage and what it saved."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from curfew_core.models import Decision, DecisionHour
from curfew_core.services import ledger_recorder as recorder
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import body_of, token_at

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4096}
RESPONSES = {"model": "m", "input": "hi", "max_output_tokens": 4096}
MESSAGES = {"model": "m", "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}]}
COMPLETIONS = {"model": "m", "prompt": "hi", "max_tokens": 4096}
EMBEDDINGS = {"model": "m", "input": "hi"}


async def call(token: str, path: str, body: dict[str, Any], **headers: str) -> bytes:
    response = await AsyncClient().post(
        path,
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", **headers},
    )
    content = await body_of(response)
    assert response.status_code in (200, 503), content
    return content


async def recorded() -> list[Decision]:
    def read() -> list[Decision]:
        recorder.flush()
        return list(Decision.objects.all())

    return await sync_to_async(read)()


PASSED = [
    ("chat", "/v1/chat/completions", CHAT, (11, 5)),
    (
        "chat",
        "/v1/chat/completions",
        {**CHAT, "stream": True, "stream_options": {"include_usage": True}},
        (11, 5),
    ),
    # A stream without usage: the call is recorded, its usage unknown.
    ("chat", "/v1/chat/completions", {**CHAT, "stream": True}, (None, None)),
    ("responses", "/v1/responses", RESPONSES, (11, 5)),
    ("responses", "/v1/responses", {**RESPONSES, "stream": True}, (11, 5)),
    ("messages", "/v1/messages", MESSAGES, (11, 5)),
    ("messages", "/v1/messages", {**MESSAGES, "stream": True}, (11, 5)),
    ("completions", "/v1/completions", COMPLETIONS, (11, 5)),
    ("embeddings", "/v1/embeddings", EMBEDDINGS, (3, None)),
]


@pytest.mark.parametrize(("origin", "path", "body", "usage"), PASSED)
async def test_a_passed_call_records_one_row_with_the_upstreams_usage(
    both_upstreams: None,
    closing: None,
    origin: str,
    path: str,
    body: dict[str, Any],
    usage: tuple[Any, Any],
) -> None:
    token = await sync_to_async(token_at)("on-duty", "20:00")
    assert await recorded() == []  # the control: nothing before the call
    await call(token, path, body, **{"X-Curfew-Session": "s-1"})
    # Recorded with its user, so it joined the batch as it is stored (the
    # entries the flusher must look up by token wait apart).
    assert (recorder.pending(), len(recorder._buffer)) == (1, 0)
    [row] = await recorded()
    assert (row.origin, row.state, row.action) == (origin, "on-duty", "pass")
    assert (row.input_tokens, row.output_tokens) == usage
    assert row.session == "s-1"
    assert row.budget_before == body.get("max_tokens", body.get("max_output_tokens"))
    assert row.budget_after == row.budget_before


@pytest.mark.parametrize(
    ("origin", "path", "body"),
    [
        ("chat", "/v1/chat/completions", CHAT),
        (
            "chat",
            "/v1/chat/completions",
            {**CHAT, "stream": True, "stream_options": {"include_usage": True}},
        ),
        ("responses", "/v1/responses", RESPONSES),
        ("messages", "/v1/messages", {**MESSAGES, "stream": True}),
        ("completions", "/v1/completions", COMPLETIONS),
    ],
)
async def test_a_clamped_call_records_the_budget_it_kept(
    both_upstreams: None, closing: None, origin: str, path: str, body: dict[str, Any]
) -> None:
    token = await sync_to_async(token_at)("winding", "23:30")
    await call(token, path, body)
    [row] = await recorded()
    assert (row.origin, row.state, row.action) == (origin, "winding", "clamp")
    assert row.budget_before == 4096
    assert row.budget_after is not None
    assert row.budget_after < 4096
    assert (row.input_tokens, row.output_tokens) == (11, 5)
    hour = await sync_to_async(DecisionHour.objects.get)()
    assert hour.output_tokens_not_generated == 4096 - row.budget_after


@pytest.mark.parametrize(
    ("origin", "path", "body"),
    [
        ("chat", "/v1/chat/completions", CHAT),
        ("chat", "/v1/chat/completions", {**CHAT, "stream": True}),
        ("responses", "/v1/responses", {**RESPONSES, "stream": True}),
        ("messages", "/v1/messages", MESSAGES),
        ("completions", "/v1/completions", COMPLETIONS),
        ("embeddings", "/v1/embeddings", EMBEDDINGS),
    ],
)
async def test_a_short_circuit_records_zero_usage_and_a_request_not_sent(
    both_upstreams: None,
    closing: None,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
    origin: str,
    path: str,
    body: dict[str, Any],
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    await call(token, path, body)
    assert upstream.requests == []
    assert anthropic_upstream.requests == []
    [row] = await recorded()
    assert (row.origin, row.state, row.action) == (origin, "off-duty", "short-circuit")
    assert (row.input_tokens, row.output_tokens, row.budget_after) == (0, 0, 0)
    hour = await sync_to_async(DecisionHour.objects.get)()
    assert (hour.count, hour.requests_not_sent) == (1, 1)


async def test_an_exempt_call_off_duty_is_recorded_as_such(
    both_upstreams: None, closing: None, upstream: FakeUpstream
) -> None:
    token = await sync_to_async(token_at)("exempt", "10:00")
    await call(token, "/v1/chat/completions", CHAT, **{"X-Curfew-Purpose": "title"})
    assert len(upstream.chat_requests) == 1  # exempt: it went upstream
    [row] = await recorded()
    assert (row.state, row.action, row.exempt, row.purpose) == ("off-duty", "pass", True, "title")
    assert (row.input_tokens, row.output_tokens) == (11, 5)
