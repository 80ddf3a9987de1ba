"""Curfew for the LiteLLM proxy: a callback that asks before each model call.

``config.yaml``::

    litellm_settings:
      callbacks: ["curfew_client.litellm_hook.curfew"]

and the environment: ``CURFEW_URL`` (the server's root), ``CURFEW_TOKEN`` (an
API token), optionally ``CURFEW_POLICY`` (``fail_open``, the default;
``fail_closed``, ``last_known``, ``raise``), ``CURFEW_TIMEOUT`` (seconds) and
``CURFEW_PUSH`` (``1``, the default: the client follows the server's change
stream, so an override reaches the proxy within about a second; ``0``: cached
verdicts age out by themselves, up to about a minute), and with a team key
``CURFEW_MEMBER_FROM_KEY`` (``1``: a virtual key with a user asks for that
member alone; see ``bound_member``). LiteLLM's own
``LITELLM_MASTER_KEY`` (the key its clients send) must be set too: its proxy
does not start without it.

The only module of the package that imports LiteLLM (``pip install
'./client[litellm]'`` from a checkout). What it does per call type, and why this
way (read from LiteLLM's own source, proven against the real proxy in
``tests/litellm``):

- off duty or lights out, chat, legacy completions, responses and Anthropic
  messages: the answer is Curfew's proxy's own, the very bytes of the call
  type's shape module (``short_circuit_body``): a refusal where the client asked
  for structured output (``response_format``, ``text.format``), ``n`` choices,
  streamed or not as asked, zero usage. A mock answered by LiteLLM would be
  LiteLLM's rendering, not the proxy's (it writes its own streams and response
  objects, and the Responses and Messages APIs take only a string mock), and
  two renderings drift. So a string mock only guarantees that nothing is sent
  upstream (the call is made as a plain one, which LiteLLM logs), and
  ``async_post_call_success_hook`` replaces LiteLLM's answer with Curfew's;
  ``async_logging_hook`` makes LiteLLM's ledger record the mock's invented
  usage as zero. ``tests/litellm/test_litellm_parity.py`` compares the two.
- off duty, embeddings: there is no canned embedding; the refusal is Curfew's
  proxy's own (``openai_shapes.embeddings_refusal``: a 503 with ``Retry-After``
  and ``X-Should-Retry: false``, so SDKs do not retry it), and LiteLLM logs it
  without a traceback: a refusal by design is not a crash.
- winding: the shape module of the call type clamps the budget (``min``) and
  adds the persona (legacy completions have no system prompt: the clamp only).
- Gemini's own calls (the proxy's ``/v1beta/models/{model}:generateContent``
  and ``:streamGenerateContent`` routes, LiteLLM's ``agenerate_content`` /
  ``agenerate_content_stream`` call types and their sync names): the body is
  Gemini's REST body (``contents``, ``generationConfig``, ``systemInstruction``).
  Off duty, ``generateContent`` is answered as Curfew's Gemini door answers it
  (``gemini_shapes``: one candidate, ``usageMetadata`` all zero), by the same
  string mock and success hook; LiteLLM's success logging, which reads the
  call's httpx response (its mock sets none), is handed Curfew's answer, so the
  call is logged as a zero-usage success, not as an ERROR. A *stream* cannot
  be mocked: LiteLLM's Gemini stream route ignores ``mock_response`` (it would
  call upstream), and asked as a plain call it fails. So an off-duty Gemini
  stream is answered where LiteLLM would reach Google: the pre-call hook points
  the call at an address that resolves nowhere (``NOWHERE``, ``.invalid``),
  and LiteLLM's ``async_pre_call_deployment_hook``, called just before the
  request is sent, hands the call an HTTP client of its own
  (``AsyncHTTPHandler(transport=…)``, the ``client`` LiteLLM's Gemini handler
  takes) whose transport answers in process with Curfew's Gemini stream
  (``gemini_shapes``: one event, the reply, ``finishReason``, ``usageMetadata``
  all zero), and makes it a ``gemini/`` call whatever its deployment
  (``ANSWERING_PROVIDER``): a ``vertex_ai/`` deployment's handler would first
  fetch Google's OAuth token (its service account's ``token_uri``, or the
  metadata server: ``VertexBase.get_access_token_async``, called by
  ``VertexAIGoogleGenAIConfig.get_auth_token_and_url`` after this hook), the
  ``gemini/`` one needs none. LiteLLM relays those events as it relays
  Google's, and logs the call from them: a zero-usage success. Nothing leaves
  the process, not even for a token (the mocked call types never reach a
  provider's handler, so load no credentials either:
  ``tests/litellm/test_vertex_off_duty.py``); were a LiteLLM to stop honouring
  that client, the call would fail at the address that resolves nowhere,
  never reach upstream. A LiteLLM whose HTTP handler
  takes no transport refuses such a stream instead: a 503 in Gemini's error
  shape (``{"error": {"code", "message", "status"}}``) with ``Retry-After``
  and ``X-Should-Retry: false``, as embeddings are. Winding clamps
  ``maxOutputTokens`` and the thinking budget/level
  (``gemini_shapes.apply_verdict``) and appends the persona to
  ``systemInstruction``, in both routes.
- on duty, exempt, dry run: the request is not touched.

Every answer carries ``X-Curfew-State`` and ``X-Curfew-Action``;
``X-Curfew-State: unchecked`` when the outage policy answered without a
verdict (``fail_open`` passing, ``fail_closed`` answering). The hook never
breaks LiteLLM: the client answers outages by policy, and anything unexpected
in the hook is logged and answered by the same policy.

What the callback keeps of a call between its hooks (its labels, a
short-circuit's answer, an off-duty Gemini stream's in-process upstream, that
it cost nothing) is kept with LiteLLM's own logging object of that call
(``data["litellm_logging_obj"]``, whose ``model_call_details`` LiteLLM hands
the deployment hook, each attempt of its router's retries, and
``async_logging_hook``), never by ``litellm_call_id``: LiteLLM's proxy takes
that id from the client's ``x-litellm-call-id`` header, so calls may share it
and a client could pick another's. A hook that finds no state of its own
leaves the call as LiteLLM has it: no call the pre-call hook did not answer is
answered here or logged as costing nothing.

With a team key (``cft_…``) as ``CURFEW_TOKEN``, each call names its member
(``member_of``): the request first (``X-Curfew-User``, the body's ``user``,
``metadata.user_id``, LiteLLM's end-user id), then LiteLLM's user of a virtual
key, never the master key's own. A call whose member the server refuses (not
in the team: 404; none named: 400) gets that refusal as its answer, naming the
problem and how to name a member; it is no outage, and every other member's
calls are still enforced.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from fastapi import HTTPException
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import ProxyException
from starlette.responses import Response, StreamingResponse

from curfew_client import (
    anthropic_shapes,
    completions_shapes,
    gemini_shapes,
    openai_shapes,
    responses_shapes,
    shapes,
)
from curfew_client.aio import AsyncCurfewClient
from curfew_client.health import POLICIES, Policy
from curfew_client.policy import CurfewRefused, CurfewUnavailable
from curfew_client.scope import ScopeHeaderError, scope_from_headers
from curfew_client.verdict import CurfewVerdict, policy_verdict

log = logging.getLogger("curfew.litellm")

Kind = Literal["chat", "completions", "responses", "anthropic", "embeddings", "gemini"]

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
    # Gemini's own (LiteLLM's google genai routes, ``CallTypes.*generate_content*``).
    "agenerate_content": "gemini",
    "generate_content": "gemini",
    "agenerate_content_stream": "gemini",
    "generate_content_stream": "gemini",
}

#: The Gemini call types that stream (``:streamGenerateContent``).
GEMINI_STREAMS = frozenset({"agenerate_content_stream", "generate_content_stream"})
#: Where an off-duty Gemini stream is sent: nowhere (``.invalid`` never
#: resolves, RFC 2606), with no key. Its own transport answers it in process;
#: were it ever not used, the call fails here instead of reaching upstream.
NOWHERE = "http://curfew-answers.invalid"
NO_KEY = "curfew-answers-no-key"
#: The provider an off-duty Gemini stream is sent as, whatever its deployment's:
#: LiteLLM's ``gemini/`` handler needs no credentials (``VertexBase.
#: _ensure_access_token_async`` returns none for it), while a ``vertex_ai/``
#: deployment's handler loads and refreshes Google's (a token request to the
#: service account's ``token_uri``, or the metadata server) before the send.
ANSWERING_PROVIDER = "gemini"
#: Why an off-duty Gemini stream is refused rather than answered in process.
NO_TRANSPORT = "this LiteLLM's HTTP handler takes no transport"
NO_LOGGING_OBJECT = "this LiteLLM gave the call no logging object to keep its answer with"

STATE_HEADER = "X-Curfew-State"
ACTION_HEADER = "X-Curfew-Action"
#: A call refused before any verdict (a name that is not a member): what
#: Curfew's own proxy labels a refusal with (``edge.dialects.labelled``).
UNKNOWN_STATE = "unknown"
NO_ACTION = "none"
#: Requests remembered between the pre-call hook and their answer's headers
#: (``CurfewHook._open``). Bounded: a request whose answer never comes (a
#: client gone) must not leak.
MAX_REMEMBERED = 4096
#: Where a call's state is kept: a key of LiteLLM's own per-call logging
#: object's ``model_call_details`` (``data["litellm_logging_obj"]``), which
#: LiteLLM hands every hook of that call, and ``async_logging_hook`` as its
#: kwargs. Its value is a ``_Call``, which no JSON body can make.
CALL_STATE = "curfew_call"


#: The shape module that answers each call type off duty, as Curfew's proxy does.
ANSWER_SHAPES: Mapping[Kind, shapes.Shape] = {
    "chat": "chat",
    "completions": "completions",
    "responses": "responses",
    "anthropic": "messages",
}


@dataclass(frozen=True, slots=True)
class _Pending:
    """A short-circuit waiting for its answer to be written: the client's
    request as it asked (before the hook made it a plain mocked call)."""

    shape: shapes.Shape | shapes.ShapeModule
    body: dict[str, Any]
    text: str


@dataclass(frozen=True, slots=True)
class _CannedStream:
    """An off-duty Gemini stream's answer, waiting for LiteLLM to send the call."""

    payload: bytes
    content_type: str


