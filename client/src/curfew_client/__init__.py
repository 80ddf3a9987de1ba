"""The gateway client: ask a curfew server what to do before each model call.

Its own distribution (``pip install ./client``), without Django (a gateway is
not a Django project)::

    from curfew_client import CurfewClient

    curfew = CurfewClient("http://127.0.0.1:8000", token, policy="fail_open")
    verdict = curfew.verdict(session_id=session, max_tokens=body.get("max_tokens"))
    if verdict.short_circuit:
        payload, content_type = verdict.answer(body)  # canned reply, zero usage
    else:
        body = verdict.apply(body)  # clamp, persona, tools; untouched on duty

Every protocol a gateway may serve has its shape (``shape="chat"`` by default,
``"responses"``, ``"messages"`` for Anthropic, ``"completions"``)::

    body = verdict.apply(body, shape="messages")
    message = verdict.answer_object(body, shape="messages")  # a plain dict
    events = verdict.answer_events(body, shape="messages")  # [(name, data), ...]

The shape modules (``openai_shapes``, ``responses_shapes``, ``anthropic_shapes``,
``completions_shapes``) give the same functions directly; ``shapes.module(name)``
picks one by name. ``scope_from_headers`` reads ``X-Curfew-Session`` /
``-Purpose`` / ``-Subagent``.

Outages are answered by the policy and said loudly once (an ERROR on the
``curfew.client`` logger); ``client.last_error`` (a ``CurfewError``) and
``client.health()`` (a ``CurfewHealth``) are for a gateway's health check.
A refusal of one call's own request (a team key's name that is not a member)
raises ``CurfewRefused`` for that call alone: it is no outage.
"""

from curfew_client import (
    anthropic_shapes,
    completions_shapes,
    openai_shapes,
    responses_shapes,
    shapes,
    sse,
)
from curfew_client.aio import AsyncCurfewClient
from curfew_client.base import BaseCurfewClient
from curfew_client.health import CurfewError, CurfewHealth, ErrorKind, Policy
from curfew_client.openai_shapes import apply_verdict, short_circuit_body
from curfew_client.policy import CurfewRefused, CurfewUnavailable
from curfew_client.scope import Scope, ScopeHeaderError, scope_from_headers
from curfew_client.shapes import Shape
from curfew_client.sync import CurfewClient
from curfew_client.verdict import Action, CurfewVerdict, Origin, State
from curfew_client.wire import StateAnswer, VerdictAnswer

__all__ = [
    "Action",
    "AsyncCurfewClient",
    "BaseCurfewClient",
    "CurfewClient",
    "CurfewError",
    "CurfewHealth",
    "CurfewRefused",
    "CurfewUnavailable",
    "CurfewVerdict",
    "ErrorKind",
    "Origin",
    "Policy",
    "Scope",
    "ScopeHeaderError",
    "Shape",
    "State",
    "StateAnswer",
    "VerdictAnswer",
    "anthropic_shapes",
    "apply_verdict",
    "completions_shapes",
    "openai_shapes",
    "responses_shapes",
    "scope_from_headers",
    "shapes",
    "short_circuit_body",
    "sse",
]
