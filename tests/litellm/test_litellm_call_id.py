"""The LiteLLM callback's per-call state is the call's own, never another's
that shares its ``litellm_call_id``.

LiteLLM's proxy takes a call's ``litellm_call_id`` from the client's
``x-litellm-call-id`` header when one is sent
(``litellm/proxy/common_request_processing.py``, ``resolve_litellm_call_id``):
the client chooses it, and two calls may share it (a client that reuses its id
across retries for tracing; anyone who learns or guesses another's). What the
callback keeps between its hooks (the labels, a short-circuit's answer, an
off-duty Gemini stream's in-process upstream, that a call cost nothing) is
therefore kept with LiteLLM's own per-call logging object, which every hook of
the call is handed and no client can name. Were it keyed by the call id:

- an on-duty call sharing its id with an off-duty one could be answered with
  the canned answer, logged as costing nothing (spend that LiteLLM's ledger
  never sees), and labelled with the other call's state;
- an on-duty Gemini stream sent with the id of an earlier off-duty one was
  answered in process with that old canned stream and never reached Google.

The first tests call the hooks as LiteLLM does (its own ``function_setup``
makes each call's logging object); the last ones go through the real
``litellm --config`` proxy."""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from curfew_client import AsyncCurfewClient
from curfew_client import litellm_hook as hook_module
from curfew_client.litellm_hook import CurfewHook
from fastapi import HTTPException
from litellm.utils import Rules, function_setup
from starlette.responses import Response

from tests.litellm.conftest import (
    GEMINI_MODEL,
    MASTER_KEY,
    MODEL,
    OFF_DUTY,
    ON_DUTY,
    WINDING,
    LiteLLMProxy,
)
from tests.litellm.test_litellm_hook import CHAT, GEMINI, verdict

#: The id both calls send (``x-litellm-call-id``): the client's choice.
SHARED_ID = "same-id"
OFF_SESSION = "s-off"
ON_SESSION = "s-on"


class PerSession:
    """A scripted curfew server: off duty for ``OFF_SESSION``, on duty for
    any other session (what an exempt session, or another member of a team,
    is told while the first is off duty)."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)
        self.asked.append(asked)
        state = "off-duty" if asked.get("session_id") == OFF_SESSION else "on-duty"
        return httpx.Response(200, json=verdict(state))

    def hook(self) -> CurfewHook:
        client = AsyncCurfewClient(
            "http://curfew.test", "cfw_t", policy="fail_open", transport=httpx.MockTransport(self)
        )
        return CurfewHook(client)


def litellm_request(session: str, call_type: str, **body: Any) -> dict[str, Any]:
    """``data`` as LiteLLM's proxy hands it to ``async_pre_call_hook``: the
    call id from the client's header, and a logging object of the call's own
    made by LiteLLM's ``function_setup`` (``common_request_processing.py``,
    just before the pre-call hooks)."""
    data: dict[str, Any] = {
        "model": "fake-model",
        "metadata": {"user_api_key_user_id": "u"},
        "proxy_server_request": {"headers": {"host": "proxy", "X-Curfew-Session": session}},
        **copy.deepcopy(body),
        "litellm_call_id": SHARED_ID,
    }
    logging_obj, _ = function_setup(
        original_function=call_type,
        rules_obj=Rules(),
        start_time=datetime.datetime.now(datetime.UTC),
        **{**data, "model": f"openai/{data['model']}"},
    )
    data["litellm_logging_obj"] = logging_obj
    return data


def routed(data: dict[str, Any]) -> dict[str, Any]:
    """The kwargs LiteLLM's ``@client`` wrapper hands
    ``async_pre_call_deployment_hook`` (``litellm/utils.py``): a dict of its
    own, with the call's id and logging object."""
    return {
        "model": f"gemini/{GEMINI_MODEL}",
        "contents": GEMINI["contents"],
        "api_base": "https://generativelanguage.googleapis.com",
        "api_key": "AIza-real-key",
        "litellm_call_id": data["litellm_call_id"],
        "litellm_logging_obj": data["litellm_logging_obj"],
    }


