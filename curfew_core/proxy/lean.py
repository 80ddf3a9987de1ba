"""The proxy's short-circuit beside Django (issue 13).

Off duty, at peak and at lights-out a model call is answered by the curfew
itself (the canned reply in the client's protocol, zero usage, nothing sent
upstream). Through Django's handler that answer cost several verdicts:
building the request, resolving the URL, the disconnect listener, the
response machinery. :class:`LeanProxy` answers it in front of Django, on the
event loop, with the doors' own steps (``calls``), not a second
implementation:

- the token and scope headers are read by the door's ``Dialect`` and
  ``views.parse_scope``, the verdict judged warm from the cache
  (``views.judge_warm``: ``hot_path``, no thread, no database, **nothing
  counted** yet);
- only a short-circuit is answered here: the body is read, the rate
  counted (``hot_path.charge``), the body checked (``calls.arrived``,
  ``calls.called``: the same 400s), and the canned answer and its ledger entry
  are ``calls.answered_here``'s, the one the Django view's ``act`` returns;
- anything else (a pass or a clamp, which go upstream; a cold cache or a row
  to read in a thread; an unknown token; another path or method; a head
  Django must answer) goes to Django's route untouched: the body not read,
  nothing counted; a pass or clamp judged here carries its verdict along
  (``views.JUDGED_AHEAD``), which Django's view counts and acts on instead
  of judging the call a second time;
- a failure after that is ``views.failed``'s answer in the door's shape, as
  ``views.labelled_always`` gives the view's.

The headers are Django's own, once per request head (``asgi_front.Fronts``,
shared with the verdict API's lean route). ``curfew_site.asgi`` mounts it
inside ``BodyGuard`` (body limits stay first) when ``CURFEW_LEAN_API`` is on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from curfew_client.scope import Scope
from django.http.response import HttpResponseBase

from curfew_core.asgi_front import (
    Fronts,
    ScopeHeaders,
    converted,
    read_body,
    send_answer,
)
from curfew_core.hot_path import charge
from curfew_core.proxy import calls, chat, messages, passthrough, responses, views

AsgiScope = dict[str, Any]
ASGIApp = Callable[..., Awaitable[None]]

#: The model doors whose short-circuit is answered here (``POST`` only).
#: Embeddings are not: off duty they are refused, not answered.
ROUTES: dict[str, calls.ModelDoor] = {
    "/v1/chat/completions": chat.DOOR,
    "/v1/responses": responses.DOOR,
    "/v1/messages": messages.DOOR,
    "/v1/completions": passthrough.COMPLETIONS,
}


class _ToDjango(Exception):
    """Not answered here: Django's route answers (nothing was read or counted),
    with the verdict judged here if there is one (``views.JUDGED_AHEAD``)."""

    def __init__(self, warmly: views.Warmly | None = None) -> None:
        super().__init__()
        self.warmly = warmly


class _Gone(Exception):
    """The client went away before its body arrived: nobody to answer."""


class LeanProxy:
    """Warm short-circuits on ``ROUTES`` answered here; everything else to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._front = Fronts()

    async def __call__(self, scope: AsgiScope, receive: Any, send: Any) -> None:
        door = None
        if scope["type"] == "http" and scope["method"] == "POST":
            door = ROUTES.get(scope["path"])
        front = None if door is None else self._front(scope)
        if door is None or front is None or front.to_django:
            await self.app(scope, receive, send)
            return
        try:
            answer = await _short_circuit(door, scope, receive)
        except _ToDjango as handed:
            if handed.warmly is not None:
                # Judged once: Django's route counts and acts on this verdict.
                scope = {**scope, views.JUDGED_AHEAD: handed.warmly}
            await self.app(scope, receive, send)
            return
        except _Gone:
            return
        except Exception as exc:
            answer = views.failed(exc, door.dialect.error, "POST", scope["path"])
        await send_answer(send, front, *converted(answer))


async def _short_circuit(door: calls.ModelDoor, scope: AsgiScope, receive: Any) -> HttpResponseBase:
    """The door's answer to a warm short-circuit (or its 400 or 429), else
    ``_ToDjango`` before anything is read or counted."""
    headers = ScopeHeaders(scope)
    raw_token = door.dialect.credential(headers)
    scope_read: Scope | None
    try:
        scope_read = views.parse_scope(headers)
    except views.BadRequest:
        scope_read = None  # ``calls.arrived`` names it; judged without a scope, as there
    warmly = await views.judge_warm(raw_token, calls.context_of(scope_read or calls.NO_SCOPE))
    if warmly is None or not calls.short_circuits(warmly.judged.verdict):
        raise _ToDjango(warmly)
    # The body first, as Django's handler reads it before the view: a client
    # gone (or cut off by ``BodyGuard``) is not counted.
    body = await read_body(receive)
    if body is None:
        raise _Gone
    await charge(warmly.identity)

    def read() -> bytes:
        views.check_length(headers.get("content-length"))
        return body

    call = calls.called(
        calls.arrived(headers, read, door.what, door.dialect, read_scope=scope_read),
        warmly.judged,
        door.dialect,
    )
    if not isinstance(call, calls.Call):
        return call  # the body's 400, labelled
    answer = calls.answered_here(call, door)
    assert answer is not None  # a short-circuit verdict is always answered here
    return answer
