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

In front of Anthropic's Messages API, ``anthropic_shapes`` does the same for
``/v1/messages`` bodies (``apply_verdict``, ``short_circuit_body``).
"""

from curfew_client import anthropic_shapes
from curfew_client.aio import AsyncCurfewClient
from curfew_client.base import BaseCurfewClient
from curfew_client.openai_shapes import apply_verdict, short_circuit_body
from curfew_client.policy import CurfewUnavailable, Policy
from curfew_client.scope import Scope, ScopeHeaderError, scope_from_headers
from curfew_client.sync import CurfewClient
from curfew_client.verdict import Action, CurfewVerdict, Origin, State
from curfew_client.wire import StateAnswer, VerdictAnswer

__all__ = [
    "Action",
    "AsyncCurfewClient",
    "BaseCurfewClient",
    "CurfewClient",
    "CurfewUnavailable",
    "CurfewVerdict",
    "Origin",
    "Policy",
    "Scope",
    "ScopeHeaderError",
    "State",
    "StateAnswer",
    "VerdictAnswer",
    "anthropic_shapes",
    "apply_verdict",
    "scope_from_headers",
    "short_circuit_body",
]