def logged(data: dict[str, Any], cost: float = 0.01) -> dict[str, Any]:
    """What LiteLLM hands ``async_logging_hook``: the call's
    ``model_call_details`` (``litellm_logging.py``), with its usage and cost."""
    details: dict[str, Any] = data["litellm_logging_obj"].model_call_details
    details["response_cost"] = cost
    details["standard_logging_object"] = {
        "prompt_tokens": 11,
        "completion_tokens": 5,
        "total_tokens": 16,
        "response_cost": cost,
    }
    return details


async def pre_call(hook: CurfewHook, data: dict[str, Any], call_type: str) -> dict[str, Any]:
    out = await hook.async_pre_call_hook(
        user_api_key_dict=None, cache=None, data=data, call_type=call_type
    )
    assert out is not None
    return out


async def two_calls(call_type: str = "acompletion") -> tuple[CurfewHook, dict, dict]:
    """An off-duty call and an on-duty one in flight at once, both sent with
    the same ``x-litellm-call-id``: the off-duty one first."""
    hook = PerSession().hook()
    off = await pre_call(hook, litellm_request(OFF_SESSION, call_type, **CHAT), call_type)
    assert off["mock_response"] == "。"  # answered here: nothing upstream
    on = await pre_call(hook, litellm_request(ON_SESSION, call_type, **CHAT), call_type)
    assert "mock_response" not in on  # on duty: upstream, as sent
    return hook, off, on


# -- two calls, one id: chat, Messages, Responses, generateContent --------------------


@pytest.mark.parametrize("call_type", ["acompletion", "anthropic_messages", "aresponses"])
async def test_an_on_duty_call_keeps_its_real_answer_whatever_id_it_shares(
    call_type: str,
) -> None:
    hook, off, on = await two_calls(call_type)
    upstreams = {"real": "answer"}
    # The on-duty call's answer arrives first: it is upstream's, untouched.
    assert await hook.async_post_call_success_hook(on, None, upstreams) is upstreams
    # The off-duty call is still answered with Curfew's answer, once.
    mine = await hook.async_post_call_success_hook(off, None, {"stand": "in"})
    assert isinstance(mine, Response)
    assert mine.headers["x-curfew-state"] == "off-duty"
    assert await hook.async_post_call_success_hook(off, None, {"stand": "in"}) == {"stand": "in"}


async def test_an_on_duty_call_is_logged_at_its_real_cost_whatever_id_it_shares() -> None:
    hook, off, on = await two_calls()
    # The on-duty call is logged first: its cost is LiteLLM's, not zero (no
    # spend kept out of LiteLLM's ledger by sharing an answered call's id).
    kwargs, _ = await hook.async_logging_hook(logged(on), None, "acompletion")
    assert kwargs["response_cost"] == 0.01
    assert kwargs["standard_logging_object"]["prompt_tokens"] == 11
    assert kwargs["standard_logging_object"]["response_cost"] == 0.01
    # The answered call still costs nothing.
    kwargs, _ = await hook.async_logging_hook(logged(off), None, "acompletion")
    assert kwargs["response_cost"] == 0
    assert kwargs["standard_logging_object"]["total_tokens"] == 0


async def test_each_call_says_its_own_state_whatever_id_it_shares() -> None:
    hook, off, on = await two_calls()
    labels = hook.async_post_call_response_headers_hook
    assert await labels(off, None, None) == {
        "X-Curfew-State": "off-duty",
        "X-Curfew-Action": "short-circuit",
    }
    assert await labels(on, None, None) == {"X-Curfew-State": "on-duty", "X-Curfew-Action": "pass"}


async def test_the_on_duty_call_first_changes_nothing_either() -> None:
    # The other order: the on-duty call is checked first, the off-duty one
    # after; each is still answered, logged and labelled as its own.
    curfew = PerSession()
    hook = curfew.hook()
    on = await pre_call(hook, litellm_request(ON_SESSION, "acompletion", **CHAT), "acompletion")
    off = await pre_call(hook, litellm_request(OFF_SESSION, "acompletion", **CHAT), "acompletion")
    assert "mock_response" in off
    assert "mock_response" not in on
    assert await hook.async_post_call_success_hook(on, None, {"real": 1}) == {"real": 1}
    assert (await hook.async_logging_hook(logged(on), None, "acompletion"))[0]["response_cost"]
    labels = await hook.async_post_call_response_headers_hook(on, None, None)
    assert labels == {"X-Curfew-State": "on-duty", "X-Curfew-Action": "pass"}