class _Call:
    """What the callback keeps of one call between its hooks: its labels
    (``X-Curfew-State`` / ``-Action``), a short-circuit's answer waiting to be
    written, an off-duty Gemini stream's in-process upstream, and whether
    LiteLLM's ledger must record it as costing nothing.

    Kept with the call itself (``CALL_STATE``), never by LiteLLM's
    ``litellm_call_id``: the proxy takes that id from the client's
    ``x-litellm-call-id`` header (``resolve_litellm_call_id``), so two calls
    may share it, and a client could choose another's. A copy of LiteLLM's
    call details (its loggers make some) is the same call: copying keeps this
    object, not a twin of it."""

    __slots__ = ("canned", "labels", "pending", "stream")

    def __init__(self) -> None:
        self.labels: dict[str, str] | None = None
        self.pending: _Pending | None = None
        self.stream: _CannedStream | None = None
        #: Answered here: LiteLLM's own ledger must record it as zero.
        self.canned = False

    def __copy__(self) -> _Call:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Call:
        return self

    def __repr__(self) -> str:  # LiteLLM's debug logs print its call details
        return "<curfew call>"


def _details(holder: Mapping[str, Any]) -> dict[str, Any] | None:
    """LiteLLM's ``model_call_details`` of the call whose request (or
    deployment kwargs) is ``holder``: its logging object's, or ``None``."""
    details = getattr(holder.get("litellm_logging_obj"), "model_call_details", None)
    return details if isinstance(details, dict) else None


