"""What every model-call door past chat completions shares: read the body and
the scope, judge, and act on the verdict in the door's own shapes.

The steps and their order are the chat door's (``views.chat_completions``):
a bad body is still judged first, so a wrong token is a 401 before anything
else, and a bad body then a 400, both in OpenAI's shape and labelled.

The chat door's helpers are used through the ``views`` module (not imported by
name), so a test that patches ``views.judge`` patches every door.
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
from curfew_core.proxy import bodies, views

#: ``(request body, canned text) -> (payload, content type)``.
ShortCircuit = Callable[[Mapping[str, Any], str], tuple[bytes, str]]
#: ``(request body, verdict) -> the body to send upstream``.
Apply = Callable[[Mapping[str, Any], Verdict], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Call:
    """An authenticated model call: the exact bytes, their JSON, the verdict."""

    judged: views.Judged
    raw: bytes
    body: dict[str, Any]

    @property
    def verdict(self) -> Verdict:
        return self.judged.verdict


async def read_call(request: HttpRequest, what: str) -> Call | HttpResponseBase:
    """The call, or the answer that ends it (401, or 400 naming ``what`` the
    body should have been)."""
    raw_token = bearer(request)
    problem: views.BadRequest | None = None
    raw = b""
    body: dict[str, Any] = {}
    scope = views.Scope(None, None, False)
    try:
        scope = views.parse_scope(request)
        raw = views._raw_body(request)
        body = bodies.json_object(raw)
    except views.BadRequest as exc:
        problem = exc
    except bodies.BadBody as exc:
        problem = views.BadRequest(f"{exc}; send {what}")
    context = RequestContext(
        session_id=scope.session_id, purpose=scope.purpose, subagent=scope.subagent
    )
    judged = await views.judge(raw_token, context, throttle.client_address(request))
    if judged is None:
        return views.unauthorized(raw_token)
    if problem is not None:
        error = views.openai_error(400, str(problem), code="invalid_request", param=problem.param)
        response = views.labelled(error, judged.verdict)
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
    return views.labelled(answer, verdict)


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
    return views.labelled(
        await views._forward(call.judged.token_id, "POST", path, content), verdict
    )