async def test_a_call_the_hook_never_saw_is_neither_answered_nor_free() -> None:
    # A call the pre-call hook did not answer (it passed, or was never
    # checked), sent with an answered call's id: no canned answer, its cost.
    hook, off, _ = await two_calls()
    stranger = litellm_request("s-other", "acompletion", **CHAT)
    assert await hook.async_post_call_success_hook(stranger, None, {"real": 1}) == {"real": 1}
    kwargs, _ = await hook.async_logging_hook(logged(stranger), None, "acompletion")
    assert kwargs["response_cost"] == 0.01
    assert await hook.async_post_call_response_headers_hook(stranger, None, None) is None
    assert await hook.async_pre_call_deployment_hook(routed(stranger), None) is None
    # And a client's own field of the hook's name in LiteLLM's details is no state.
    forged = {**logged(stranger), hook_module.CALL_STATE: {"canned": True}}
    assert (await hook.async_logging_hook(forged, None, "acompletion"))[0]["response_cost"] == 0.01
    # The answered call is untouched by all that.
    assert isinstance(await hook.async_post_call_success_hook(off, None, {}), Response)


# -- Gemini streams ------------------------------------------------------------------


async def test_an_on_duty_gemini_stream_goes_upstream_whatever_id_it_shares() -> None:
    hook = PerSession().hook()
    stream = "agenerate_content_stream"
    off = await pre_call(hook, litellm_request(OFF_SESSION, stream, **GEMINI), stream)
    assert off["api_base"] == hook_module.NOWHERE
    on = await pre_call(hook, litellm_request(ON_SESSION, stream, **GEMINI), stream)
    assert "api_base" not in on
    # Just before the send: the on-duty stream keeps its deployment and client.
    assert await hook.async_pre_call_deployment_hook(routed(on), None) is None
    # The off-duty one is answered in process, on every attempt of LiteLLM's
    # router (each through the same deployment hook, with the same call).
    for _ in range(3):
        kwargs = await hook.async_pre_call_deployment_hook(routed(off), None)
        assert kwargs is not None
        assert kwargs["api_base"] == hook_module.NOWHERE
        assert isinstance(kwargs["client"], hook_module.ANSWERING_CLIENT)
    # Later, after the curfew: a stream sent with the old id goes upstream.
    later = await pre_call(hook, litellm_request(ON_SESSION, stream, **GEMINI), stream)
    assert await hook.async_pre_call_deployment_hook(routed(later), None) is None
    kwargs, _ = await hook.async_logging_hook(logged(later), None, stream)
    assert kwargs["response_cost"] == 0.01


async def test_a_refusal_is_labelled_though_litellm_drops_the_logging_object() -> None:
    # LiteLLM's failure path drops ``litellm_logging_obj`` from the request
    # before the callbacks run (``proxy/utils.py``, ``post_call_failure_hook``),
    # then asks for the answer's headers with that same request.
    class NoMember:
        def __call__(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(404, json={"error": "not_found", "message": "no member"})

    client = AsyncCurfewClient(
        "http://curfew.test",
        "cft_team",
        transport=httpx.MockTransport(NoMember()),
        report_decisions=False,
    )
    hook = CurfewHook(client)
    data = litellm_request("s-x", "acompletion", **CHAT, user="ghost")
    with pytest.raises(HTTPException):
        await pre_call(hook, data, "acompletion")
    data.pop("litellm_logging_obj")
    labels = await hook.async_post_call_response_headers_hook(data, None, None)
    assert labels == {"X-Curfew-State": "unknown", "X-Curfew-Action": "none"}
    # Another request, with the same id and the same fields, is not this one.
    other = {**data}
    assert await hook.async_post_call_response_headers_hook(other, None, None) is None


# -- through the real proxy ------------------------------------------------------------

STREAM = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]


