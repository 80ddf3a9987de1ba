"""The one sequence every proxy door follows, whatever protocol it speaks.

The edge (``edge.app``) has checked the method and the token, counted the
rate and read the body. A model call (chat completions, Responses, legacy
completions, embeddings, Anthropic messages) is then read (:func:`read_call`:
the scope headers, the JSON body; a bad one is a 400 in the door's shape,
labelled with the verdict) and acted on (:func:`act`): answered here off duty,
clamped and forwarded while winding, forwarded byte for byte on duty.

A call that is not a model call (listing models, a stored response, counting
tokens) is only judged for its labels and forwarded (:func:`judged_caller`).

What differs between protocols (the error shape, the upstream, the budget
and usage names) is the door's dialect (``edge.dialects``) and the
:class:`ModelEndpoint`'s wire protocol (``protocols``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from curfew_client.scope import (
    PURPOSE_HEADER,
    SESSION_HEADER,
    SUBAGENT_HEADER,
    Scope,
    ScopeHeaderError,
    scope_from_headers,
)
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

from curfew_core.edge.dialects import Dialect, labelled
from curfew_core.edge.request import EdgeRequest
from curfew_core.edge.scope import ScopeHeaders
from curfew_core.engine import Action, RequestContext, Verdict
from curfew_core.protocols.base import WireProtocol
from curfew_core.protocols.openai import OPENAI
from curfew_core.proxy import usage
from curfew_core.proxy.forward import (
    NOT_ALLOWED_CODE,
    NOT_ALLOWED_MESSAGE,
    credentials_allowed,
    forward,
    own_credential,
)
from curfew_core.proxy.judge import Judged, judge
from curfew_core.schema import bodies


class Shapes(Protocol):
    """A route's two answers in its protocol: a shape module of
    ``curfew_client``'s (``responses_shapes``, ``anthropic_shapes``) or a
    call's own (``gemini_shapes.GeminiCall``), gateways' very rules."""

    def short_circuit_body(self, body: Mapping[str, Any], text: str, /) -> tuple[bytes, str]:
        """The canned answer to ``body``: ``(payload, content type)``."""
        ...

    def apply_verdict(self, body: Mapping[str, Any], verdict: Verdict, /) -> dict[str, Any]:
        """The clamp: the body to send upstream (``body`` is not modified)."""
        ...


#: ``(request headers, body) -> the purpose of a helper call it recognises``.
PurposeOf = Callable[[Any, Mapping[str, Any]], "str | None"]


class BadRequest(ValueError):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def parse_scope(headers: Mapping[str, str]) -> Scope:
    """Who is asking, from ``X-Curfew-Session`` / ``-Purpose`` / ``-Subagent``:
    the client's own reading (``curfew_client.scope``), so the proxy and every
    gateway take the same headers; a bad one is a ``BadRequest`` naming it."""
    if isinstance(headers, ScopeHeaders):
        if not headers.any_named(b"x-curfew-"):
            # Most calls name no scope: one look at the names instead of three lookups.
            return NO_SCOPE
        headers = _as_text(headers)
    try:
        return scope_from_headers(headers)
    except ScopeHeaderError as exc:
        raise BadRequest(str(exc), exc.header) from None


def _as_text(headers: ScopeHeaders) -> dict[str, str]:
    """The scope headers as the text their client wrote: UTF-8, as the verdict
    API's JSON is, so a session id is the same id at both doors and its
    length counts characters at both (issue 41: the proxy read the header's
    bytes as latin-1, refused 200 emoji the API took, and never matched an
    exempt session written with one)."""
    found: dict[str, str] = {}
    for name in (SESSION_HEADER, PURPOSE_HEADER, SUBAGENT_HEADER):
        raw = headers.raw(name.lower().encode())
        if raw is None:
            continue
        try:
            found[name] = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest(f"{name} must be UTF-8 text", name) from None
    return found


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """What a model-call route does, in its protocol."""

    #: Its name in the decision ledger.
    name: str
    #: What its body should be (a 400 names it).
    what: str
    #: Where it goes upstream (``upstream``'s paths).
    path: tuple[str, ...]
    #: The canned answer in its protocol, and the clamp.
    shapes: Shapes
    #: Its wire protocol: the upstream, the budget's and usage's names.
    protocol: WireProtocol = OPENAI
    #: Recognises a helper call's purpose when the caller named none
    #: (Claude Code's titles and summaries on the Messages door).
    purpose_of: PurposeOf | None = None


#: A call without scope headers.
NO_SCOPE = Scope(None, None, False)


@dataclass(frozen=True, slots=True)
class Call:
    """A model call: the exact bytes, their JSON, the verdict, who asked."""

    judged: Judged
    raw: bytes
    body: dict[str, Any]
    scope: Scope = NO_SCOPE

    @property
    def verdict(self) -> Verdict:
        return self.judged.verdict


def context_of(scope: Scope) -> RequestContext:
    # The budget is left out on purpose: the verdict then carries the curve's
    # ceiling, and each door's apply_verdict clamps every budget the client
    # named against it on its own (a client may send two names with two values).
    return RequestContext(
        session_id=scope.session_id, purpose=scope.purpose, subagent=scope.subagent
    )


def refused(
    dialect: Dialect,
    verdict: Verdict | None,
    status: int,
    error: Exception,
    *,
    code: str,
    param: str | None = None,
) -> HttpResponseBase:
    """A request the door cannot act on: the error, labelled, and ``none`` done."""
    response = labelled(dialect.error(status, str(error), code=code, param=param), verdict)
    response["X-Curfew-Action"] = "none"
    return response


def recognised(
    request: EdgeRequest, scope: Scope, body: Mapping[str, Any], purpose_of: PurposeOf | None
) -> Scope:
    """``scope``, with the purpose of a helper call the endpoint recognises
    (``purpose_of``) when the caller named none: Claude Code's titles,
    summaries and compaction on the Messages door (``helper_calls``), as
    OpenCode's and aider's snippets label theirs with ``X-Curfew-Purpose``."""
    if scope.purpose is not None or purpose_of is None:
        return scope
    purpose = purpose_of(request.headers, body)
    if purpose is None:
        return scope
    return Scope(scope.session_id, purpose, scope.subagent)


def read_call(
    request: EdgeRequest, what: str, purpose_of: PurposeOf | None = None
) -> Call | HttpResponseBase:
    """The call, or the 4xx that ends it: a 400 naming what the body should
    be (a bad scope header is judged without a scope, then refused), or a
    403 for a credential of the caller's own the operator does not allow
    (before anything else is done, the short-circuit included)."""
    problem: BadRequest | None = None
    scope = NO_SCOPE
    body: dict[str, Any] = {}
    try:
        scope = parse_scope(request.headers)
        body = bodies.json_object(request.body)
    except BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = BadRequest(f"{exc}; send {what}")
    else:
        scope = recognised(request, scope, body, purpose_of)
    judged = judge(request.the_caller(), context_of(scope))
    if problem is not None:
        return refused(
            request.door.dialect,
            judged.verdict,
            400,
            problem,
            code="invalid_request",
            param=problem.param,
        )
    if own_credential(request) is not None and not credentials_allowed():
        return refused(
            request.door.dialect,
            judged.verdict,
            403,
            PermissionError(NOT_ALLOWED_MESSAGE),
            code=NOT_ALLOWED_CODE,
        )
    return Call(judged, request.body, body, scope)


def judged_caller(request: EdgeRequest) -> Judged:
    """The caller's verdict, for a call that is not a model call (forwarded
    whatever the hour, labelled): a bad scope header is ignored."""
    try:
        scope = parse_scope(request.headers)
    except BadRequest:
        scope = NO_SCOPE
    return judge(request.the_caller(), context_of(scope))


def passed(response: HttpResponseBase, verdict: Verdict) -> HttpResponseBase:
    """A forwarded non-model call: labelled with the state, and ``pass`` done."""
    response = labelled(response, verdict)
    response["X-Curfew-Action"] = Action.PASS.value
    return response


def recording(
    call: Call, name: str, *, action: str | None = None, protocol: WireProtocol = OPENAI
) -> usage.Recording:
    """The call's one ledger entry, recorded by ``act`` (or a door's own
    answer) once the upstream's usage is known (in ``protocol``'s names)."""
    return usage.Recording(
        call.verdict,
        origin=name,
        at=timezone.now(),
        user_id=call.judged.user_id,
        token_id=call.judged.token_id,
        session=call.scope.session_id,
        purpose=call.scope.purpose,
        budget_before=usage.asked_budget(call.body, protocol.budgets),
        action=action,
        usage=protocol.usage,
    )


def short_circuits(verdict: Verdict) -> bool:
    """Whether the curfew answers the call itself (nothing goes upstream)."""
    return verdict.action is Action.SHORT_CIRCUIT and verdict.reply is not None


def answered_here(call: Call, endpoint: ModelEndpoint) -> HttpResponseBase | None:
    """The short-circuit, when the verdict is one: the canned answer, its
    ledger entry recorded (zero usage); ``None``: the call goes upstream."""
    verdict = call.verdict
    if not short_circuits(verdict) or verdict.reply is None:
        return None
    payload, content_type = endpoint.shapes.short_circuit_body(call.body, verdict.reply)
    answer = HttpResponse(payload, content_type=content_type)
    answer["Cache-Control"] = "no-cache"
    recording(call, endpoint.name, protocol=endpoint.protocol)(0, 0)
    return labelled(answer, verdict)


async def act(call: Call, endpoint: ModelEndpoint, request: EdgeRequest) -> HttpResponseBase:
    """Short-circuit (:func:`answered_here`), clamp (``endpoint.shapes``) and
    forward, or forward the very bytes (with ``request``'s headers and query,
    as ``passing`` lets them through, either way).

    Each call leaves one entry in the decision ledger (``endpoint.name``
    names it): a short-circuit with zero usage, a forwarded call with the
    upstream's usage when its answer is over (buffered, never a write on this
    request)."""
    answer = answered_here(call, endpoint)
    if answer is not None:
        return answer
    entry = recording(call, endpoint.name, protocol=endpoint.protocol)
    verdict = call.verdict
    if verdict.action is Action.PASS:
        # Untouched means the very bytes the client sent.
        content = call.raw
    else:
        content = json.dumps(
            endpoint.shapes.apply_verdict(call.body, verdict), ensure_ascii=False
        ).encode()
    response = await forward(
        request, call.judged.token_id, "POST", endpoint.path, content, protocol=endpoint.protocol
    )
    return labelled(entry.after(response), verdict)


async def model_call(request: EdgeRequest, endpoint: ModelEndpoint) -> HttpResponseBase:
    """A model route's whole answer: :func:`read_call`, then :func:`act`."""
    call = read_call(request, endpoint.what, endpoint.purpose_of)
    if not isinstance(call, Call):
        return call
    return await act(call, endpoint, request)
