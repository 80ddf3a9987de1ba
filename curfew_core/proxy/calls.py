"""The one sequence every proxy door follows, whatever protocol it speaks.

A model call (chat completions, Responses, legacy completions, embeddings,
Anthropic messages): read the scope and body, judge, then act on the verdict in
the door's own shapes (:func:`read_call`, :func:`act`). A bad body is still
judged first, so a wrong token is a 401 before anything else, and a bad body
then a 400, both in the door's shape and labelled.

A call that is not a model call (listing models, a stored response, counting
tokens) is only authenticated and forwarded (:func:`read_caller`).

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
from curfew_core.http_headers import bearer
from curfew_core.proxy import bodies, upstream, usage, views

#: ``(request body, canned text) -> (payload, content type)``.
ShortCircuit = Callable[[Mapping[str, Any], str], tuple[bytes, str]]
#: ``(request body, verdict) -> the body to send upstream``.
Apply = Callable[[Mapping[str, Any], Verdict], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Dialect:
    """What a door's protocol decides: where its client puts the token, how its
    errors look (401 included), and which upstream speaks it."""

    credential: Callable[[HttpRequest], str | None]
    error: views.ErrorAnswer
    unauthorized: Callable[[str | None], HttpResponseBase]
    provider: upstream.Provider


OPENAI = Dialect(
    credential=bearer,
    error=views.openai_error,
    unauthorized=lambda raw_token: views.unauthorized(raw_token),
    provider=upstream.OPENAI,
)


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


def _context(scope: Scope) -> RequestContext:
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


async def read_call(
    request: HttpRequest, what: str, dialect: Dialect = OPENAI
) -> Call | HttpResponseBase:
    """The call, or the answer that ends it (401, or 400 naming ``what`` the
    body should have been)."""
    raw_token = dialect.credential(request)
    problem: views.BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = Scope(None, None, False)
    try:
        scope = views.parse_scope(request)
        raw = views._raw_body(request)
        body = bodies.json_object(raw)
    except views.BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = views.BadRequest(f"{exc}; send {what}")
    judged = await views.judge(raw_token, _context(scope), throttle.client_address(request))
    if judged is None:
        return dialect.unauthorized(raw_token)
    if problem is not None:
        return refused(
            dialect, judged.verdict, 400, problem, code="invalid_request", param=problem.param
        )
    return Call(judged, raw, body, scope)


async def read_caller(
    request: HttpRequest, dialect: Dialect = OPENAI
) -> views.Judged | HttpResponseBase:
    """Who is calling, for a call that is not a model call (forwarded whatever
    the hour): the token must be live; a bad scope header is ignored."""
    raw_token = dialect.credential(request)
    try:
        scope = views.parse_scope(request)
    except views.BadRequest:
        scope = Scope(None, None, False)
    judged = await views.judge(raw_token, _context(scope), throttle.client_address(request))
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
        token_id=call.judged.token_id,
        session=call.scope.session_id,
        purpose=call.scope.purpose,
        budget_before=usage.asked_budget(call.body),
        action=action,
    )


def canned(call: Call, short_circuit: ShortCircuit) -> HttpResponseBase | None:
    """The short-circuit answer when the verdict is one (nothing goes upstream)."""
    verdict = call.verdict
    if verdict.action is not Action.SHORT_CIRCUIT or verdict.reply is None:
        return None
    payload, content_type = short_circuit(call.body, verdict.reply)
    answer = HttpResponse(payload, content_type=content_type)
    answer["Cache-Control"] = "no-cache"
    return views.labelled(answer, verdict)


async def act(
    call: Call,
    path: tuple[str, ...],
    short_circuit: ShortCircuit,
    apply: Apply,
    *,
    door: str,
    dialect: Dialect = OPENAI,
    headers: Mapping[str, str] | None = None,
) -> HttpResponseBase:
    """Short-circuit, clamp (``apply``) and forward, or forward the very bytes.

    Each call leaves one entry in the decision ledger (``door`` names it): a
    short-circuit with zero usage, a forwarded call with the upstream's usage
    when its answer is over (buffered, never a write on this request)."""
    entry = recording(call, door)
    answer = canned(call, short_circuit)
    if answer is not None:
        entry(0, 0)
        return answer
    verdict = call.verdict
    if verdict.action is Action.PASS:
        # Untouched means the very bytes the client sent.
        content = call.raw
    else:
        content = json.dumps(apply(call.body, verdict), ensure_ascii=False).encode()
    response = await views._forward(
        call.judged.token_id, "POST", path, content, provider=dialect.provider, headers=headers
    )
    return views.labelled(entry.after(response), verdict)
