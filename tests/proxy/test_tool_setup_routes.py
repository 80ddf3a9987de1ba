"""Every base URL the declared tool setups give (``curfew_core/web/integrations/tool_setups.py``)
routes to a door of the served proxy, and every purpose label they add exempts
the call it labels.

Each setup is filled in with the served app's own address, as the Integrations
page fills in its own, and every address in it is called as that tool calls it:
``…/v1`` with OpenAI's chat completions, the root with Anthropic's messages (or,
for LiteLLM's callback, the verdict API). Off duty, a call without a label gets
the canned answer with nothing upstream (the control group), and the same call
with the setup's label reaches the upstream untouched.
"""

from __future__ import annotations

import re

import httpx
import pytest

from curfew_core.engine.schedule import DEFAULT_EXEMPT_PURPOSES
from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import Proxy

OFF_DUTY = "2026-09-29 10:00"  # a Tuesday's peak hours, the served user's default schedule
CHAT = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "Name this."}]}
#: Setups whose address is the server's root for the verdict API, not a proxy door:
#: LiteLLM's callback and the ``curfew`` command's hooks (``curfew login``).
VERDICT_API = frozenset({"litellm", "claude-code-hooks", "codex-hooks", "opencode-plugin"})
PURPOSE = re.compile(r"""X-Curfew-Purpose["']?\s*[:=]\s*["']?([a-z]+)""")


def _addresses(text: str, root: str) -> set[str]:
    return {match.rstrip("/") for match in re.findall(re.escape(root) + r"[^\s\"',]*", text)}


def _call(
    address: str, root: str, token: str, tool: str, headers: dict[str, str]
) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}", **headers}
    if address == f"{root}/v1":
        return httpx.post(f"{address}/chat/completions", json=CHAT, headers=auth, timeout=20)
    assert address == root, f"{tool}: an address the proxy does not serve: {address}"
    if tool in VERDICT_API:  # CURFEW_URL or curfew login: the server's root, for verdicts
        return httpx.post(f"{root}/api/v1/verdict", json={}, headers=auth, timeout=20)
    return httpx.post(f"{root}/v1/messages", json=CHAT, headers=auth, timeout=20)


def _rendered(tool: tool_setups.ToolSetup, root: str, token: str) -> str:
    return "\n".join(s.render(base_url=root, token=token) for s in tool.snippets)


@pytest.mark.parametrize("tool", tool_setups.SETUPS, ids=lambda tool: tool.key)
def test_each_setups_addresses_reach_the_proxy_and_its_labels_exempt(
    proxy: Proxy,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
    tool: tool_setups.ToolSetup,
) -> None:
    root = proxy.app.base_url
    text = _rendered(tool, root, proxy.token)
    addresses = _addresses(text, root)
    assert addresses, f"{tool.key}: no address of this server in its setup"
    proxy.travel(OFF_DUTY)
    for address in sorted(addresses):
        upstream.reset()
        anthropic_upstream.reset()
        answer = _call(address, root, proxy.token, tool.key, {})
        assert answer.status_code == 200, (address, answer.text)
        if address == root and tool.key in VERDICT_API:
            assert answer.json()["action"] == "short-circuit"
            continue
        # The control group: unlabelled, the curfew answers and nothing goes upstream.
        assert answer.headers["X-Curfew-Action"] == "short-circuit"
        assert upstream.requests == []
        assert anthropic_upstream.requests == []
        for purpose in sorted(set(PURPOSE.findall(text))):
            labelled = _call(address, root, proxy.token, tool.key, {"X-Curfew-Purpose": purpose})
            assert labelled.status_code == 200, labelled.text
            assert labelled.headers["X-Curfew-Action"] == "pass", (tool.key, purpose)
            [sent] = (upstream if address.endswith("/v1") else anthropic_upstream).requests
            assert sent.json == CHAT  # untouched
            upstream.reset()
            anthropic_upstream.reset()


def test_the_labelled_tools_label_with_exempt_purposes_only() -> None:
    """A label the default schedule does not exempt would change nothing."""
    defaults = set(DEFAULT_EXEMPT_PURPOSES)
    for tool in tool_setups.SETUPS:
        purposes = set(PURPOSE.findall(_rendered(tool, "http://h", "t")))
        assert purposes <= defaults, tool.key
        if tool.key in ("opencode", "aider", "openai-sdk", "anthropic-sdk", "litellm"):
            assert purposes, f"{tool.key} is declared labelled but labels nothing"
