"""``CURFEW_UPSTREAM_BUDGET_KEY`` in-process: each value against bodies that send
neither budget name, one, the other, or both, with the recording fake upstream.

Winding, the recorder sees the clamp under exactly the configured name(s) (the
client's own names when unset); on duty it sees the client's very bytes
whatever the setting (the control); off duty it sees nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from curfew_core.schedules import override_commands
from curfew_core.services.overrides import override_apply
from curfew_core.services.tokens import token_create
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import CHAT, SECRET, body_of, client
from tests.proxy.test_proxy_gates import expected

pytestmark = pytest.mark.django_db(transaction=True)

WINDING = "2026-09-30 01:00"  # Wednesday 01:00 Asia/Shanghai
ON_DUTY = "2026-09-29 20:00"
OFF_DUTY = "2026-09-29 10:00"

#: What the client sent: neither name, one, the other, both (different values).
SENT: dict[str, dict[str, int]] = {
    "neither": {},
    "max_tokens": {"max_tokens": 5000},
    "max_completion_tokens": {"max_completion_tokens": 5000},
    "both": {"max_tokens": 5000, "max_completion_tokens": 300},
}


def token_at(username: str, moment: str) -> str:
    user = User.objects.create_user(username)
    _, raw = token_create(user=user, name="proxy")
    at = datetime.fromisoformat(moment).replace(tzinfo=ZoneInfo("Asia/Shanghai"))
    override_apply(
        user=user,
        command=override_commands.from_json({"debug": at.isoformat()}),
        now=timezone.now(),
    )
    return raw


async def sync_token(username: str, moment: str) -> str:
    return await sync_to_async(token_at)(username, moment)


def upstream_settings(upstream: FakeUpstream, key: str | None) -> override_settings:
    return override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY=SECRET,
        CURFEW_UPSTREAM_BUDGET_KEY=key,
    )


def budgets(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in ("max_tokens", "max_completion_tokens") if k in body}


def want(key: str | None, sent: str, budget: int) -> dict[str, int]:
    """The budgets the upstream must see: the documented rule, spelled out."""
    if key is None:  # the client's own names, each clamped; max_tokens when neither
        return {
            "neither": {"max_tokens": budget},
            "max_tokens": {"max_tokens": budget},
            "max_completion_tokens": {"max_completion_tokens": budget},
            "both": {"max_tokens": budget, "max_completion_tokens": 300},
        }[sent]
    tightest = 300 if sent == "both" else budget
    names = ("max_tokens", "max_completion_tokens") if key == "both" else (key,)
    return dict.fromkeys(names, tightest)


@pytest.mark.parametrize("sent", SENT)
@pytest.mark.parametrize("key", [None, "max_tokens", "max_completion_tokens", "both"])
async def test_winding_clamps_under_the_configured_budget_key(
    upstream: FakeUpstream, closing: None, key: str | None, sent: str
) -> None:
    budget = expected(WINDING).max_tokens
    assert budget is not None
    assert 300 < budget < 5000  # both client values test the min
    token = await sync_token("wind", WINDING)
    with upstream_settings(upstream, key):
        response = await client(token).post("/v1/chat/completions", {**CHAT, **SENT[sent]})
        await body_of(response)
    assert response["X-Curfew-Action"] == "clamp"
    [forwarded] = upstream.chat_requests
    assert budgets(forwarded.json) == want(key, sent, budget)


@pytest.mark.parametrize("key", [None, "max_tokens", "max_completion_tokens", "both"])
async def test_on_duty_the_setting_touches_nothing(
    upstream: FakeUpstream, closing: None, key: str | None
) -> None:
    token = await sync_token("day", ON_DUTY)
    raw = json.dumps({**CHAT, "max_completion_tokens": 9000}, separators=(",", ":"))
    with upstream_settings(upstream, key):
        response = await client(token).post("/v1/chat/completions", raw)
        await body_of(response)
    assert response["X-Curfew-Action"] == "pass"
    [forwarded] = upstream.chat_requests
    assert forwarded.body == raw.encode()


@pytest.mark.parametrize("key", ["max_tokens", "both"])
async def test_off_duty_the_setting_sends_nothing(
    upstream: FakeUpstream, closing: None, key: str
) -> None:
    token = await sync_token("peak", OFF_DUTY)
    with upstream_settings(upstream, key):
        response = await client(token).post("/v1/chat/completions", {**CHAT, "max_tokens": 10})
    assert response["X-Curfew-Action"] == "short-circuit"
    assert response.json()["usage"]["total_tokens"] == 0
    assert upstream.requests == []
