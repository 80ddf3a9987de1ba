"""Curfew for the LiteLLM proxy: a callback that asks before each model call.

``config.yaml``::

    litellm_settings:
      callbacks: ["curfew_client.litellm_hook.curfew"]

and the environment: ``CURFEW_URL`` (the server's root), ``CURFEW_TOKEN`` (an
API token), optionally ``CURFEW_POLICY`` (``fail_open``, the default;
``fail_closed``, ``last_known``, ``raise``), ``CURFEW_TIMEOUT`` (seconds) and
``CURFEW_PUSH`` (``1``, the default: the client follows the server's change
stream, so an override reaches the proxy within about a second; ``0``: cached
verdicts age out by themselves, up to about a minute).

The only module of the package that imports LiteLLM (``pip install
'curfew-client[litellm]'``). What it does per call type, and why this way
(read from LiteLLM's own source, proven against the real proxy in
``tests/litellm``):

- off duty or lights out, chat, legacy completions and responses: ``data["mock_response"]`` is a
  ``ModelResponse`` built from Curfew's answer, with an explicit zero usage.
  LiteLLM answers it without any upstream request, streamed or not (a plain
  string would report LiteLLM's invented mock usage; a string *returned* by
  the hook is a 400). The Responses API takes only a string mock, so the call
  is sent through LiteLLM's chat-completions bridge
  (``use_chat_completions_api``), which turns the same ``ModelResponse`` into a
  complete response or event stream, zero usage included.
- off duty, Anthropic messages: LiteLLM's ``/v1/messages`` ignores a
  ``ModelResponse`` mock (for an OpenAI deployment it would even go upstream
  through its Responses adapter), and its string mock invents usage and never
  streams. So the string mock only guarantees that nothing is sent (the call
  is made as a plain one, which LiteLLM logs), ``async_post_call_success_hook``
  replaces the answer with Curfew's own (``anthropic_shapes.answer``, or the
  ``answer_events`` stream when the client asked to stream), and
  ``async_logging_hook`` makes LiteLLM's ledger record the invented usage as zero.
- off duty, embeddings: there is no canned embedding; a 503 in OpenAI's error
  shape says so.
- winding: the shape module of the call type clamps the budget (``min``) and
  adds the persona (legacy completions have no system prompt: the clamp only).
- on duty, exempt, dry run: the request is not touched.

Every answer carries ``X-Curfew-State`` and ``X-Curfew-Action``. The hook never
breaks LiteLLM: the client answers outages by policy, and anything unexpected
in the hook is logged and answered by the same policy.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import litellm
from fastapi import HTTPException
from litellm.integrations.custom_logger import CustomLogger
from starlette.responses import StreamingResponse

from curfew_client import anthropic_shapes, completions_shapes, openai_shapes, responses_shapes
from curfew_client.aio import AsyncCurfewClient
from curfew_client.health import POLICIES, Policy
from curfew_client.policy import CurfewUnavailable
from curfew_client.scope import ScopeHeaderError, scope_from_headers
from curfew_client.verdict import CurfewVerdict, policy_verdict

log = logging.getLogger("curfew.litellm")

Kind = Literal["chat", "completions", "responses", "anthropic", "embeddings"]

#: LiteLLM's ``call_type`` names (the proxy's route types, and the SDK's) by
#: the protocol they speak. Any other call (images, audio, batches) passes.
CALL_KINDS: Mapping[str, Kind] = {
    "acompletion": "chat",
    "completion": "chat",
    "atext_completion": "completions",
    "text_completion": "completions",
    "aresponses": "responses",
    "responses": "responses",
    "anthropic_messages": "anthropic",
    "aembedding": "embeddings",
    "embeddings": "embeddings",
}

STATE_HEADER = "X-Curfew-State"
ACTION_HEADER = "X-Curfew-Action"
#: Calls remembered between the pre-call hook and the answer's hooks. Bounded:
#: a call whose answer never comes (a client gone) must not leak.
MAX_REMEMBERED = 4096


@dataclass(frozen=True, slots=True)
class _Pending:
    """An Anthropic short-circuit waiting for its answer to be written."""

    body: dict[str, Any]
    text: str
    stream: bool


def _request_headers(data: Mapping[str, Any]) -> Mapping[str, str]:
    """The client's headers, as the proxy keeps them with the request."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, Mapping) else None
    if not isinstance(headers, Mapping):
        return {}
    return {str(name): str(value) for name, value in headers.items()}


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def requested_budget(kind: Kind, data: Mapping[str, Any]) -> int | None:
    """The reply budget the client asked for, in its protocol's name."""
    if kind == "chat":
        return openai_shapes.requested_budget(data)
    if kind == "completions":
        return _positive(data.get("max_tokens"))
    if kind == "responses":
        return _positive(data.get("max_output_tokens"))
    if kind == "anthropic":
        return _positive(data.get("max_tokens"))
    return None


