"""A team key's client (issue 26): each member asked for by name and cached
on their own; a member's pushed change drops only that member's verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient
from curfew_client.litellm_hook import member_of
from curfew_client.policy import cache_key
from curfew_client.push import ChangeFeed
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
KEY = "cft_team-key"


def recording(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions":  # the cache's reports (test_reporting)
            return httpx.Response(200, json={"received": 0, "stored": 0})
        seen.append(json.loads(request.content or b"{}"))
        return httpx.Response(200, json=WINDING)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_each_member_is_asked_for_and_cached_on_their_own(flavour: str) -> None:
    seen: list[dict[str, Any]] = []
    clock: Callable[[], float] = lambda: NOW  # noqa: E731
    options: dict[str, Any] = {"transport": recording(seen), "clock": clock}
    names = ["alice", "bob", "alice", "bob", None]
    if flavour == "sync":
        with CurfewClient("http://curfew", KEY, **options) as sync:
            assert sync.team_key
            for name in names:
                sync.verdict(user=name)
    else:
        async with AsyncCurfewClient("http://curfew", KEY, **options) as aio:
            for name in names:
                await aio.verdict(user=name)
    # One request per member (and one without), each naming its member.
    assert [body.get("user") for body in seen] == ["alice", "bob", None]


def test_a_personal_token_is_no_team_key() -> None:
    with CurfewClient("http://curfew", "cfw_personal", transport=recording([])) as client:
        assert not client.team_key


def test_a_members_change_drops_only_that_members_verdicts() -> None:
    seen: list[dict[str, Any]] = []
    with CurfewClient("http://curfew", KEY, transport=recording(seen), clock=lambda: NOW) as client:
        for name in ("alice", "bob"):
            client.verdict(user=name)
        cache = client.cache
        feed = ChangeFeed(cache, "http://curfew/api/v1/changes")
        for line in ("event: change", 'data: {"user": "alice"}', ""):
            feed.line(line)
        assert set(cache.entries) == {cache_key(None, None, False, "bob")}
        client.verdict(user="bob")
        assert len(seen) == 2, "bob's verdict stayed cached"
        # The team's own change (or a personal stream's) drops everything.
        for line in ("event: change", 'data: {"team": true}', ""):
            feed.line(line)
        assert cache.entries == {}


class _Key:
    user_id = "from-the-key"
    end_user_id = "end-user"


class _MasterKey:
    user_id = "default_user_id"  # LiteLLM's master key: its administrator, no person
    end_user_id = None


def test_the_litellm_hook_names_the_member() -> None:
    """The request first (header, body ``user``, ``metadata.user_id``, the end
    user), LiteLLM's key user last (issue 39; ``tests/litellm`` builds ``data``
    with LiteLLM's own request set-up)."""
    header = {"X-Curfew-User": "alice"}
    assert member_of({"user": "x"}, _Key(), header) == "alice"
    assert member_of({"user": "carol"}, _Key(), {}) == "carol"
    assert member_of({"metadata": {"user_id": "dave"}}, _Key(), {}) == "dave"
    assert member_of({"metadata": {"user_api_key_user_id": "bob"}}, _Key(), {}) == "end-user"
    assert member_of({"metadata": {"user_api_key_user_id": "bob"}}, None, {}) == "bob"
    assert member_of({}, _Key(), {}) == "end-user"
    assert member_of({"user": "carol"}, None, {}) == "carol"
    assert member_of({}, _MasterKey(), {}) is None
    assert member_of({}, None, {}) is None
    # Claude Code's own id is no name: the next source names the member.
    claude = '{"device_id":"4f4f","account_uuid":"0f3c","session_id":"9b2d"}'
    assert member_of({"metadata": {"user_id": claude}}, _MasterKey(), {}) is None
    assert member_of({"metadata": {"user_id": claude}}, _Key(), {}) == "end-user"
