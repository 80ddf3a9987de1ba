"""The gateway client: ask a curfew server what to do before each model call.

Importable on its own, without Django (a gateway is not a Django project)::

    from curfew_core.client import CurfewClient

    curfew = CurfewClient("http://127.0.0.1:8000", token, policy="fail_open")
    verdict = curfew.verdict(session_id=session, max_tokens=body.get("max_tokens"))
    if verdict.short_circuit:
        payload, content_type = verdict.answer(body)  # canned reply, zero usage
    else:
        body = verdict.apply(body)  # clamp, persona, tools; untouched on duty
"""

from curfew_core.client.aio import AsyncCurfewClient
from curfew_core.client.policy import CurfewUnavailable, Policy
from curfew_core.client.sync import CurfewClient
from curfew_core.client.verdict import CurfewVerdict, Origin
from curfew_core.engine.verdict import Action, State
from curfew_core.openai_shapes import apply_verdict, short_circuit_body

__all__ = [
    "Action",
    "AsyncCurfewClient",
    "CurfewClient",
    "CurfewUnavailable",
    "CurfewVerdict",
    "Origin",
    "Policy",
    "State",
    "apply_verdict",
    "short_circuit_body",
]
