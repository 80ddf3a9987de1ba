"""The one sequence every proxy door follows, whatever protocol it speaks.

A model call (chat completions, Responses, legacy completions, embeddings,
Anthropic messages): read the scope and body, judge, then act on the verdict in
the door's own shapes (:func:`read_call`, :func:`act`). A bad body is still
judged first, so a wrong token is a 401 before anything else, and a bad body
then a 400, both in the door's shape and labelled.

A call that is not a model call (listing models, a stored response, counting
tokens) is only authenticated and forwarded (:func:`read_caller`).

A model door is declared once (:class:`ModelDoor`) and served by two routes
that share every step here: Django's view (:func:`read_call`, then
:func:`act`), and the lean route in front of Django (``proxy.lean``), which
answers a warm short-circuit on the event loop with the same steps
(:func:`arrived`, :func:`called`, :func:`answered_here`) and hands anything
else to the view.

What differs between protocols (where the token is, the error shape, the
upstream provider) is one :class:`Dialect`. The helpers are used through the
``views`` module (not imported by name), so a test that patches ``views.judge``
patches every door.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from curfew_client.scope import Scope
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

from curfew_core import throttle
from curfew_core.engine import Action, RequestContext, Verdict
from curfew_core.hot_path import charge
from curfew_core.http_headers import bearer_in
from curfew_core.proxy import bodies, upstream, usage, views

#: ``(request body, canned text) -> (payload, content type)``.
ShortCircuit = Callable[[Mapping[str, Any], str], tuple[bytes, str]]
#: ``(request body, verdict) -> the body to send upstream``.
Apply = Callable[[Mapping[str, Any], Verdict], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What a door's protocol decides: where its client puts the token, how its
    errors look (401 included), and which upstream speaks it."""

    #: The token in the request's headers (case-insensitive).
    credential: Callable[[Mapping[str, str]], str | None]
    error: views.ErrorAnswer
    unauthorized: Callable[[str | None], HttpResponseBase]
    provider: upstream.Provider


OPENAI = Dialect(
    credential=bearer_in,
    error=views.openai_error,
    unauthorized=lambda raw_token: views.unauthorized(raw_token),
    provider=upstream.OPENAI,
)


@dataclass(frozen=True, slots=True)
class ModelDoor:
    """A model-call door, as both of its routes (Django's view and the lean
    route) serve it."""

    #: Its name in the decision ledger.
    name: str
    #: What its body should be (a 400 names it).
    what: str
    #: Where it goes upstream (``upstream``'s paths).
    path: tuple[str, ...]
    #: The canned answer in its protocol, and the clamp.
    short_circuit: ShortCircuit
    apply: Apply
    dialect: Dialect = OPENAI


#: A call without scope headers.
NO_SCOPE = Scope(None, None, False)


@dataclass(frozen=True, slots=True)
class Call:
    """An authenticated model call: the exact bytes, their JSON, the verdict."""

    judged: views.Judged
    raw: bytes
    body: dict[str, Any]
    #: Who asked (the scope headers), for the decision ledger.
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
    response = views.labelled(dialect.error(status, str(error), code=code, param=param), verdict)
    response["X-Curfew-Action"] = "none"
    return response


@dataclass(frozen=True, slots=True)
class Arrived:
    """A model call as it arrived, before it is judged: the token, who asks,
    the body, and what is wrong with them (answered once the token is known)."""

    raw_token: str | None
    scope: Scope
    raw: bytes
    body: dict[str, Any]
    problem: views.BadRequest | None

    @property
    def context(self) -> RequestContext:
        return context_of(self.scope)


def arrived(
    headers: Mapping[str, str],
    read_body: Callable[[], bytes],
    what: str,
    dialect: Dialect,
    *,
    read_scope: Scope | None = None,
) -> Arrived:
    """Read the call (``headers`` case-insensitive; ``read_body`` may raise
    ``BadRequest``; ``read_scope``: the scope already read from ``headers``);
    nothing is refused yet."""
    problem: views.BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = NO_SCOPE
    try:
        scope = views.parse_scope(headers) if read_scope is None else read_scope
        raw = read_body()
        body = bodies.json_object(raw)
    except views.BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = views.BadRequest(f"{exc}; send {what}")
    return Arrived(dialect.credential(headers), scope, raw, body, problem)


