"""The LiteLLM callback with a team key, against hostile request metadata (issue 41).

Whatever a LiteLLM client writes where the member's name goes (megabytes,
NUL, CR/LF meant as header injection, lists and objects instead of text),
that call gets its own 4xx and every other member is still asked for and
enforced: one member's refusal is never an outage for all.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm")

from fastapi import HTTPException

from curfew_client import AsyncCurfewClient
from curfew_client.litellm_hook import MAX_MEMBER_NAME, CurfewHook
from test_member_refusals import OFF

NOW = 1_790_000_000.0
#: The server's rule for a name, as ``selectors.users.is_username`` has it.
USERNAME = re.compile(r"[\w.@+-]{1,150}")
#: The server's body limit (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``).
BODY_LIMIT = 2_621_440


class Team:
    """A Curfew server for a team key: alice is switched off, anyone else is
    refused as the server refuses them (400, 404, 413)."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions":
            return httpx.Response(200, json={"received": 0, "stored": 0})
        if len(request.content) > BODY_LIMIT:
            self.asked.append("<too large>")
            return httpx.Response(
                413, json={"error": "too_large", "message": "the request body must be smaller"}
            )
        user = json.loads(request.content).get("user")
        self.asked.append(user if not isinstance(user, str) or len(user) < 200 else "<long>")
        if not isinstance(user, str):
            return httpx.Response(
                400, json={"error": "invalid_request", "message": "name one member"}
            )
        if not USERNAME.fullmatch(user):
            return httpx.Response(
                400, json={"error": "invalid_request", "message": f"{user[:40]!r} is no username"}
            )
        if user != "alice":
            return httpx.Response(404, json={"error": "not_found", "message": "not a member"})
        return httpx.Response(200, json=OFF)

    def hook(self) -> CurfewHook:
        client = AsyncCurfewClient(
            "http://curfew",
            "cft_team",
            transport=httpx.MockTransport(self.handler),
            policy="fail_open",
            report_decisions=False,
            timeout=5.0,
        )
        return CurfewHook(client)


def call(body: dict[str, Any], headers: dict[str, str] | None = None, n: int = 0) -> Any:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        **body,
        "litellm_call_id": f"call-{n}",
        "proxy_server_request": {"headers": headers or {}},
    }


async def alice_is_still_enforced(hook: CurfewHook) -> None:
    data = await hook.async_pre_call_hook(None, None, call({"user": "alice"}, n=99), "acompletion")
    assert data is not None
    assert "mock_response" in data, "alice's call went upstream: an outage for all"
    assert hook.client.healthy


HOSTILE: list[tuple[dict[str, Any], dict[str, str]]] = [
    ({"user": "a" * 3_000_000}, {}),  # past the server's body limit: its 413
    ({"user": "a" * 100_000}, {}),  # far past any username: refused here
    ({}, {"X-Curfew-User": "b" * (MAX_MEMBER_NAME + 1)}),
    ({"user": "al\x00ice"}, {}),
    ({}, {"X-Curfew-User": "alice\r\nX-Evil: 1"}),
    ({"user": "alice\r\n\r\nHTTP/1.1 200 OK"}, {}),
    ({"user": "bob"}, {}),  # a name, but no member
    ({"user": {"$ne": ""}}, {}),  # not text: no name at all
    ({"user": ["alice"], "metadata": {"user_id": 7}}, {}),
]


@pytest.mark.parametrize(("body", "headers"), HOSTILE, ids=range(len(HOSTILE)))
async def test_a_hostile_name_is_that_calls_refusal_and_no_one_elses(
    body: dict[str, Any], headers: dict[str, str]
) -> None:
    team = Team()
    hook = team.hook()
    try:
        data = call(body, headers)
        with pytest.raises(HTTPException) as raised:
            await hook.async_pre_call_hook(None, None, data, "acompletion")
        assert 400 <= raised.value.status_code < 500
        labels = await hook.async_post_call_response_headers_hook(data, None, None)
        assert labels == {"X-Curfew-State": "unknown", "X-Curfew-Action": "none"}
        await alice_is_still_enforced(hook)
    finally:
        await hook.client.aclose()


