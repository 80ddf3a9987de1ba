"""The Integrations page's "subscription login, through the proxy" rows
(issue 42) do what they say: Claude Code's shell lines and Codex's provider,
filled in and sent as those tools send them, reach the upstream with the
caller's own login alone (where the operator allows it)."""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from curfew_core.web.integrations import tool_setups
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import body_of, token_at

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "http://curfew.example.test"
OAUTH = "sk-ant-oat01-" + "SubscriberLogin" * 4
#: A ChatGPT login's access token is a JSON Web Token.
CHATGPT = "eyJhbGciOiJSUzI1NiJ9." + "eyJzdWIiOiJjaGF0Z3B0In0" * 3 + ".c2lnbmF0dXJl"


@pytest.fixture
def allowed(both_upstreams: None) -> Iterator[None]:
    with override_settings(CURFEW_PROXY_CALLER_CREDENTIALS=True):
        yield


def _custom_headers(value: str) -> dict[str, str]:
    """``ANTHROPIC_CUSTOM_HEADERS`` as Claude Code reads it: ``Name: value``
    lines."""
    found = {}
    for line in value.splitlines():
        name, _, header = line.partition(":")
        found[name.strip()] = header.strip()
    return found


async def test_the_claude_code_login_row(
    allowed: None, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    token = await sync_to_async(token_at)("claude-login-row", "20:00")
    snippet = tool_setups.setup("claude-code-login").snippet("env")
    text = snippet.render(base_url=BASE, token=token)
    exports = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "export":
            name, _, value = words[1].partition("=")
            exports[name] = value
        elif words and words[0] == "unset":
            unset = set(words[1:])
    assert exports["ANTHROPIC_BASE_URL"] == BASE
    assert {"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"} <= unset  # its own login is sent
    headers = _custom_headers(exports["ANTHROPIC_CUSTOM_HEADERS"])
    assert headers == {"X-Curfew-Token": token}
    # As Claude Code then calls: its login as the bearer, the custom header beside it.
    response = await AsyncClient().post(
        "/v1/messages",
        {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
        content_type="application/json",
        headers={
            **headers,
            "Authorization": f"Bearer {OAUTH}",
            "anthropic-beta": "oauth-2025-04-20",
            "User-Agent": "claude-cli/2.1.0 (external, cli)",
        },
    )
    assert response.status_code == 200, await body_of(response)
    [sent] = anthropic_upstream.message_requests
    credentials = [(n, v) for n, v in sent.header_list if n in ("authorization", "x-api-key")]
    assert credentials == [("authorization", f"Bearer {OAUTH}")]
    assert token not in json.dumps(sent.header_list)


async def test_the_codex_login_row(allowed: None, upstream: FakeUpstream, closing: None) -> None:
    token = await sync_to_async(token_at)("codex-login-row", "20:00")
    setup = tool_setups.setup("codex-login")
    config: dict[str, Any] = tomllib.loads(
        setup.snippet("config").render(base_url=BASE, token=token)
    )
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == f"{BASE}/v1"
    assert provider["wire_api"] == "responses"
    assert provider["requires_openai_auth"] is True  # Codex's own login
    assert "env_key" not in provider  # no key of ours in its place
    env = setup.snippet("env").exports(base_url=BASE, token=token)
    headers = {name: env[variable] for name, variable in provider["env_http_headers"].items()}
    assert headers == {"X-Curfew-Token": token}
    response = await AsyncClient().post(
        "/v1/responses",
        {"model": "gpt-5-codex", "input": "hi"},
        content_type="application/json",
        headers={
            **headers,
            "Authorization": f"Bearer {CHATGPT}",
            "chatgpt-account-id": "acct-42",
            "originator": "codex_cli_rs",
        },
    )
    assert response.status_code == 200, await body_of(response)
    [sent] = upstream.requests
    assert [(n, v) for n, v in sent.header_list if n == "authorization"] == [
        ("authorization", f"Bearer {CHATGPT}")
    ]
    assert ("chatgpt-account-id", "acct-42") in sent.header_list
    assert token not in json.dumps(sent.header_list)
