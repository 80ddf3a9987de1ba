"""LiteLLM's sync loggers record a call answered here as costing nothing.

LiteLLM's ``Logging.success_handler`` (``litellm_core_utils/litellm_logging.py``)
runs each callback's sync ``logging_hook`` over the call details it then hands
its built-in sync loggers (string callbacks such as ``"s3"``, ``"langfuse"``,
``"supabase"``): for an async request a copy of ``model_call_details`` with a
``standard_logging_object`` of its own, which ``async_logging_hook`` never
sees. Without a sync hook those loggers recorded the usage LiteLLM's mock path
invents for an answered call. These tests run LiteLLM's own success handler
on a logging object made by its ``function_setup``, with a recording ``"s3"``
logger; a call let through keeps its real usage."""

from __future__ import annotations

import datetime
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

import litellm
from curfew_client import AsyncCurfewClient
from curfew_client.litellm_hook import CurfewHook
from litellm.litellm_core_utils import litellm_logging
from litellm.types.utils import ModelResponse, Usage
from litellm.utils import Rules, function_setup

from tests.litellm.test_litellm_hook import CHAT, verdict

#: A model LiteLLM prices, so a call let through has a real cost to keep.
PRICED = "gpt-4o-mini"


class Recorder:
    """LiteLLM's ``"s3"`` logger, recording what it is handed."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def log_event(self, kwargs: dict[str, Any], response_obj: Any, **_: Any) -> None:
        self.seen.append(dict(kwargs))


def hook_for(state: str) -> CurfewHook:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=verdict(state))

    client = AsyncCurfewClient(
        "http://curfew.test", "cfw_t", policy="fail_open", transport=httpx.MockTransport(answer)
    )
    return CurfewHook(client)


def invented() -> ModelResponse:
    """An answer with the usage LiteLLM's mock path makes up (or upstream's)."""
    return ModelResponse(
        model=PRICED,
        choices=[{"index": 0, "message": {"role": "assistant", "content": "。"}}],
        usage=Usage(prompt_tokens=3000, completion_tokens=2000, total_tokens=5000),
    )


async def logged_by_s3(
    state: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One async chat call through the hook's pre-call path, then LiteLLM's
    sync success handler: what the ``"s3"`` logger saw, and the call data."""
    hook = hook_for(state)
    recorder = Recorder()
    monkeypatch.setattr(litellm, "success_callback", [hook, "s3"])
    data: dict[str, Any] = {
        "model": PRICED,
        "metadata": {"user_api_key_user_id": "u"},
        "proxy_server_request": {"headers": {"host": "proxy", "X-Curfew-Session": "s"}},
        **CHAT,
        "litellm_call_id": f"sync-{state}",
    }
    logging_obj, _ = function_setup(
        original_function="acompletion",
        rules_obj=Rules(),
        start_time=datetime.datetime.now(datetime.UTC),
        **data,
    )
    data["litellm_logging_obj"] = logging_obj
    out = await hook.async_pre_call_hook(
        user_api_key_dict=None, cache=None, data=data, call_type="acompletion"
    )
    assert out is not None
    # The call's params, as LiteLLM's completion sets them before sending.
    logging_obj.update_environment_variables(
        model=PRICED,
        user=None,
        optional_params={},
        litellm_params={"litellm_call_id": data["litellm_call_id"]},
    )
    # After the call's setup, which makes LiteLLM's own S3 logger.
    monkeypatch.setattr(litellm_logging, "s3Logger", recorder)
    now = datetime.datetime.now(datetime.UTC)
    logging_obj.success_handler(invented(), now, now, for_async_request=True)
    assert len(recorder.seen) == 1
    return recorder.seen[0], out


async def test_an_answered_calls_sync_logger_sees_zero_tokens_and_cost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen, out = await logged_by_s3("off-duty", monkeypatch)
    assert out["mock_response"] == "。"  # answered here
    assert seen["response_cost"] == 0.0
    payload = seen["standard_logging_object"]
    assert payload["response_cost"] == 0.0
    assert (payload["prompt_tokens"], payload["completion_tokens"], payload["total_tokens"]) == (
        0,
        0,
        0,
    )


async def test_a_passed_calls_sync_logger_keeps_its_real_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen, out = await logged_by_s3("on-duty", monkeypatch)
    assert "mock_response" not in out  # let through
    assert seen["response_cost"] > 0
    payload = seen["standard_logging_object"]
    assert payload["response_cost"] > 0
    assert (payload["prompt_tokens"], payload["completion_tokens"], payload["total_tokens"]) == (
        3000,
        2000,
        5000,
    )