def apply_verdict(kind: Kind, data: Mapping[str, Any], verdict: CurfewVerdict) -> dict[str, Any]:
    """``data`` as the verdict lets it go upstream, by the call type's shape module."""
    if kind == "responses":
        return responses_shapes.apply_verdict(data, verdict)
    if kind == "anthropic":
        return anthropic_shapes.apply_verdict(data, verdict)
    if kind == "completions":
        return completions_shapes.apply_verdict(data, verdict)
    return openai_shapes.apply_verdict(data, verdict)


def canned_model_response(text: str, model: Any) -> litellm.ModelResponse:
    """Curfew's answer as LiteLLM's own response object: zero usage, said explicitly."""
    completion = openai_shapes.short_circuit_completion(text, model=model)
    return litellm.ModelResponse(
        id=completion["id"],
        created=completion["created"],
        model=completion["model"],
        object="chat.completion",
        choices=completion["choices"],
        usage=litellm.Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0),
    )


def _policy_from_env() -> Policy:
    policy = os.environ.get("CURFEW_POLICY", "fail_open").strip() or "fail_open"
    for known in POLICIES:
        if policy == known:
            return known
    raise ValueError(f"CURFEW_POLICY must be one of {', '.join(POLICIES)}, not {policy!r}")


def _push_from_env() -> bool:
    """``CURFEW_PUSH``: on unless it says off (``0``, ``false``, ``no``, ``off``)."""
    value = os.environ.get("CURFEW_PUSH", "").strip().lower()
    if value in ("", "1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"CURFEW_PUSH must be 1 or 0 (true/false, yes/no, on/off), not {value!r}")


def client_from_env() -> AsyncCurfewClient:
    """The client ``CURFEW_URL``, ``CURFEW_TOKEN``, ``CURFEW_POLICY``,
    ``CURFEW_TIMEOUT`` and ``CURFEW_PUSH`` describe.

    Push mode is on by default: a LiteLLM proxy is a long-lived gateway, the
    very case the change stream is for. Without it an override or a schedule
    save reaches the proxy only when its cached verdict ages out (``max_age``,
    about a minute), and every call until then is answered by the old state.
    ``CURFEW_PUSH=0`` turns it off (one less open connection per process)."""
    url = os.environ.get("CURFEW_URL", "").strip()
    token = os.environ.get("CURFEW_TOKEN", "").strip()
    if not url or not token:
        raise ValueError("set CURFEW_URL and CURFEW_TOKEN for the curfew LiteLLM hook")
    push = _push_from_env()
    timeout = os.environ.get("CURFEW_TIMEOUT", "").strip()
    if timeout:
        return AsyncCurfewClient(
            url, token, policy=_policy_from_env(), timeout=float(timeout), push=push
        )
    return AsyncCurfewClient(url, token, policy=_policy_from_env(), push=push)


class CurfewHook(CustomLogger):
    """A LiteLLM proxy callback that puts every model call under the curfew.

    ``client`` is made from the environment on first use unless given (tests
    and embedders pass their own).
    """

    def __init__(
        self,
        client: AsyncCurfewClient | None = None,
        *,
        client_factory: Callable[[], AsyncCurfewClient] = client_from_env,
    ) -> None:
        super().__init__()
        self._client = client
        self._client_factory = client_factory
        self._headers: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        #: Calls answered here: LiteLLM's own ledger must record them as zero too.
        self._canned: OrderedDict[str, bool] = OrderedDict()
        self._logged: set[str] = set()

    # -- the verdict --------------------------------------------------------------

    @property
    def client(self) -> AsyncCurfewClient:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    def _policy(self) -> Policy:
        if self._client is not None:
            return self._client.cache.policy
        try:
            return _policy_from_env()
        except ValueError:
            return "fail_open"

    async def _verdict(self, kind: Kind, data: Mapping[str, Any]) -> CurfewVerdict:
        scope = scope_from_headers(_request_headers(data))
        return await self.client.verdict(
            session_id=scope.session_id,
            purpose=scope.purpose,
            subagent=scope.subagent,
            max_tokens=requested_budget(kind, data),
        )

    def _failed(self, error: Exception) -> CurfewVerdict:
        """What the policy answers when the hook itself could not decide
        (logged once per kind of failure, not once per call)."""
        why = f"{type(error).__name__}: {error}"
        if why not in self._logged:
            if len(self._logged) >= 64:  # bounded: messages may carry ids
                self._logged.clear()
            self._logged.add(why)
            log.exception("curfew LiteLLM hook failed; answering by policy: %s", why)
        policy = self._policy()
        if policy == "raise":
            raise HTTPException(
                status_code=503,
                detail={"error": f"curfew unavailable: {type(error).__name__}"},
            ) from error
        origin: Literal["fail_open", "fail_closed"] = (
            "fail_closed" if policy == "fail_closed" else "fail_open"
        )
        return policy_verdict(origin, now=time.time(), reply="。", why=type(error).__name__)

    # -- LiteLLM's hooks ----------------------------------------------------------

    async def async_pre_call_hook(
        self,
        user_api_key_dict: Any,
        cache: Any,
        data: dict[str, Any],
        call_type: str,
    ) -> dict[str, Any] | None:
        """Ask Curfew, then let the call through, clamp it, or answer it here."""
        kind = CALL_KINDS.get(str(call_type))
        if kind is None:
            return data
        try:
            verdict = await self._verdict(kind, data)
        except ScopeHeaderError as exc:  # the client's mistake, said as Curfew's proxy says it
            raise HTTPException(status_code=400, detail={"error": str(exc)}) from exc
        except CurfewUnavailable as exc:  # policy "raise": the operator asked for an error
            raise HTTPException(status_code=503, detail={"error": str(exc)}) from exc
        except Exception as exc:  # the hook must never break the proxy: policy answers
            verdict = self._failed(exc)
        try:
            return self._act(kind, data, verdict)
        except HTTPException:
            raise
        except Exception as exc:  # e.g. a shape module missing: policy answers
            return self._act(kind, data, self._failed(exc))

    def _act(self, kind: Kind, data: dict[str, Any], verdict: CurfewVerdict) -> dict[str, Any]:
        call_id = str(data.get("litellm_call_id") or "")
        if call_id:
            self._remember(
                self._headers,
                call_id,
                {STATE_HEADER: verdict.state, ACTION_HEADER: verdict.action},
            )
        if verdict.short_circuit:
            text = verdict.reply if verdict.reply is not None else "。"
            data = self._short_circuit(kind, data, verdict, text, call_id)
            if call_id:
                self._remember(self._canned, call_id, True)
            return data
        if verdict.action == "clamp" and kind != "embeddings":
            # An embedding has no reply to clamp and no system prompt: it passes.
            return apply_verdict(kind, data, verdict)
        return data

    def _short_circuit(
        self, kind: Kind, data: dict[str, Any], verdict: CurfewVerdict, text: str, call_id: str
    ) -> dict[str, Any]:
        if kind == "embeddings":
            raise HTTPException(
                status_code=503,
                detail={
                    "error": f"curfew {verdict.state.replace('-', ' ')}: no embeddings until "
                    f"{verdict.valid_until.isoformat()} (an embedding has no canned answer)"
                },
            )
        if kind == "anthropic":
            if not call_id:
                raise RuntimeError("LiteLLM gave this call no litellm_call_id")
            body = {key: value for key, value in data.items() if key in ("model", "stream")}
            self._remember(self._pending, call_id, _Pending(body, text, data.get("stream") is True))
            # Only a string mock is honoured here: it guarantees no upstream
            # request; the answer is replaced by Curfew's own after the call.
            # That mock never streams, and LiteLLM never logs a "stream" that
            # never comes: asked as a plain call, it is logged (as zero).
            data["mock_response"] = text
            data["stream"] = False
            return data
        data["mock_response"] = canned_model_response(text, data.get("model"))
        if kind == "responses":
            data["use_chat_completions_api"] = True
        return data

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        """An Anthropic short-circuit's answer: Curfew's own, zero usage, streamed
        with the Messages API's events when the client asked to stream."""
        call_id = str(data.get("litellm_call_id") or "")
        pending = self._pending.pop(call_id, None) if call_id else None
        if pending is None:
            return response
        try:
            if not pending.stream:
                return anthropic_shapes.answer(pending.body, pending.text)
            # The Messages API's named events, written by the shape module itself.
            payload, content_type = anthropic_shapes.short_circuit_body(
                {**pending.body, "stream": True}, pending.text
            )
        except Exception:  # never break the proxy: LiteLLM's own mock answer stands
            log.exception("curfew LiteLLM hook could not write the Anthropic answer")
            return response

        async def stream() -> AsyncIterator[bytes]:
            yield payload

        # A response object of our own is sent as it is, so it carries our headers itself.
        return StreamingResponse(
            stream(),
            media_type=content_type,
            headers=self._headers.get(call_id, {}),
        )

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, object] | None = None,
    ) -> dict[str, str] | None:
        """``X-Curfew-State`` and ``X-Curfew-Action`` on every answer (errors too)."""
        call_id = str(data.get("litellm_call_id") or "")
        headers = self._headers.get(call_id) if call_id else None
        return dict(headers) if headers else None

    async def async_logging_hook(
        self, kwargs: dict[str, Any], result: Any, call_type: str
    ) -> tuple[dict[str, Any], Any]:
        """A call answered here cost nothing: LiteLLM's ledger (the payload its
        spend tracking reads) says zero, whatever usage its mock path invented
        (the Anthropic string mock claims thousands of tokens)."""
        call_id = kwargs.get("litellm_call_id")
        if isinstance(call_id, str) and self._canned.pop(call_id, False):
            kwargs["response_cost"] = 0.0
            payload = kwargs.get("standard_logging_object")
            if isinstance(payload, dict):
                payload.update(
                    response_cost=0.0, prompt_tokens=0, completion_tokens=0, total_tokens=0
                )
        return kwargs, result

    # -- internals ------------------------------------------------------------------

    @staticmethod
    def _remember(store: OrderedDict[str, Any], key: str, value: Any) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > MAX_REMEMBERED:
            store.popitem(last=False)


#: The instance ``config.yaml`` names: ``callbacks: curfew_client.litellm_hook.curfew``.
curfew = CurfewHook()