def headers(call_id: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {MASTER_KEY}",
        "X-Curfew-Session": f"litellm-call-id-{uuid.uuid4().hex[:12]}",
        "x-litellm-call-id": call_id,
    }


def stream_text(response: httpx.Response) -> str:
    objects = [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.strip()
    ]
    return "".join(
        part.get("text", "")
        for event in objects
        for candidate in event.get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
    )


def test_a_gemini_stream_sent_with_an_answered_streams_id_reaches_google_on_duty(
    proxy: LiteLLMProxy,
) -> None:
    call_id = f"reused-{uuid.uuid4().hex}"
    body = {"contents": CONTENTS}
    proxy.curfew.travel(OFF_DUTY)
    off = httpx.post(f"{proxy.base_url}{STREAM}", json=body, headers=headers(call_id), timeout=30)
    assert off.status_code == 200, off.text
    assert off.headers["x-curfew-state"] == "off-duty"
    assert stream_text(off) == proxy.curfew.verdict()["reply"]
    assert proxy.gemini.model_posts() == []
    # The curfew ends. The same id again (a client that reuses it, or anyone
    # who learnt it): the stream reaches Google as sent, and Google answers.
    proxy.curfew.travel(ON_DUTY)
    scope = headers(call_id)
    on = httpx.post(f"{proxy.base_url}{STREAM}", json=body, headers=scope, timeout=30)
    assert on.status_code == 200, on.text
    assert on.headers["x-curfew-state"] == "on-duty"
    assert stream_text(on) == "Hello there", "answered with the off-duty stream"
    (sent,) = proxy.gemini.model_posts()
    assert json.loads(sent.body)["contents"] == CONTENTS
    # And LiteLLM's ledger records Google's usage for it, not zero.
    (entry,) = proxy.ledger(scope["X-Curfew-Session"])
    assert entry["tokens"] == [11, 5], entry


def test_an_on_duty_chat_sent_with_an_answered_calls_id_is_logged_at_its_usage(
    proxy: LiteLLMProxy,
) -> None:
    # An off-duty call answered by the hook that LiteLLM then fails (no such
    # model group) is never logged as a success; its id, sent again on duty,
    # must not make the on-duty call free in LiteLLM's ledger.
    call_id = f"free-{uuid.uuid4().hex}"
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50}
    proxy.curfew.travel(OFF_DUTY)
    failed = httpx.post(
        f"{proxy.base_url}/v1/chat/completions",
        json={**chat, "model": "no-such-model"},
        headers=headers(call_id),
        timeout=30,
    )
    assert failed.status_code >= 400, failed.text
    proxy.curfew.travel(ON_DUTY)
    scope = headers(call_id)
    on = httpx.post(
        f"{proxy.base_url}/v1/chat/completions",
        json={**chat, "model": MODEL},
        headers=scope,
        timeout=30,
    )
    assert on.status_code == 200, on.text
    assert on.headers["x-curfew-state"] == "on-duty"
    assert len(proxy.upstream.chat_requests) == 1
    (entry,) = proxy.ledger(scope["X-Curfew-Session"])
    assert entry["tokens"] == [11, 5], entry


@pytest.mark.parametrize(("moment", "state"), [(ON_DUTY, "on-duty"), (WINDING, "winding")])
def test_an_upstream_error_still_says_the_calls_own_state(
    proxy: LiteLLMProxy, moment: str, state: str
) -> None:
    # LiteLLM's failure path drops the call's logging object before it asks
    # for the error answer's headers: the labels are still the call's own
    # (winding: the clamped copy of the request is the one LiteLLM goes on with).
    proxy.curfew.travel(moment)
    proxy.gemini.fail_with = 500
    response = httpx.post(
        f"{proxy.base_url}/v1beta/models/{GEMINI_MODEL}:generateContent",
        json={"contents": CONTENTS, "generationConfig": {"maxOutputTokens": 5000}},
        headers=headers(f"fails-{uuid.uuid4().hex}"),
        timeout=30,
    )
    assert response.status_code >= 500, response.text
    assert proxy.gemini.model_posts(), "the call never went upstream"
    assert response.headers["x-curfew-state"] == state