def called(came: Arrived, judged: views.Judged | None, dialect: Dialect) -> Call | HttpResponseBase:
    """The call, or the answer that ends it (401, or 400 naming what the body
    should have been)."""
    if judged is None:
        return dialect.unauthorized(came.raw_token)
    if came.problem is not None:
        return refused(
            dialect,
            judged.verdict,
            400,
            came.problem,
            code="invalid_request",
            param=came.problem.param,
        )
    return Call(judged, came.raw, came.body, came.scope)


async def read_call(
    request: HttpRequest, what: str, dialect: Dialect = OPENAI
) -> Call | HttpResponseBase:
    """The call through Django's view, or the answer that ends it (:func:`called`;
    ``what`` the body should be)."""
    came = arrived(request.headers, lambda: views._raw_body(request), what, dialect)
    ahead = views.judged_ahead(request)
    if ahead is not None:
        # Judged by the lean route from these headers, not yet counted.
        await charge(ahead.identity)
        return called(came, ahead.judged, dialect)
    judged = await views.judge(came.raw_token, came.context, throttle.client_address(request))
    return called(came, judged, dialect)


async def read_caller(
    request: HttpRequest, dialect: Dialect = OPENAI
) -> views.Judged | HttpResponseBase:
    """Who is calling, for a call that is not a model call (forwarded whatever
    the hour): the token must be live; a bad scope header is ignored."""
    raw_token = dialect.credential(request.headers)
    try:
        scope = views.parse_scope(request.headers)
    except views.BadRequest:
        scope = Scope(None, None, False)
    judged = await views.judge(raw_token, context_of(scope), throttle.client_address(request))
    if judged is None:
        return dialect.unauthorized(raw_token)
    return judged


def passed(response: HttpResponseBase, verdict: Verdict) -> HttpResponseBase:
    """A forwarded non-model call: labelled with the state, and ``pass`` done."""
    response = views.labelled(response, verdict)
    response["X-Curfew-Action"] = Action.PASS.value
    return response


def recording(call: Call, door: str, *, action: str | None = None) -> usage.Recording:
    """The call's one ledger entry, recorded by ``act`` (or a door's own
    answer) once the upstream's usage is known."""
    return usage.Recording(
        call.verdict,
        door=door,
        at=timezone.now(),
        user_id=call.judged.user_id,
        token_id=call.judged.token_id,
        session=call.scope.session_id,
        purpose=call.scope.purpose,
        budget_before=usage.asked_budget(call.body),
        action=action,
    )


def short_circuits(verdict: Verdict) -> bool:
    """Whether the curfew answers the call itself (nothing goes upstream)."""
    return verdict.action is Action.SHORT_CIRCUIT and verdict.reply is not None


def canned(call: Call, short_circuit: ShortCircuit) -> HttpResponseBase | None:
    """The short-circuit answer when the verdict is one (nothing goes upstream)."""
    verdict = call.verdict
    if not short_circuits(verdict) or verdict.reply is None:
        return None
    payload, content_type = short_circuit(call.body, verdict.reply)
    answer = HttpResponse(payload, content_type=content_type)
    answer["Cache-Control"] = "no-cache"
    return views.labelled(answer, verdict)


def answered_here(call: Call, door: ModelDoor) -> HttpResponseBase | None:
    """The short-circuit, when the verdict is one: the canned answer, its
    ledger entry recorded (zero usage); ``None``: the call goes upstream."""
    answer = canned(call, door.short_circuit)
    if answer is not None:
        recording(call, door.name)(0, 0)
    return answer


async def act(
    call: Call, door: ModelDoor, *, headers: Mapping[str, str] | None = None
) -> HttpResponseBase:
    """Short-circuit (:func:`answered_here`), clamp (``door.apply``) and
    forward, or forward the very bytes.

    Each call leaves one entry in the decision ledger (``door.name`` names
    it): a short-circuit with zero usage, a forwarded call with the upstream's
    usage when its answer is over (buffered, never a write on this request)."""
    answer = answered_here(call, door)
    if answer is not None:
        return answer
    entry = recording(call, door.name)
    verdict = call.verdict
    if verdict.action is Action.PASS:
        # Untouched means the very bytes the client sent.
        content = call.raw
    else:
        content = json.dumps(door.apply(call.body, verdict), ensure_ascii=False).encode()
    response = await views._forward(
        call.judged.token_id,
        "POST",
        door.path,
        content,
        provider=door.dialect.provider,
        headers=headers,
    )
    return views.labelled(entry.after(response), verdict)
