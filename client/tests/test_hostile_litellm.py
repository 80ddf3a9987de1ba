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
