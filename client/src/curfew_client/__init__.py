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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what ``__getattr__`` below hands out, for the type checkers
    from curfew_client import anthropic_shapes as anthropic_shapes
    from curfew_client import completions_shapes as completions_shapes
    from curfew_client import openai_shapes as openai_shapes
    from curfew_client import responses_shapes as responses_shapes
    from curfew_client import shapes as shapes
    from curfew_client import sse as sse
    from curfew_client.aio import AsyncCurfewClient as AsyncCurfewClient
    from curfew_client.base import BaseCurfewClient as BaseCurfewClient
    from curfew_client.health import CurfewError as CurfewError
    from curfew_client.health import CurfewHealth as CurfewHealth
    from curfew_client.health import ErrorKind as ErrorKind
    from curfew_client.health import Policy as Policy
    from curfew_client.openai_shapes import apply_verdict as apply_verdict
    from curfew_client.openai_shapes import short_circuit_body as short_circuit_body
    from curfew_client.policy import CurfewRefused as CurfewRefused
    from curfew_client.policy import CurfewUnavailable as CurfewUnavailable
    from curfew_client.scope import Scope as Scope
    from curfew_client.scope import ScopeHeaderError as ScopeHeaderError
    from curfew_client.scope import scope_from_headers as scope_from_headers
    from curfew_client.shapes import Shape as Shape
    from curfew_client.sync import CurfewClient as CurfewClient
    from curfew_client.verdict import Action as Action
    from curfew_client.verdict import CurfewVerdict as CurfewVerdict
    from curfew_client.verdict import Origin as Origin
    from curfew_client.verdict import State as State
    from curfew_client.wire import StateAnswer as StateAnswer
    from curfew_client.wire import VerdictAnswer as VerdictAnswer

#: Each public name and the module that defines it (``""``: the name is a
#: module of the package). Imported on first use (PEP 562): the server
#: imports a shape module or two, and ``import curfew_client.wire`` then
#: no longer loads the HTTP clients (httpx and the two clients' modules,
#: about 0.1 s of every Django start, since the settings read a shape's
#: names). ``tests`` hold this table, ``__all__`` and the type checkers'
#: imports above as one (``client/tests/test_package_exports.py``).
_EXPORTS: dict[str, str] = {
    "Action": "verdict",
    "AsyncCurfewClient": "aio",
    "BaseCurfewClient": "base",
    "CurfewClient": "sync",
    "CurfewError": "health",
    "CurfewHealth": "health",
    "CurfewRefused": "policy",
    "CurfewUnavailable": "policy",
    "CurfewVerdict": "verdict",
    "ErrorKind": "health",
    "Origin": "verdict",
    "Policy": "health",
    "Scope": "scope",
    "ScopeHeaderError": "scope",
    "Shape": "shapes",
    "State": "verdict",
    "StateAnswer": "wire",
    "VerdictAnswer": "wire",
    "anthropic_shapes": "",
    "apply_verdict": "openai_shapes",
    "completions_shapes": "",
    "openai_shapes": "",
    "responses_shapes": "",
    "scope_from_headers": "scope",
    "shapes": "",
    "short_circuit_body": "openai_shapes",
    "sse": "",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        home = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    if home:
        value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    else:
        value = importlib.import_module(f"{__name__}.{name}")
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
