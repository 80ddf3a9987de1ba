"""What every model-call door past chat completions shares: read the body and
the scope, judge, and act on the verdict in the door's own shapes.

The steps and their order are the chat door's (``views.chat_completions``):
a bad body is still judged first, so a wrong token is a 401 before anything
else, and a bad body then a 400, both in OpenAI's shape and labelled.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from curfew_core import throttle
from curfew_core.engine import Action, RequestContext, Verdict
from curfew_core.http_headers import bearer
from curfew_core.proxy import bodies
from curfew_core.proxy.views import (
    BadRequest,
    Judged,
    Scope,
    _forward,
    _raw_body,
    judge,
    labelled,
    openai_error,
    parse_scope,
    unauthorized,
)

#: ``(request body, canned text) -> (payload, content type)``.
ShortCircuit = Callable[[Mapping[str, Any], str], tuple[bytes, str]]
#: ``(request body, verdict) -> the body to send upstream``.
Apply = Callable[[Mapping[str, Any], Verdict], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Call:
    """An authenticated model call: the exact bytes, their JSON, the verdict."""

    judged: Judged
    raw: bytes
    body: dict[str, Any]

    @property
    def verdict(self) -> Verdict:
        return self.judged.verdict


async def read_call(request: HttpRequest, what: str) -> Call | HttpResponseBase:
    """The call, or the answer that ends it (401, or 400 naming ``what`` the
    body should have been)."""
    raw_token = bearer(request)
    problem: BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = Scope(None, None, False)
    try:
        scope = parse_scope(request)
        raw = _raw_body(request)
        body = bodies.json_object(raw)
    except BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = BadRequest(f"{exc}; send {what}")
    context = RequestContext(
        session_id=scope.session_id, purpose=scope.purpose, subagent=scope.subagent
    )
    judged = await judge(raw_token, context, throttle.client_address(request))
    if judged is None:
        return unauthorized(raw_token)
    if problem is not None:
        error = openai_error(400, str(problem), code="invalid_request", param=problem.param)
        response = labelled(error, judged.verdict)
        response["X-Curfew-Action"] = "none"
        return response
    return Call(judged, raw, body)


def canned(call: Call, short_circuit: ShortCircuit) -> HttpResponseBase | None:
    """The short-circuit answer when the verdict is one (nothing goes upstream)."""
    verdict = call.verdict
    if verdict.action is not Action.SHORT_CIRCUIT or verdict.reply is None:
        return None
    payload, content_type = short_circuit(call.body, verdict.reply)
    answer = HttpResponse(payload, content_type=content_type)
    answer["Cache-Control"] = "no-cache"
    return labelled(answer, verdict)


async def act(
    call: Call, path: tuple[str, ...], short_circuit: ShortCircuit, apply: Apply
) -> HttpResponseBase:
    """Short-circuit, clamp (``apply``) and forward, or forward the very bytes."""
    answer = canned(call, short_circuit)
    if answer is not None:
        return answer
    verdict = call.verdict
    if verdict.action is Action.PASS:
        content = call.raw
    else:
        content = json.dumps(apply(call.body, verdict), ensure_ascii=False).encode()
    return labelled(await _forward(call.judged.token_id, "POST", path, content), verdict)