def _state_in(details: Mapping[str, Any] | None) -> _Call | None:
    """The call's state in LiteLLM's call details: only the hook's own object."""
    found = details.get(CALL_STATE) if details is not None else None
    return found if isinstance(found, _Call) else None


class AnswerTransport(httpx.AsyncBaseTransport):
    """The upstream of one off-duty Gemini stream, in process: whatever
    LiteLLM sends it is answered with Curfew's stream; nothing leaves the
    process."""

    def __init__(self, payload: bytes, content_type: str) -> None:
        self._payload = payload
        self._content_type = content_type

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return httpx.Response(
            200, content=self._payload, headers={"content-type": self._content_type}
        )


def _answering_client_class() -> Any | None:
    """LiteLLM's ``AsyncHTTPHandler``, when it takes a transport of its own
    (``None`` otherwise: then an off-duty Gemini stream is refused)."""
    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
    except ImportError:  # pragma: no cover - every LiteLLM this supports has it
        return None
    parameters = inspect.signature(AsyncHTTPHandler.__init__).parameters
    return AsyncHTTPHandler if "transport" in parameters else None


#: ``None``: this LiteLLM cannot be handed an in-process upstream.
ANSWERING_CLIENT = _answering_client_class()


def answering_client(payload: bytes, content_type: str) -> Any:
    """The ``client`` LiteLLM's Gemini handler sends an off-duty stream
    through: its transport answers with ``payload``."""
    if ANSWERING_CLIENT is None:
        raise RuntimeError("this LiteLLM's AsyncHTTPHandler takes no transport")
    return ANSWERING_CLIENT(transport=AnswerTransport(payload, content_type))


