"""The verdict as a gateway sees it: the API's answer (``wire.VerdictAnswer``),
plus where it came from and how to act on it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import PrivateAttr

from curfew_client import openai_shapes, shapes
from curfew_client.shapes import Shape, ShapeModule
from curfew_client.wire import VerdictAnswer, synthetic_stream

#: ``server``: asked (or cached while fresh); ``last_known``: an expired verdict
#: served during an outage; ``fail_open`` / ``fail_closed``: the outage policy's own.
Origin = Literal["server", "last_known", "fail_open", "fail_closed"]


#: ``X-Curfew-State`` of a call answered without a verdict (``checked_state``).
UNCHECKED: Final = "unchecked"


class State:
    """Names for ``wire.StateName``'s values: ``verdict.state == State.WINDING``.

    Plain constants, not an enum: the field is a ``Literal`` (the wire's own
    type), and a type checker accepts comparing a ``Literal`` with these.
    """

    ON_DUTY: Final = "on-duty"
    WINDING: Final = "winding"
    OFF_DUTY: Final = "off-duty"
    LIGHTS_OUT: Final = "lights-out"


class Action:
    """Names for ``wire.ActionName``'s values: ``verdict.action == Action.CLAMP``."""

    PASS: Final = "pass"  # noqa: S105 (an action, not a password)
    CLAMP: Final = "clamp"
    SHORT_CIRCUIT: Final = "short-circuit"


class CurfewVerdict(VerdictAnswer):
    """One verdict of ``POST /api/v1/verdict`` (``wire.VerdictAnswer``), and its origin."""

    # Not a field: the server cannot claim an origin; only the client knows it.
    _origin: Origin = PrivateAttr(default="server")

    @property
    def origin(self) -> Origin:
        return self._origin

    @property
    def checked_state(self) -> str:
        """What ``X-Curfew-State`` says of the call: the verdict's ``state``, or
        ``unchecked`` when the outage policy answered without one (``fail_open``
        passing, ``fail_closed`` answering): no schedule was read, so no state
        is claimed. ``last_known`` serves a verdict the server gave: its state."""
        if self._origin in ("fail_open", "fail_closed"):
            return UNCHECKED
        return self.state

    @property
    def short_circuit(self) -> bool:
        """Answer with ``reply`` and send nothing upstream."""
        return self.action == Action.SHORT_CIRCUIT

    def apply(
        self,
        body: Mapping[str, Any],
        *,
        shape: Shape | ShapeModule = "chat",
        default_budget_key: openai_shapes.BudgetKey = openai_shapes.DEFAULT_BUDGET_KEY,
        budget_key: openai_shapes.UpstreamBudgetKey | None = None,
    ) -> dict[str, Any]:
        """``body`` (a request in ``shape``: ``chat``, ``responses``, ``messages``
        or ``completions``, or a Gemini call's, ``gemini_shapes.call_at(path,
        query)``) as this verdict allows it to go upstream: the budget
        clamped (``min``), the persona added, tools dropped when denied; equal
        to ``body`` when the verdict passes. For chat, ``budget_key`` names the
        budget your upstream reads (the proxy's ``CURFEW_UPSTREAM_BUDGET_KEY``
        rule; see ``openai_shapes.apply_verdict``)."""
        if shape == "chat":
            return openai_shapes.apply_verdict(
                body, self, default_budget_key=default_budget_key, budget_key=budget_key
            )
        return shapes.module(shape).apply_verdict(body, self)

    def _reply(self) -> str:
        if self.reply is None:
            raise ValueError("this verdict does not short-circuit; send the request upstream")
        return self.reply

    def answer(
        self, body: Mapping[str, Any], *, shape: Shape | ShapeModule = "chat"
    ) -> tuple[bytes, str]:
        """The short-circuit answer to ``body`` in ``shape``: ``(payload,
        content_type)``, SSE when it asked to stream. Only for a short-circuit
        verdict (``ValueError`` otherwise)."""
        return shapes.module(shape).short_circuit_body(body, self._reply())

    def answer_object(
        self, body: Mapping[str, Any], *, shape: Shape | ShapeModule = "chat"
    ) -> dict[str, Any]:
        """The non-streamed short-circuit answer as a plain dict (a
        ``chat.completion``, ``response``, ``message`` or ``text_completion``)."""
        return shapes.module(shape).answer(body, self._reply())

    def answer_events(
        self, body: Mapping[str, Any], *, shape: Shape | ShapeModule = "chat"
    ) -> list[tuple[str | None, dict[str, Any]]]:
        """The streamed short-circuit answer as ``(event name, data)`` pairs, for
        a gateway that writes its own SSE (``None``: an unnamed event)."""
        return list(shapes.module(shape).answer_events(body, self._reply()))

    def as_origin(self, origin: Origin) -> CurfewVerdict:
        copy = self.model_copy()
        copy._origin = origin
        return copy

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> CurfewVerdict:
        """Parse the API's decoded JSON; a missing or malformed field raises
        ``ValueError`` (pydantic's ``ValidationError`` is one). Checked as JSON
        (instants as text), by the same strict rules as ``model_validate_json``."""
        return cls.model_validate_json(json.dumps(payload))


def policy_verdict(
    origin: Literal["fail_open", "fail_closed"], *, now: float, reply: str, why: str
) -> CurfewVerdict:
    """The verdict an outage policy answers with when the server cannot be asked.

    ``fail_open`` passes untouched (as on duty); ``fail_closed`` is the off-duty
    short-circuit. ``reason`` says it was the policy, not the schedule.
    """
    instant = datetime.fromtimestamp(now, tz=UTC)
    closed = origin == "fail_closed"
    verdict = CurfewVerdict(
        state="off-duty" if closed else "on-duty",
        schedule_state="off-duty" if closed else "on-duty",
        action="short-circuit" if closed else "pass",
        reply=reply if closed else None,
        stream=synthetic_stream(reply) if closed else None,
        max_tokens=None,
        persona=None,
        tools="deny" if closed else "allow",
        reasoning_effort=None,
        progress=None,
        peak=False,
        reason=f"curfew server unavailable ({why}) · {origin}",
        exempt=False,
        dry_run=False,
        valid_until=instant,
        max_age=0,
        at=instant,
        budget=None,
        override=None,
        override_until=None,
        debug_at=None,
        would=None,
    )
    return verdict.as_origin(origin)
