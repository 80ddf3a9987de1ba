"""The clamp is taken client-side: the server is asked once per scope, never
per budget, and each caller gets ``min(its budget, the verdict's clamp)``."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient, CurfewVerdict
from curfew_client.policy import clamp
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
CEILING = WINDING["max_tokens"]  # the curve's clamp the server answers without a budget


class Counting:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions":  # the cache's reports (test_reporting)
            return httpx.Response(200, json={"received": 0, "stored": 0})
        self.requests.append(request)
        return httpx.Response(200, json=self.body)


def budgets() -> list[int]:
    # 1,000 distinct budgets, below and above the ceiling.
    return random.Random(11).sample(range(1, 4 * CEILING), 1000)


def test_a_thousand_budgets_cost_one_request() -> None:
    server = Counting(WINDING)
    with CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server), clock=lambda: NOW
    ) as client:
        for asked in budgets():
            verdict = client.verdict(session_id="s", max_tokens=asked)
            assert verdict.max_tokens == min(asked, CEILING)
            assert verdict.budget == WINDING["budget"]  # the curve itself is untouched
    assert len(server.requests) == 1
    assert json.loads(server.requests[0].content) == {"session_id": "s", "subagent": False}


async def test_a_thousand_budgets_cost_one_request_async() -> None:
    server = Counting(WINDING)
    async with AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server), clock=lambda: NOW
    ) as client:
        for asked in budgets():
            verdict = await client.verdict(session_id="s", max_tokens=asked)
            assert verdict.max_tokens == min(asked, CEILING)
    assert len(server.requests) == 1


async def test_callers_sharing_one_request_each_get_their_own_clamp() -> None:
    import asyncio

    server = Counting(WINDING)
    async with AsyncCurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(server), clock=lambda: NOW
    ) as client:
        small, large, none = await asyncio.gather(
            client.verdict(max_tokens=10),
            client.verdict(max_tokens=10 * CEILING),
            client.verdict(),
        )
    assert len(server.requests) == 1
    assert (small.max_tokens, large.max_tokens, none.max_tokens) == (10, CEILING, CEILING)


@pytest.mark.parametrize("unusable", [0, -5, True, "500", 2.5])
def test_a_budget_the_api_could_not_take_is_unknown_so_the_ceiling_is_set(unusable: Any) -> None:
    with CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(Counting(WINDING)), clock=lambda: NOW
    ) as client:
        assert client.verdict(max_tokens=unusable).max_tokens == CEILING


def test_the_clamp_is_min_never_a_raise_and_the_same_budget_gets_the_same_answer() -> None:
    with CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(Counting(WINDING)), clock=lambda: NOW
    ) as client:
        above = client.verdict(max_tokens=CEILING + 1)
        assert above.max_tokens == CEILING
        assert client.verdict(max_tokens=CEILING + 1) is above
        assert client.verdict() is above  # no budget: the cached verdict itself
        below = client.verdict(max_tokens=7)
        assert below.max_tokens == 7
        assert client.verdict(max_tokens=7) is below
        assert below.origin == "server"


def test_a_pass_is_never_given_a_clamp() -> None:
    on_duty = {**WINDING, "state": "on-duty", "action": "pass", "max_tokens": None}
    with CurfewClient(
        "http://curfew", "t", transport=httpx.MockTransport(Counting(on_duty)), clock=lambda: NOW
    ) as client:
        assert client.verdict(max_tokens=50).max_tokens is None


def test_a_dry_runs_would_be_clamp_is_lowered_too() -> None:
    would = {
        "action": "clamp",
        "reply": None,
        "max_tokens": CEILING,
        "persona": None,
        "tools": "allow",
        "reasoning_effort": None,
    }
    dry = CurfewVerdict.from_payload(
        {**WINDING, "action": "pass", "max_tokens": None, "dry_run": True, "would": would}
    )
    clamped = clamp(dry, 3)
    assert clamped.max_tokens is None  # a dry run never acts
    assert clamped.would is not None
    assert clamped.would.max_tokens == 3
    assert clamp(dry, CEILING * 2) is dry


def test_last_known_is_clamped_as_well() -> None:
    clock = [NOW]
    answers = [httpx.Response(200, json=WINDING)]

    def handler(request: httpx.Request) -> httpx.Response:
        if answers:
            return answers.pop()
        raise httpx.ConnectError("down")

    with CurfewClient(
        "http://curfew",
        "t",
        transport=httpx.MockTransport(handler),
        clock=lambda: clock[0],
        policy="last_known",
    ) as client:
        client.verdict(max_tokens=5000)
        clock[0] += 120  # past max_age: asked again, and the server is down
        stale = client.verdict(max_tokens=12)
    assert (stale.origin, stale.max_tokens) == ("last_known", 12)