class CurfewRefusal(ProxyException):
    """A refusal by design (embeddings off duty), answered in exactly the error
    body and headers Curfew's proxy writes. A ``ProxyException`` because LiteLLM
    answers one as it is (status, headers); only its ``to_dict`` is ours, since
    LiteLLM's would put the HTTP status where OpenAI's ``code`` goes."""

    def __init__(self, status: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> None:
        error = dict(body["error"])
        super().__init__(
            message=str(error["message"]),
            # OpenAI's error has a ``type``; Gemini's a ``status``.
            type=str(error.get("type") or error.get("status") or "curfew"),
            param=error.get("param"),
            code=status,
            headers=dict(headers),
        )
        self.error = error

    def to_dict(self) -> dict[str, Any]:
        return dict(self.error)


class _QuietRefusals(logging.Filter):
    """LiteLLM logs every error answer with ``exception()`` (a traceback) unless
    it is a 4xx of its own; a curfew refusal is a 503 by design, so its record
    keeps its one line and loses the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], CurfewRefusal):
            record.exc_info = None
            record.exc_text = None
        return True


#: LiteLLM's loggers that report a failed call.
LITELLM_LOGGERS = ("LiteLLM Proxy", "LiteLLM", "LiteLLM Router")


def _quiet_refusals() -> None:
    quiet = _QuietRefusals()
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(known, _QuietRefusals) for known in logger.filters):
            logger.addFilter(quiet)


def _request_headers(data: Mapping[str, Any]) -> Mapping[str, str]:
    """The client's headers, as the proxy keeps them with the request."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, Mapping) else None
    if not isinstance(headers, Mapping):
        return {}
    return {str(name): str(value) for name, value in headers.items()}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


#: LiteLLM's user of its master key (``litellm.constants.LITELLM_PROXY_ADMIN_NAME``):
#: the proxy's administrator, never a person a team key may ask for.
MASTER_KEY_USER = "default_user_id"
#: Claude Code's ``metadata.user_id``: a JSON object (``{"device_id": …,
#: "account_uuid": …, "session_id": …}``), or the older
#: ``user_<hash>_account_<uuid>_session_<uuid>``. The tool's own id, never a
#: member's name: skipped, so the next source names the member.
_TOOL_ID = re.compile(r"^\s*\{|^user_[0-9a-f]+_account_.*_session_", re.IGNORECASE)


def _name(value: Any) -> str | None:
    """``value`` as a member's name, or ``None`` (empty, not text, a tool's own id)."""
    text = _text(value.strip() if isinstance(value, str) else value)
    if text is None or _TOOL_ID.search(text):
        return None
    return text


def _metadata(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Where LiteLLM keeps a call's metadata: ``metadata`` (chat), and
    ``litellm_metadata`` (the Messages and Responses routes, whose own
    ``metadata`` is the client's)."""
    return [
        holder
        for holder in (data.get("metadata"), data.get("litellm_metadata"))
        if isinstance(holder, Mapping)
    ]


def member_of(
    data: Mapping[str, Any], user_api_key_dict: Any, headers: Mapping[str, str]
) -> str | None:
    """The Curfew member a LiteLLM call is for, when ``CURFEW_TOKEN`` is a team
    key; the request first, then LiteLLM's key:

    1. the client's ``X-Curfew-User`` header;
    2. the body's ``user`` (OpenAI's end user);
    3. the body's ``metadata.user_id`` (Anthropic's);
    4. LiteLLM's end-user id (``UserAPIKeyAuth.end_user_id``: its customer
       headers, or what it read from the body);
    5. LiteLLM's user of the virtual key (``user_api_key_user_id``), never the
       master key's own (``default_user_id``).

    Claude Code's own id in ``metadata.user_id`` names no one and is skipped.
    ``None``: the call names no member (the server refuses it, for that call)."""
    for name, value in headers.items():
        if name.lower() == "x-curfew-user" and (found := _name(value)) is not None:
            return found
    if (found := _name(data.get("user"))) is not None:
        return found
    metadata = data.get("metadata")
    if isinstance(metadata, Mapping) and (found := _name(metadata.get("user_id"))) is not None:
        return found
    for found in (
        getattr(user_api_key_dict, "end_user_id", None),
        *(holder.get("user_api_key_end_user_id") for holder in _metadata(data)),
    ):
        if (named := _name(found)) is not None:
            return named
    for found in (
        *(holder.get("user_api_key_user_id") for holder in _metadata(data)),
        getattr(user_api_key_dict, "user_id", None),
    ):
        named = _name(found)
        if named is not None and named != MASTER_KEY_USER:
            return named
    return None


#: The longest member name sent to the server. A username is at most 150
#: characters; this bound is far above it and only keeps a call that names its
#: member in megabytes from costing an upload (and, past the server's body
#: limit or the client's timeout, from looking like an outage to every member).
MAX_MEMBER_NAME = 1024


def checked_member(name: str | None) -> str | None:
    """``name``, or ``CurfewRefused`` (400, this call's alone) when it is too
    long to be anyone's, without asking the server."""
    if name is not None and len(name) > MAX_MEMBER_NAME:
        raise CurfewRefused(
            400,
            "invalid_request",
            f"a member's name of {len(name)} characters is no username",
            name[:40] + "…",
        )
    return name


def key_user(data: Mapping[str, Any], user_api_key_dict: Any) -> str | None:
    """LiteLLM's user of the call's virtual key (never the master key's own):
    who LiteLLM authenticated, as opposed to whom the request names (the key
    object first: a client's own ``metadata`` could carry the field's name)."""
    for found in (
        getattr(user_api_key_dict, "user_id", None),
        *(holder.get("user_api_key_user_id") for holder in _metadata(data)),
    ):
        named = _name(found)
        if named is not None and named != MASTER_KEY_USER:
            return named
    return None


def bound_member(
    data: Mapping[str, Any], user_api_key_dict: Any, headers: Mapping[str, str]
) -> str | None:
    """``member_of`` for a proxy whose virtual keys each belong to a member
    (``CURFEW_MEMBER_FROM_KEY=1``): a key with a user asks for that user alone,
    and a request naming anyone else is refused (403, that call's alone), so a
    member cannot ask as another by writing their name. A key with no user
    (the master key) leaves the naming to the request, as ``member_of`` does."""
    claimed = member_of(data, user_api_key_dict, headers)
    owner = key_user(data, user_api_key_dict)
    if owner is None or claimed in (None, owner):
        return claimed if owner is None else owner
    raise CurfewRefused(
        403,
        "forbidden",
        f"this LiteLLM key is {owner!r}'s, so it asks for them alone, not {claimed[:40]!r}",
        claimed[:40],
    )


def _member_from_key_env() -> bool:
    """``CURFEW_MEMBER_FROM_KEY``: off unless it says on (``1``, ``true``, ``yes``, ``on``)."""
    value = os.environ.get("CURFEW_MEMBER_FROM_KEY", "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"CURFEW_MEMBER_FROM_KEY must be 1 or 0, not {value!r}")


def refused_message(refused: CurfewRefused, *, team_key: bool) -> str:
    """What the client of a call the server refused is told: the server's
    words, and with a team key how to name a member."""
    said = f"curfew refused this call: {refused.detail}"
    if not team_key or refused.status == 403:
        return said
    return (
        f"{said}. This proxy asks Curfew with a team key: name a member of the team in "
        "the X-Curfew-User header (Claude Code: ANTHROPIC_CUSTOM_HEADERS="
        '"X-Curfew-User: <username>"), or the body\'s user field'
    )


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
    if kind == "gemini":
        config = data.get(_gemini_config_key(data))
        if isinstance(config, Mapping):
            return _positive(config.get(gemini_shapes.BUDGET_KEY, config.get("max_output_tokens")))
    return None


#: Gemini's fields that LiteLLM also takes in snake case (the google-genai SDK's
#: names; its config mapper reads both): the clamp acts on the camel-case name.
_GEMINI_SNAKE = {
    "max_output_tokens": gemini_shapes.BUDGET_KEY,
    "thinking_config": gemini_shapes.THINKING_CONFIG,
}
_THINKING_SNAKE = {
    "thinking_budget": gemini_shapes.THINKING_BUDGET_KEY,
    "thinking_level": gemini_shapes.THINKING_LEVEL_KEY,
}


def _gemini_config_key(data: Mapping[str, Any]) -> str:
    """Where LiteLLM reads a Gemini call's generation settings: ``config``
    when the call has one (the proxy renames ``generationConfig`` to it only
    when it has not, and the SDK's ``config`` wins over ``generationConfig``)."""
    return "config" if data.get("config") is not None else gemini_shapes.GENERATION_CONFIG


def _camel(config: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """``config`` with its snake-case ``names`` in camel case (the camel-case
    one wins when both are sent: one value, so the clamp has one to clamp)."""
    out = dict(config)
    for snake, camel in names.items():
        if snake in out:
            value = out.pop(snake)
            out.setdefault(camel, value)
    return out


def gemini_apply_verdict(data: Mapping[str, Any], verdict: CurfewVerdict) -> dict[str, Any]:
    """A Gemini call's ``data`` as the verdict lets it go upstream, by
    ``gemini_shapes.apply_verdict`` (Curfew's Gemini door's rule), on the
    fields LiteLLM forwards: the generation settings where it reads them
    (``config`` or ``generationConfig``) and the ``systemInstruction`` it
    sends (``systemInstruction``, else ``system_instruction``)."""
    config_key = _gemini_config_key(data)
    system_key = (
        "system_instruction"
        if not data.get("systemInstruction") and data.get("system_instruction")
        else "systemInstruction"
    )
    body: dict[str, Any] = {}
    config = data.get(config_key)
    if isinstance(config, Mapping):
        config = _camel(config, _GEMINI_SNAKE)
        thinking = config.get(gemini_shapes.THINKING_CONFIG)
        if isinstance(thinking, Mapping):
            config[gemini_shapes.THINKING_CONFIG] = _camel(thinking, _THINKING_SNAKE)
        body[gemini_shapes.GENERATION_CONFIG] = config
    if data.get(system_key):
        body["systemInstruction"] = data[system_key]
    for key in gemini_shapes.TOOL_KEYS:
        if key in data:
            body[key] = data[key]
    applied = gemini_shapes.apply_verdict(body, verdict)
    out = dict(data)
    if gemini_shapes.GENERATION_CONFIG in applied:
        out[config_key] = applied[gemini_shapes.GENERATION_CONFIG]
    if "systemInstruction" in applied:
        out[system_key] = applied["systemInstruction"]
    if verdict.tools == "deny":
        for key in (*gemini_shapes.TOOL_KEYS, "tool_config"):
            out.pop(key, None)
    return out


def apply_verdict(kind: Kind, data: Mapping[str, Any], verdict: CurfewVerdict) -> dict[str, Any]:
    """``data`` as the verdict lets it go upstream, by the call type's shape module."""
    if kind == "responses":
        return responses_shapes.apply_verdict(data, verdict)
    if kind == "anthropic":
        return anthropic_shapes.apply_verdict(data, verdict)
    if kind == "completions":
        return completions_shapes.apply_verdict(data, verdict)
    if kind == "gemini":
        return gemini_apply_verdict(data, verdict)
    return openai_shapes.apply_verdict(data, verdict)


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
        member_from_key: bool | None = None,
    ) -> None:
        super().__init__()
        self._client = client
        self._client_factory = client_factory
        #: A virtual key's user is the member, whatever the request names
        #: (``bound_member``); ``None``: ``CURFEW_MEMBER_FROM_KEY`` decides.
        self._member_from_key = member_from_key
        #: Each checked request's state by the identity of its ``data`` (held,
        #: so no other request can have that identity), for the one hook
        #: LiteLLM hands no logging object: an error answer's headers (its
        #: ``post_call_failure_hook`` drops ``litellm_logging_obj`` from the
        #: request first). Dropped when the answer's headers are written.
        self._open: OrderedDict[int, tuple[dict[str, Any], _Call]] = OrderedDict()
        self._logged: set[str] = set()
        _quiet_refusals()

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

    async def _verdict(
        self, kind: Kind, data: Mapping[str, Any], user_api_key_dict: Any = None
    ) -> CurfewVerdict:
        headers = _request_headers(data)
        scope = scope_from_headers(headers)
        client = self.client
        return await client.verdict(
            session_id=scope.session_id,
            purpose=scope.purpose,
            subagent=scope.subagent,
            max_tokens=requested_budget(kind, data),
            user=checked_member(self._member(data, user_api_key_dict, headers))
            if client.team_key
            else None,
        )

    def _member(
        self, data: Mapping[str, Any], user_api_key_dict: Any, headers: Mapping[str, str]
    ) -> str | None:
        if self._member_from_key is None:
            self._member_from_key = _member_from_key_env()
        if self._member_from_key:
            return bound_member(data, user_api_key_dict, headers)
        return member_of(data, user_api_key_dict, headers)

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
        # The call's state, on LiteLLM's logging object of this call (set
        # before the pre-call hooks: ``common_request_processing.py``).
        call = _Call()
        details = _details(data)
        if details is not None:
            details[CALL_STATE] = call
        answered = data
        try:
            try:
                verdict = await self._verdict(kind, data, user_api_key_dict)
            except ScopeHeaderError as exc:  # the client's mistake, said as Curfew's proxy says it
                raise HTTPException(status_code=400, detail={"error": str(exc)}) from exc
            except CurfewRefused as exc:  # this call's own refusal: its answer, never an outage
                call.labels = {STATE_HEADER: UNKNOWN_STATE, ACTION_HEADER: NO_ACTION}
                detail = {"error": refused_message(exc, team_key=self.client.team_key)}
                raise HTTPException(status_code=exc.status, detail=detail) from exc
            except CurfewUnavailable as exc:  # policy "raise": the operator asked for an error
                raise HTTPException(status_code=503, detail={"error": str(exc)}) from exc
            except Exception as exc:  # the hook must never break the proxy: policy answers
                verdict = self._failed(exc)
            stream = str(call_type) in GEMINI_STREAMS
            try:
                answered = self._act(kind, data, verdict, call, stream=stream)
            except (HTTPException, CurfewRefusal):  # answers, not failures of the hook
                raise
            except Exception as exc:  # e.g. a shape module missing: policy answers
                answered = self._act(kind, data, self._failed(exc), call, stream=stream)
            return answered
        finally:
            # The request LiteLLM goes on with (this one, or the clamped copy):
            # its error answer's headers are asked for with it alone.
            self._remember(self._open, id(answered), (answered, call))

    def _act(
        self,
        kind: Kind,
        data: dict[str, Any],
        verdict: CurfewVerdict,
        call: _Call,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        # Anew: a first try that failed half-way (then answered by policy) leaves nothing.
        call.pending = call.stream = None
        call.canned = False
        # ``unchecked`` when the policy answered without a verdict (fail_open passing).
        call.labels = {STATE_HEADER: verdict.checked_state, ACTION_HEADER: verdict.action}
        if verdict.short_circuit:
            text = verdict.reply if verdict.reply is not None else "。"
            data = self._short_circuit(kind, data, verdict, text, call, stream=stream)
            call.canned = True
            return data
        if verdict.action == "clamp" and kind != "embeddings":
            # An embedding has no reply to clamp and no system prompt: it passes.
            return apply_verdict(kind, data, verdict)
        return data

    def _short_circuit(
        self,
        kind: Kind,
        data: dict[str, Any],
        verdict: CurfewVerdict,
        text: str,
        call: _Call,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        if kind == "gemini" and stream:
            return self._gemini_stream(data, verdict, text, call)
        if kind == "embeddings":
            now = datetime.now(UTC)
            body, headers = openai_shapes.embeddings_refusal(
                verdict.state, openai_shapes.retry_after_seconds(verdict.valid_until, now)
            )
            raise CurfewRefusal(
                openai_shapes.EMBEDDINGS_REFUSAL_STATUS,
                body,
                {**headers, STATE_HEADER: verdict.checked_state, ACTION_HEADER: verdict.action},
            )
        # The request as the client sent it: the answer is shaped by it (stream,
        # n, response_format, text.format, the Responses settings it echoes);
        # a Gemini call's by its call (``generateContent``: one JSON object).
        shape: shapes.Shape | shapes.ShapeModule = (
            gemini_shapes.GeminiCall(str(data.get("model") or ""))
            if kind == "gemini"
            else ANSWER_SHAPES[kind]
        )
        call.pending = _Pending(shape, _request_fields(data), text)
        if isinstance(shape, gemini_shapes.GeminiCall):
            _give_gemini_logging_its_response(data, shape, text)
        # LiteLLM's string mock guarantees no upstream request; its answer is
        # replaced by Curfew's after the call. Asked as a plain call, because
        # only a plain answer passes through the success hook (and LiteLLM
        # then never logs a "stream" that never comes).
        data["mock_response"] = text
        data["stream"] = False
        data.pop("stream_options", None)
        return data

    def _gemini_stream(
        self, data: dict[str, Any], verdict: CurfewVerdict, text: str, call: _Call
    ) -> dict[str, Any]:
        """An off-duty Gemini stream: LiteLLM's stream route has no mock
        (``mock_response`` would still call upstream), so the call is sent
        nowhere and answered by its own transport
        (``async_pre_call_deployment_hook``) with Curfew's Gemini stream.
        Always an event stream: LiteLLM asks Google for one (``alt=sse``)
        and relays it as one, whatever the client's ``alt``. The answer is kept
        with the call (``_Call.stream``) and found there at each send: LiteLLM's
        router retries a call through the same deployment hook, with the same
        logging object, and each attempt must be answered here too. A call
        with no logging object could not be found at the send: refused."""
        if ANSWERING_CLIENT is None:
            raise self._gemini_stream_refusal(verdict, NO_TRANSPORT)
        if _details(data) is None:
            raise self._gemini_stream_refusal(verdict, NO_LOGGING_OBJECT)
        shape = gemini_shapes.GeminiCall(str(data.get("model") or ""), stream=True, alt_sse=True)
        payload, content_type = shape.short_circuit_body(data, text)
        call.stream = _CannedStream(payload, content_type)
        data["api_base"] = NOWHERE
        data["api_key"] = NO_KEY
        return data

    @staticmethod
    def _gemini_stream_refusal(verdict: CurfewVerdict, why: str) -> CurfewRefusal:
        """An off-duty Gemini stream's answer when this LiteLLM cannot be
        handed an in-process upstream (``why``: its ``AsyncHTTPHandler`` takes
        no transport, or the call has no logging object to find its answer
        on at the send): refused in Gemini's error shape, never passed."""
        now = datetime.now(UTC)
        _, headers = openai_shapes.embeddings_refusal(
            verdict.state, openai_shapes.retry_after_seconds(verdict.valid_until, now)
        )
        status = openai_shapes.EMBEDDINGS_REFUSAL_STATUS
        message = (
            f"the curfew is {verdict.state}: this LiteLLM proxy answers no Gemini stream "
            f"while it lasts ({why}, so streamGenerateContent cannot be answered without "
            "calling upstream); call "
            "generateContent for the curfew's answer, or retry after the Retry-After seconds"
        )
        return CurfewRefusal(
            status,
            gemini_shapes.error_body(status, message),
            {**headers, STATE_HEADER: verdict.checked_state, ACTION_HEADER: verdict.action},
        )

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """An off-duty Gemini stream, just before LiteLLM sends it: its HTTP
        client is one whose transport answers with Curfew's stream, its
        address still resolves nowhere, and it is a ``gemini/`` call, which
        loads no credentials (a ``vertex_ai/`` deployment's would ask Google
        for a token before the send). Any other call: untouched (its state is
        found on its own logging object, never by its call id)."""
        call = _state_in(_details(kwargs))
        canned = call.stream if call is not None else None
        if canned is None:
            return None
        return {
            **kwargs,
            # A ``gemini/`` call, whatever the deployment: a ``vertex_ai/``
            # one would fetch Google's OAuth token before the send.
            "model": f"{ANSWERING_PROVIDER}/{_model_name(kwargs.get('model'))}",
            "custom_llm_provider": ANSWERING_PROVIDER,
            "client": answering_client(canned.payload, canned.content_type),
            "api_base": NOWHERE,
            "api_key": NO_KEY,
        }

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        """A short-circuit's answer: Curfew's proxy's own bytes for the request,
        JSON or the protocol's event stream as the client asked. Once: the
        call's answer is taken. A call the pre-call hook did not answer keeps
        LiteLLM's answer, whatever call id it shares with one it did."""
        call = self._call_of(data)
        pending = call.pending if call is not None else None
        if call is None or pending is None:
            return response
        call.pending = None
        try:
            shape = shapes.module(pending.shape)
            payload, content_type = shape.short_circuit_body(pending.body, pending.text)
        except Exception:  # never break the proxy: LiteLLM's own mock answer stands
            log.exception("curfew LiteLLM hook could not write the answer")
            return response
        # A response object of our own is sent as it is, so it carries our headers itself.
        headers = dict(call.labels or {})
        call_id = str(data.get("litellm_call_id") or "")
        if call_id:
            headers["x-litellm-call-id"] = call_id
        if not content_type.startswith("text/event-stream"):
            return Response(payload, media_type=content_type, headers=headers)

        async def stream() -> AsyncIterator[bytes]:
            yield payload

        return StreamingResponse(stream(), media_type=content_type, headers=headers)

    async def async_post_call_response_headers_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
        request_headers: dict[str, str] | None = None,
        litellm_call_info: dict[str, object] | None = None,
    ) -> dict[str, str] | None:
        """``X-Curfew-State`` and ``X-Curfew-Action`` on every answer (errors too):
        the call's own labels; none for a call the hook did not check."""
        call = self._call_of(data)
        self._forget(data)  # its answer is written: the request need not be held
        labels = call.labels if call is not None else None
        return dict(labels) if labels else None

    async def async_logging_hook(
        self, kwargs: dict[str, Any], result: Any, call_type: str
    ) -> tuple[dict[str, Any], Any]:
        """A call answered here cost nothing: LiteLLM's ledger (the payload its
        spend tracking reads) says zero (``_zero_if_canned``)."""
        return _zero_if_canned(kwargs), result

    def logging_hook(
        self, kwargs: dict[str, Any], result: Any, call_type: str
    ) -> tuple[dict[str, Any], Any]:
        """The same for LiteLLM's sync loggers (``Logging.success_handler``
        runs this before its built-in string callbacks, such as langfuse or
        s3, read the call's details): zero for a call answered here."""
        return _zero_if_canned(kwargs), result

    # -- internals ------------------------------------------------------------------

    def _call_of(self, data: Mapping[str, Any]) -> _Call | None:
        """The state of the call whose request is ``data``: on its logging
        object; else (LiteLLM dropped it, as its failure path does) by the
        request itself, the very object the pre-call hook handed back."""
        call = _state_in(_details(data))
        if call is not None:
            return call
        held = self._open.get(id(data))
        return held[1] if held is not None and held[0] is data else None

    def _forget(self, data: Mapping[str, Any]) -> None:
        held = self._open.get(id(data))
        if held is not None and held[0] is data:
            del self._open[id(data)]

    @staticmethod
    def _remember(store: OrderedDict[Any, Any], key: Any, value: Any) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > MAX_REMEMBERED:
            store.popitem(last=False)


def _model_name(model: Any) -> str:
    """A deployment's model without its provider or path
    (``vertex_ai/gemini-2.5-flash``, ``vertex_ai/projects/…/models/gemini-2.5-flash``:
    ``gemini-2.5-flash``), for an off-duty stream sent as a ``gemini/`` call."""
    name = str(model or "").rstrip("/").rsplit("/", 1)[-1]
    return name or "gemini"


def _zero_if_canned(details: dict[str, Any]) -> dict[str, Any]:
    """A call answered here cost nothing: its logged details say zero cost and
    zero tokens, whatever usage LiteLLM's mock path invented (the Anthropic
    string mock claims thousands of tokens). ``details`` is the call's
    ``model_call_details`` (or LiteLLM's copy of it for its loggers): only the
    hook's own state there says so; any other call keeps the cost LiteLLM
    found."""
    call = _state_in(details)
    if call is not None and call.canned:
        details["response_cost"] = 0.0
        payload = details.get("standard_logging_object")
        if isinstance(payload, dict):
            payload.update(response_cost=0.0, prompt_tokens=0, completion_tokens=0, total_tokens=0)
    return details


def _request_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the client asked it, for its answer to be shaped by:
    without LiteLLM's logging object (which holds the call's state, so a copy
    of it there would hold itself)."""
    return {key: value for key, value in data.items() if key != "litellm_logging_obj"}


def _give_gemini_logging_its_response(
    data: Mapping[str, Any], shape: gemini_shapes.GeminiCall, text: str
) -> None:
    """What LiteLLM's success logging of a ``generate_content`` call reads.

    LiteLLM (``Logging._handle_non_streaming_google_genai_generate_content_response_logging``)
    logs such a call from ``model_call_details["httpx_response"]``, which only its
    Gemini transformation sets on a real answer; its string mock sets nothing, so
    every mocked call logged "httpx_response is None" as an ERROR and recorded no
    entry. Curfew's own answer is handed to it there, as the transformation would
    hand Google's: the call is logged as a success with zero usage."""
    logging_obj = data.get("litellm_logging_obj")
    details = getattr(logging_obj, "model_call_details", None)
    if not isinstance(details, dict):
        return
    try:
        payload, content_type = shape.short_circuit_body(data, text)
        details["httpx_response"] = httpx.Response(
            200, content=payload, headers={"content-type": content_type}
        )
    except Exception:  # the answer stands; only LiteLLM's log of it is lost, as before
        log.exception("curfew LiteLLM hook could not hand LiteLLM's logging its answer")


#: The instance ``config.yaml`` names: ``callbacks: curfew_client.litellm_hook.curfew``.
curfew = CurfewHook()
