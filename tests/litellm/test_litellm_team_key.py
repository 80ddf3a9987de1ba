"""The LiteLLM callback with a team key (issue 39), on ``data`` built by
LiteLLM's own request set-up (``add_litellm_data_to_request``, as its proxy
calls it before ``async_pre_call_hook``), with a real ``UserAPIKeyAuth``:

- the member comes from the request (``X-Curfew-User``, the body's ``user``,
  ``metadata.user_id``, LiteLLM's end-user id) before LiteLLM's key user, and
  never as the master key's ``default_user_id``; Claude Code's own id in
  ``metadata.user_id`` names no one;
- a refused member (not in the team, or none named) is that call's answer, a
  4xx naming the problem, and every other member is still enforced;
- a call passed without a verdict says ``X-Curfew-State: unchecked``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from curfew_client import AsyncCurfewClient
from curfew_client.litellm_hook import MASTER_KEY_USER, CurfewHook, member_of
from fastapi import HTTPException
from litellm.constants import LITELLM_PROXY_ADMIN_NAME
from litellm.proxy._types import LitellmUserRoles, UserAPIKeyAuth
from litellm.proxy.auth.auth_utils import get_end_user_id_from_request_body
from litellm.proxy.litellm_pre_call_utils import add_litellm_data_to_request
from litellm.proxy.proxy_server import ProxyConfig
from starlette.requests import Request

from tests.litellm.test_litellm_hook import verdict

CHAT_PATH = "/v1/chat/completions"
ALICE = {"X-Curfew-User": "alice"}
MESSAGES_PATH = "/v1/messages"
CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 99}
MESSAGES = {**CHAT}
#: Claude Code's ``metadata.user_id``: today's JSON, and the older form.
CLAUDE_JSON = json.dumps(
    {
        "device_id": "4f" * 32,
        "account_uuid": "0f3c5a0e-8d43-4a43-9d7e-0a3b6c1d2e3f",
        "session_id": "9b2d4c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
    }
)
CLAUDE_OLD = (
    f"user_{'ab' * 32}_account_0f3c5a0e-8d43-4a43-9d7e-0a3b6c1d2e3f"
    "_session_9b2d4c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
)


def master_key(body: dict[str, Any], headers: dict[str, str]) -> UserAPIKeyAuth:
    """What LiteLLM's auth makes of its master key (as documented: clients use
    it), with the end user it reads from the request."""
    return UserAPIKeyAuth(
        api_key="sk-master",
        user_id=LITELLM_PROXY_ADMIN_NAME,
        user_role=LitellmUserRoles.PROXY_ADMIN,
        end_user_id=get_end_user_id_from_request_body(body, headers),
    )


def virtual_key(user_id: str) -> UserAPIKeyAuth:
    return UserAPIKeyAuth(api_key="sk-virtual", user_id=user_id)


async def litellm_data(
    path: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    key: UserAPIKeyAuth | None = None,
    call_id: str = "call-1",
) -> tuple[dict[str, Any], UserAPIKeyAuth]:
    """``data`` and the key as LiteLLM's proxy hands them to the hook."""
    headers = {"authorization": "Bearer sk-master", **(headers or {})}
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
        "query_string": b"",
        "server": ("proxy", 4000),
        "scheme": "http",
        "root_path": "",
    }
    auth = key if key is not None else master_key(body, headers)
    data = await add_litellm_data_to_request(
        data=json.loads(json.dumps(body)),
        request=Request(scope),
        user_api_key_dict=auth,
        proxy_config=ProxyConfig(),
    )
    data["litellm_call_id"] = call_id
    return data, auth


class TeamCurfew:
    """A scripted server behind a team key: alice is switched off (lights
    out), ``ghost`` is no member, a call naming nobody is refused; or, with
    ``error``, no server at all."""

    def __init__(self, error: Exception | None = None, answer: dict[str, Any] | None = None):
        self.error = error
        self.answer = answer or verdict("lights-out")
        self.asked: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        user = json.loads(request.content).get("user")
        self.asked.append(user)
        if self.error is not None:
            raise self.error
        if user is None:
            return httpx.Response(
                400,
                json={
                    "error": "invalid_request",
                    "message": "a team key asks for one member: name them in the "
                    "X-Curfew-User header (or the body's user field; state: ?user=)",
                },
            )
        if user != "alice":
            return httpx.Response(
                404,
                json={
                    "error": "not_found",
                    "message": f"{user!r} is not a member of this key's team",
                },
            )
        return httpx.Response(200, json=self.answer)

    def hook(self, policy: Any = "fail_open") -> CurfewHook:
        client = AsyncCurfewClient(
            "http://curfew.test",
            "cft_team",
            policy=policy,
            transport=httpx.MockTransport(self),
            report_decisions=False,
        )
        return CurfewHook(client)


async def pre_call(
    hook: CurfewHook, data: dict[str, Any], auth: UserAPIKeyAuth, call_type: str = "acompletion"
) -> Any:
    return await hook.async_pre_call_hook(
        user_api_key_dict=auth, cache=None, data=data, call_type=call_type
    )


def said_in(refusal: HTTPException) -> str:
    """The message of the hook's refusal (its ``detail``, as LiteLLM answers it)."""
    detail: Any = refusal.detail
    assert isinstance(detail, dict)
    return str(detail["error"])


async def labels(hook: CurfewHook, data: dict[str, Any]) -> dict[str, str] | None:
    return await hook.async_post_call_response_headers_hook(data, None, None)