async def test_a_name_too_long_for_anyone_is_not_even_sent() -> None:
    team = Team()
    hook = team.hook()
    try:
        with pytest.raises(HTTPException) as raised:
            await hook.async_pre_call_hook(
                None, None, call({"user": "a" * (MAX_MEMBER_NAME + 1)}), "acompletion"
            )
        assert raised.value.status_code == 400
        assert "no username" in json.dumps(raised.value.detail)
        assert team.asked == []
    finally:
        await hook.client.aclose()


async def test_non_text_fields_are_skipped_for_the_next_source() -> None:
    team = Team()
    hook = team.hook()
    try:
        body = {"user": ["bob"], "metadata": {"user_id": {"a": 1}}}
        data = call(body, {"X-Curfew-User": "alice"})
        done = await hook.async_pre_call_hook(None, None, data, "acompletion")
        assert done is not None
        assert "mock_response" in done
        assert team.asked == ["alice"]
    finally:
        await hook.client.aclose()


class VirtualKey:
    """LiteLLM's auth of a virtual key that belongs to ``user_id``."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        self.end_user_id = None


class MasterKey(VirtualKey):
    def __init__(self) -> None:
        super().__init__("default_user_id")


def bound(team: Team, member_from_key: bool | None) -> CurfewHook:
    hook = team.hook()
    return CurfewHook(hook.client, member_from_key=member_from_key)


async def test_control_by_default_a_member_may_write_another_members_name() -> None:
    """The documented order (the request first): bob's own key asks as alice."""
    team = Team()
    hook = bound(team, member_from_key=False)
    try:
        data = call({}, {"X-Curfew-User": "alice"})
        await hook.async_pre_call_hook(VirtualKey("bob"), None, data, "acompletion")
        assert team.asked == ["alice"]
    finally:
        await hook.client.aclose()


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({}, {"X-Curfew-User": "alice"}),
        ({"user": "alice"}, {}),
        ({"metadata": {"user_id": "alice"}}, {}),
    ],
    ids=["header", "body-user", "anthropic-metadata"],
)
async def test_with_member_from_key_a_members_key_cannot_ask_as_another(
    body: dict[str, Any], headers: dict[str, str]
) -> None:
    team = Team()
    hook = bound(team, member_from_key=True)
    try:
        with pytest.raises(HTTPException) as raised:
            await hook.async_pre_call_hook(
                VirtualKey("bob"), None, call(body, headers), "acompletion"
            )
        assert raised.value.status_code == 403
        assert "'bob'" in json.dumps(raised.value.detail)
        assert team.asked == []  # refused here, that call alone
        await alice_is_still_enforced(hook)  # through a key with no user (below)
    finally:
        await hook.client.aclose()


async def test_with_member_from_key_the_key_user_is_asked_for() -> None:
    team = Team()
    hook = bound(team, member_from_key=True)
    try:
        for headers in ({}, {"X-Curfew-User": "alice"}):
            done = await hook.async_pre_call_hook(
                VirtualKey("alice"), None, call({}, headers), "acompletion"
            )
            assert done is not None
            assert "mock_response" in done
        # The master key belongs to no member: the request names one, as before.
        done = await hook.async_pre_call_hook(
            MasterKey(), None, call({}, {"X-Curfew-User": "alice"}), "acompletion"
        )
        assert done is not None
        assert "mock_response" in done
        assert set(team.asked) == {"alice"}
    finally:
        await hook.client.aclose()


def test_member_from_key_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from curfew_client.litellm_hook import _member_from_key_env

    for value, expected in [("", False), ("0", False), ("1", True), ("on", True)]:
        monkeypatch.setenv("CURFEW_MEMBER_FROM_KEY", value)
        assert _member_from_key_env() is expected
    monkeypatch.setenv("CURFEW_MEMBER_FROM_KEY", "maybe")
    with pytest.raises(ValueError, match="CURFEW_MEMBER_FROM_KEY"):
        _member_from_key_env()
