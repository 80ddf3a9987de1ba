"""One core, two flavours: the sync and async clients cache, parse and fall back
in exactly the same way, because only the I/O is theirs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, BaseCurfewClient, CurfewClient
from curfew_client.health import Policy
from wire_samples import WINDING

NOW = 1_790_000_000.0  # 2026-09-21, before WINDING's valid_until


def answering(status: int, body: Any, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions":  # the cache's reports (test_reporting)
            return httpx.Response(200, json={"received": 0, "stored": 0})
        seen.append(request)
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(status, content=content)

    return httpx.MockTransport(handler)


async def ask(
    flavour: str, transport: httpx.MockTransport, policy: Policy = "fail_open", **kw: Any
) -> list[Any]:
    """Two calls for the same key through ``flavour``."""
    clock: Callable[[], float] = lambda: NOW  # noqa: E731
    if flavour == "sync":
        with CurfewClient(
            "http://curfew", "t", transport=transport, clock=clock, policy=policy
        ) as c:
            return [c.verdict(**kw), c.verdict(**kw)]
    async with AsyncCurfewClient(
        "http://curfew", "t", transport=transport, clock=clock, policy=policy
    ) as a:
        return [await a.verdict(**kw), await a.verdict(**kw)]


FLAVOURS = pytest.mark.parametrize("flavour", ["sync", "async"])


def test_both_flavours_are_the_one_core() -> None:
    assert issubclass(CurfewClient, BaseCurfewClient)
    assert issubclass(AsyncCurfewClient, BaseCurfewClient)
    # Neither repeats the constructor or the cache check.
    for flavour in (CurfewClient, AsyncCurfewClient):
        assert "__init__" not in vars(flavour)
        assert "_ready" not in vars(flavour)


@FLAVOURS
async def test_a_verdict_is_parsed_and_then_served_from_the_cache(flavour: str) -> None:
    seen: list[httpx.Request] = []
    first, second = await ask(flavour, answering(200, WINDING, seen), max_tokens=4096)
    assert (first.state, first.max_tokens, first.origin) == ("winding", 1000, "server")
    assert second == first
    assert len(seen) == 1  # the second call was the cache's
    # The budget is never sent: the clamp is taken here (see test_clamp.py).
    assert json.loads(seen[0].content) == {"subagent": False}
    assert seen[0].headers["Authorization"] == "Bearer t"


@FLAVOURS
@pytest.mark.parametrize(
    ("status", "body"),
    [(500, {"error": "oops", "message": "down"}), (200, {"state": "winding"}), (200, b"<html>")],
)
async def test_anything_but_a_verdict_is_answered_by_policy(
    flavour: str, status: int, body: Any
) -> None:
    seen: list[httpx.Request] = []
    control, _ = await ask(flavour, answering(200, WINDING, []), policy="fail_closed")
    assert control.origin == "server"
    verdict, again = await ask(flavour, answering(status, body, seen), policy="fail_closed")
    assert (verdict.origin, verdict.action, verdict.tools) == (
        "fail_closed",
        "short-circuit",
        "deny",
    )
    assert verdict.stream is not None
    assert verdict.stream[-2]["totalTokens"] == 0
    assert again.origin == "fail_closed"
    assert len(seen) == 1  # backing off: the failed server is not asked again at once
