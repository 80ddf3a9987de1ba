"""The wire contract, declared once: what ``POST /api/v1/verdict`` and
``GET /api/v1/state`` answer.

The server builds its JSON through these models, the client parses with them,
and the OpenAPI document embeds their JSON Schema (``json_schema()``), so the
three cannot drift apart.

One name per meaning: ``max_tokens`` is only ever the clamp applied to a
request; ``budget`` is only ever the winding curve's budget at the instant.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, PlainSerializer

StateName = Literal["on-duty", "winding", "off-duty", "lights-out"]
ActionName = Literal["pass", "clamp", "short-circuit"]
Tools = Literal["allow", "deny"]
OverrideKind = Literal["overtime", "off"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]

#: An instant with its UTC offset, written as ``datetime.isoformat()`` writes it
#: (``+00:00``, never ``Z``): the format the API has always answered with.
Instant = Annotated[
    AwareDatetime,
    PlainSerializer(datetime.isoformat, return_type=str, when_used="json"),
]


def synthetic_stream(text: str) -> list[dict[str, Any]]:
    """The exact event stream a well-behaved adapter emits for a canned reply.

    The zero usage is an event of its own, never left out: a ledger that reads
    usage must see a real zero, not a missing turn.
    """
    return [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


class _Wire(BaseModel):
    # Frozen: a verdict is a value (cached and shared between callers).
    # Unknown keys are ignored, so a newer server can add fields. Strict: a
    # clamp written as text, or an instant without its offset, is not a verdict.
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


class Would(_Wire):
    """In a dry run: what the verdict would have done."""

    action: ActionName
    reply: str | None
    max_tokens: int | None
    persona: str | None
    tools: Tools
    reasoning_effort: ReasoningEffort | None


class VerdictAnswer(_Wire):
    """One verdict of ``POST /api/v1/verdict``. Every field is always present
    (``null`` when it does not apply): a gateway or a ledger may read any of
    them without checking."""

    state: StateName
    #: What the schedule alone says (before overrides).
    schedule_state: StateName
    action: ActionName
    #: The canned answer of a short-circuit.
    reply: str | None
    #: ``reply`` as an adapter's event stream (``synthetic_stream``).
    stream: list[dict[str, Any]] | None
    #: The clamp: the most output tokens the request may ask for (``min``, never a raise).
    max_tokens: int | None
    persona: str | None
    tools: Tools
    reasoning_effort: ReasoningEffort | None
    #: 0 to 1 through winding.
    progress: float | None
    peak: bool
    reason: str
    exempt: bool
    dry_run: bool
    #: The next scheduled change.
    valid_until: Instant
    #: Seconds a gateway may cache this (saves and overrides are not predictable).
    max_age: int | None = Field(description="seconds a gateway may cache this")
    #: The instant the schedule was read at (the time machine's, when set).
    at: Instant
    #: The winding curve's budget at ``at``, acted on or not.
    budget: int | None
    override: OverrideKind | None
    override_until: Instant | None
    debug_at: Instant | None
    would: Would | None
    #: The user's IANA time zone (as in ``StateAnswer``): the one ``reason``
    #: is told in, and the one to tell ``valid_until`` in. Absent from the
    #: answers of servers older than it.
    timezone: str | None = Field(
        default=None,
        description="the user's IANA time zone, e.g. Europe/Paris (absent from older servers)",
    )


class DaySegment(_Wire):
    """A stretch of the local day with one schedule state."""

    start: str = Field(description="HH:MM, local")
    end: str = Field(description="HH:MM, local; 24:00 for the end of the day")
    state: StateName
    peak: bool


class StateAnswer(_Wire):
    """What a status display needs (``GET /api/v1/state`` and the capsule)."""

    state: StateName
    schedule_state: StateName
    reason: str
    progress: float | None
    #: The winding curve's budget now (the same ``budget`` as in a verdict).
    budget: int | None
    reply: str | None
    peak: bool
    override: OverrideKind | None
    override_until: Instant | None
    overtime_left: int | None = Field(description="seconds")
    forced: bool
    debug_at: Instant | None
    at: Instant
    valid_until: Instant
    timezone: str
    enabled: bool
    dry_run: bool
    day: list[DaySegment]


def json_schema(model: type[BaseModel], *, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """``model``'s JSON Schema (draft 2020-12, which OpenAPI 3.1 embeds), with
    every field required: the answers always carry every key. Nested models are
    in ``$defs`` and referenced through ``ref_template``."""
    schema = model.model_json_schema(mode="serialization", ref_template=ref_template)
    for definition in [schema, *schema.get("$defs", {}).values()]:
        definition["required"] = list(definition.get("properties", {}))
    return schema


#: The answers by the names the OpenAPI document gives them.
ANSWERS: dict[str, type[BaseModel]] = {"Verdict": VerdictAnswer, "State": StateAnswer}


def openapi_schemas(prefix: str = "#/components/schemas/") -> dict[str, dict[str, Any]]:
    """Every answer's schema and the models they nest, by name, for an OpenAPI
    document's ``components.schemas`` (references point there: a ``#/$defs/…``
    inside an embedded schema would resolve against the document's root)."""
    out: dict[str, dict[str, Any]] = {}
    for name, model in ANSWERS.items():
        schema = json_schema(model, ref_template=prefix + "{model}")
        out.update(schema.pop("$defs", {}))
        out[name] = schema
    return out
