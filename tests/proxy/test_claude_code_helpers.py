"""Claude Code's own helper calls are recognised by the Messages door (issue
42), as OpenCode's and aider's are labelled by their snippets: a title, a
recap or a compaction from Claude Code gets that purpose, so with the default
exempt purposes it passes in every state (the very bytes), while its main
calls are held to the schedule. Recognised only from Claude Code (its
``User-Agent``) and only by its helpers' instructions; a caller's own
``X-Curfew-Purpose`` wins.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from curfew_core.models import Decision
from curfew_core.proxy import helper_calls
from curfew_core.services import ledger_recorder as recorder
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from tests.proxy.inprocess import body_of, token_at

CLAUDE_CODE = {"User-Agent": "claude-cli/2.1.0 (external, cli)"}
IDENTITY = {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}
HI = [{"role": "user", "content": "fix the flaky login test"}]


def helper(instruction: str, **extra: Any) -> dict[str, Any]:
    """A small call as Claude Code sends its helpers: its identity, then the
    helper's instruction, as system blocks."""
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 512,
        "system": [IDENTITY, {"type": "text", "text": f"{instruction} (and the rest of it)"}],
        "messages": HI,
        **extra,
    }


def compaction(marker: str) -> dict[str, Any]:
    guard = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n"
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 20000,
        "system": [IDENTITY, {"type": "text", "text": "the main prompt " * 4000}],
        "messages": [
            *HI,
            {"role": "assistant", "content": "Done: the test waits for the page now."},
            {"role": "user", "content": [{"type": "text", "text": f"{guard}{marker}, ..."}]},
        ],
    }


@pytest.mark.parametrize(("marker", "purpose"), helper_calls.SYSTEM_MARKERS)
def test_each_helper_instruction_is_recognised(marker: str, purpose: str) -> None:
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, helper(marker)) == purpose
    # As one system string too (older releases), and anywhere in a short block.
    as_string = {**helper(marker), "system": f"{IDENTITY['text']}\n\n{marker}."}
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, as_string) == purpose


@pytest.mark.parametrize("marker", helper_calls.COMPACTION_MARKERS)
def test_compaction_is_recognised_in_the_last_user_turn(marker: str) -> None:
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, compaction(marker)) == "compaction"


def test_only_claude_code_is_recognised() -> None:
    title = helper("Analyze if this message indicates a new conversation topic")
    for agent in ("", "python-httpx/0.28", "Anthropic/Python 0.60.0", "opencode/1.0 claude-cli/"):
        assert helper_calls.claude_code_purpose({"User-Agent": agent}, title) is None
    assert helper_calls.claude_code_purpose({}, title) is None


def test_ordinary_calls_are_not_helpers() -> None:
    main = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": [IDENTITY, {"type": "text", "text": "the main prompt " * 4000}],
        "messages": HI,
    }
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, main) is None
    # A marker inside the long main prompt (it quotes its tools' words) is not a helper.
    quoting = {
        **main,
        "system": [
            IDENTITY,
            {"type": "text", "text": "the main prompt " * 4000 + helper_calls.MARKERS[0]},
        ],
    }
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, quoting) is None
    # A user asking about a summary, mid-conversation, is no compaction.
    asking = {
        **main,
        "messages": [
            {
                "role": "user",
                "content": "Earlier I pasted this: " + "x" * 3000 + helper_calls.MARKERS[-1],
            }
        ],
    }
    assert helper_calls.claude_code_purpose(CLAUDE_CODE, asking) is None
    # Odd shapes are no helper and no error.
    for odd in ({}, {"system": 7, "messages": "hi"}, {"system": [None, {"text": 3}]}):
        assert helper_calls.claude_code_purpose(CLAUDE_CODE, odd) is None


async def post(token: str, body: object, **headers: str) -> Any:
    return await AsyncClient().post(
        "/v1/messages",
        body,
        content_type="application/json",
        headers={"x-api-key": token, **CLAUDE_CODE, **headers},
    )


async def decisions() -> list[tuple[str, str]]:
    def read() -> list[tuple[str, str]]:
        recorder.flush()
        return [(d.purpose, d.action) for d in Decision.objects.order_by("id")]

    return await sync_to_async(read)()


@pytest.mark.django_db(transaction=True)
async def test_off_duty_claude_codes_helpers_pass_and_its_work_does_not(
    both_upstreams: None, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    token = await sync_to_async(token_at)("claude-code-off", "10:00")
    title = helper("You are naming a coding session so the user can pick it out")
    recap = helper("The user stepped away and is coming back. Recap")
    main = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "system": [IDENTITY], "messages": HI}
    for body in (title, recap):
        response = await post(token, body)
        assert response.status_code == 200, await body_of(response)
        assert response["X-Curfew-Action"] == "pass"
    held = await post(token, main)
    assert held["X-Curfew-Action"] == "short-circuit"
    # The helpers went as sent, byte for byte; the main call did not go.
    sent = [json.loads(r.body) for r in anthropic_upstream.message_requests]
    assert sent == [title, recap]
    # A purpose the caller named wins over the recognised one.
    named = await post(token, title, **{"X-Curfew-Purpose": "chat"})
    assert named["X-Curfew-Action"] == "short-circuit"
    # Not Claude Code: the same body is an ordinary call.
    other = await AsyncClient().post(
        "/v1/messages", title, content_type="application/json", headers={"x-api-key": token}
    )
    assert other["X-Curfew-Action"] == "short-circuit"
    assert len(anthropic_upstream.message_requests) == 2
    # A passed call's row is recorded when its answer closes, which may come
    # after the calls that followed it (seen in a full run): wait for the five
    # rows, and compare them as a set, not in order.
    rows = await decisions()
    for _ in range(100):
        if len(rows) >= 5:
            break
        await asyncio.sleep(0.05)
        rows = await decisions()
    assert sorted(rows) == sorted(
        [
            ("title", "pass"),
            ("summary", "pass"),
            ("", "short-circuit"),
            ("chat", "short-circuit"),
            ("", "short-circuit"),
        ]
    )