@pytest.mark.parametrize(
    ("path", "body", "headers", "key", "member"),
    [
        (CHAT_PATH, {"user": "bob"}, {"X-Curfew-User": "alice"}, None, "alice"),
        (CHAT_PATH, {"user": "alice"}, {}, None, "alice"),
        (CHAT_PATH, {"user": "alice"}, {}, virtual_key("bob"), "alice"),
        (MESSAGES_PATH, {"metadata": {"user_id": "alice"}}, {}, None, "alice"),
        (CHAT_PATH, {}, {"x-litellm-end-user-id": "alice"}, None, "alice"),
        (CHAT_PATH, {}, {}, virtual_key("alice"), "alice"),
        (
            MESSAGES_PATH,
            {"metadata": {"user_id": CLAUDE_JSON}},
            {"X-Curfew-User": "alice"},
            None,
            "alice",
        ),
        (MESSAGES_PATH, {"metadata": {"user_id": CLAUDE_JSON}}, {}, virtual_key("alice"), "alice"),
        (MESSAGES_PATH, {"metadata": {"user_id": CLAUDE_OLD}}, {}, virtual_key("alice"), "alice"),
        (MESSAGES_PATH, {"metadata": {"user_id": CLAUDE_JSON}}, {}, None, None),
        (CHAT_PATH, {}, {}, None, None),
    ],
    ids=[
        "header-first",
        "body-user-over-master-key",
        "body-user-over-key-user",
        "anthropic-metadata",
        "litellm-end-user-header",
        "virtual-key-user",
        "claude-json-with-header",
        "claude-json-skipped-for-key-user",
        "claude-old-form-skipped",
        "claude-json-master-key-nobody",
        "master-key-is-nobody",
    ],
)
async def test_the_member_comes_from_the_request_before_litellms_key_user(
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    key: UserAPIKeyAuth | None,
    member: str | None,
) -> None:
    data, auth = await litellm_data(path, {**CHAT, **body}, headers, key)
    curfew = TeamCurfew()
    call_type = "anthropic_messages" if path == MESSAGES_PATH else "acompletion"
    try:
        await pre_call(curfew.hook(), data, auth, call_type)
    except HTTPException:
        assert member is None  # nobody named: refused for this call (below)
    assert curfew.asked == [member]


def test_the_master_key_user_is_litellms_own() -> None:
    assert MASTER_KEY_USER == LITELLM_PROXY_ADMIN_NAME
    assert member_of({}, virtual_key(LITELLM_PROXY_ADMIN_NAME), {}) is None


@pytest.mark.parametrize("policy", ["fail_open", "fail_closed", "last_known"])
async def test_a_refused_member_is_that_calls_answer_and_the_rest_stay_enforced(
    policy: str,
) -> None:
    curfew = TeamCurfew()
    hook = curfew.hook(policy)
    ghost, auth = await litellm_data(CHAT_PATH, {**CHAT, "user": "ghost"}, call_id="ghost-call")
    with pytest.raises(HTTPException) as raised:
        await pre_call(hook, ghost, auth)
    assert raised.value.status_code == 404
    said = said_in(raised.value)
    assert "'ghost' is not a member of this key's team" in said
    assert "X-Curfew-User" in said
    # Labelled as Curfew's own proxy labels a refusal: no verdict, nothing done.
    assert await labels(hook, ghost) == {"X-Curfew-State": "unknown", "X-Curfew-Action": "none"}
    # Alice, switched off, is asked for and answered here at once: no outage.
    assert hook.client.healthy
    alice, auth = await litellm_data(CHAT_PATH, {**CHAT, "user": "alice"}, call_id="alice-call")
    done = await pre_call(hook, alice, auth)
    assert "mock_response" in done, "alice's call went upstream"
    assert await labels(hook, alice) == {
        "X-Curfew-State": "lights-out",
        "X-Curfew-Action": "short-circuit",
    }
    assert curfew.asked == ["ghost", "alice"]


async def test_claude_code_through_the_master_key_is_told_to_send_x_curfew_user() -> None:
    curfew = TeamCurfew()
    body = {**MESSAGES, "metadata": {"user_id": CLAUDE_JSON}}
    data, auth = await litellm_data(MESSAGES_PATH, body)
    with pytest.raises(HTTPException) as raised:
        await pre_call(curfew.hook(), data, auth, "anthropic_messages")
    assert raised.value.status_code == 400
    said = said_in(raised.value)
    assert "ANTHROPIC_CUSTOM_HEADERS" in said
    assert "X-Curfew-User" in said


@pytest.mark.parametrize(
    ("policy", "action"), [("fail_open", "pass"), ("fail_closed", "short-circuit")]
)
async def test_a_call_answered_without_a_verdict_says_unchecked(policy: str, action: str) -> None:
    curfew = TeamCurfew(error=httpx.ConnectError("refused"))
    hook = curfew.hook(policy)
    data, auth = await litellm_data(CHAT_PATH, {**CHAT, "user": "alice"})
    await pre_call(hook, data, auth)
    assert await labels(hook, data) == {"X-Curfew-State": "unchecked", "X-Curfew-Action": action}


async def test_control_a_checked_call_says_its_state() -> None:
    curfew = TeamCurfew(answer=verdict("on-duty"))
    hook = curfew.hook()
    data, auth = await litellm_data(CHAT_PATH, {**CHAT, "user": "alice"})
    await pre_call(hook, data, auth)
    assert await labels(hook, data) == {"X-Curfew-State": "on-duty", "X-Curfew-Action": "pass"}
