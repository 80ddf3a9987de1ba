"""The verdict as a gateway sees it: the API's fields, typed, plus where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from curfew_core import openai_shapes
from curfew_core.engine.verdict import Action, State, synthetic_stream

#: ``server``: asked (or cached while fresh); ``last_known``: an expired verdict
#: served during an outage; ``fail_open`` / ``fail_closed``: the outage policy's own.
Origin = Literal["server", "last_known", "fail_open", "fail_closed"]


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"instant without a UTC offset: {value!r}")
    return parsed


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"not a whole number: {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class CurfewVerdict:
    """One verdict of ``POST /api/v1/verdict`` (see the API's OpenAPI document)."""

    state: State
    schedule_state: State
    action: Action
    reply: str | None
    stream: list[dict[str, Any]] | None
    max_tokens: int | None
    persona: str | None
    tools: str
    reasoning_effort: str | None
    progress: float | None
    peak: bool
    reason: str
    exempt: bool
    dry_run: bool
    valid_until: datetime
    at: datetime
    budget: int | None
    override: str | None
    override_until: datetime | None
    debug_at: datetime | None
    would: dict[str, Any] | None
    #: The server's advice: ask again after at most this many seconds (saves and
    #: overrides are not predictable the way ``valid_until`` is).
    max_age: int | None
    origin: Origin = "server"

    @property
    def short_circuit(self) -> bool:
        """Answer with ``reply`` and send nothing upstream."""
        return self.action is Action.SHORT_CIRCUIT

    def apply(
        self,
        body: Mapping[str, Any],
        *,
        default_budget_key: openai_shapes.BudgetKey = openai_shapes.DEFAULT_BUDGET_KEY,
    ) -> dict[str, Any]:
        """``body`` (an OpenAI chat request) as this verdict allows it to go upstream."""
        return openai_shapes.apply_verdict(body, self, default_budget_key=default_budget_key)

    def answer(self, body: Mapping[str, Any]) -> tuple[bytes, str]:
        """The short-circuit answer to ``body``: ``(payload, content_type)``,
        SSE when it asked to stream. Only for a short-circuit verdict."""
        if self.reply is None:
            raise ValueError("this verdict does not short-circuit; send the request upstream")
        return openai_shapes.short_circuit_body(body, self.reply)

    def as_origin(self, origin: Origin) -> CurfewVerdict:
        return replace(self, origin=origin)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> CurfewVerdict:
        """Parse the API's JSON; a missing or malformed field raises ``ValueError``."""
        try:
            valid_until = _instant(payload["valid_until"])
            at = _instant(payload["at"])
            if valid_until is None or at is None:
                raise ValueError("valid_until and at are required")
            progress = payload.get("progress")
            return cls(
                state=State(payload["state"]),
                schedule_state=State(payload["schedule_state"]),
                action=Action(payload["action"]),
                reply=payload.get("reply"),
                stream=payload.get("stream"),
                max_tokens=_optional_int(payload.get("max_tokens")),
                persona=payload.get("persona"),
                tools=str(payload.get("tools", "allow")),
                reasoning_effort=payload.get("reasoning_effort"),
                progress=None if progress is None else float(progress),
                peak=bool(payload.get("peak", False)),
                reason=str(payload.get("reason", "")),
                exempt=bool(payload.get("exempt", False)),
                dry_run=bool(payload.get("dry_run", False)),
                valid_until=valid_until,
                at=at,
                budget=_optional_int(payload.get("budget")),
                override=payload.get("override"),
                override_until=_instant(payload.get("override_until")),
                debug_at=_instant(payload.get("debug_at")),
                would=payload.get("would"),
                max_age=_optional_int(payload.get("max_age")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a verdict: {exc!r}") from None


def policy_verdict(
    origin: Literal["fail_open", "fail_closed"], *, now: float, reply: str, why: str
) -> CurfewVerdict:
    """The verdict an outage policy answers with when the server cannot be asked.

    ``fail_open`` passes untouched (as on duty); ``fail_closed`` is the off-duty
    short-circuit. ``reason`` says it was the policy, not the schedule.
    """
    instant = datetime.fromtimestamp(now, tz=UTC)
    closed = origin == "fail_closed"
    return CurfewVerdict(
        state=State.OFF_DUTY if closed else State.ON_DUTY,
        schedule_state=State.OFF_DUTY if closed else State.ON_DUTY,
        action=Action.SHORT_CIRCUIT if closed else Action.PASS,
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
        at=instant,
        budget=None,
        override=None,
        override_until=None,
        debug_at=None,
        would=None,
        max_age=0,
        origin=origin,
    )
