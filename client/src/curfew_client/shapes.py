"""The protocols a verdict can be applied to and answered in, by name.

Every shape module gives the same four functions, so a gateway that serves
several APIs picks one by the path it was called on::

    shape = shapes.module("messages")  # /v1/messages
    body = shape.apply_verdict(body, verdict)  # clamp, persona, tools
    payload, content_type = shape.short_circuit_body(body, verdict.reply)

- ``chat``: OpenAI chat completions (``openai_shapes``);
- ``responses``: OpenAI's Responses API (``responses_shapes``);
- ``messages``: Anthropic's Messages API (``anthropic_shapes``);
- ``completions``: OpenAI's legacy text completions (``completions_shapes``).

Gemini is not among them: its body never says whether it streams (its path
does, ``:streamGenerateContent``, and its query how, ``alt=sse``), nor its
model. A gateway takes its shape from the call instead, and uses it the same
way::

    shape = gemini_shapes.call_at(path, query)  # /v1beta/models/{model}:…
    body = verdict.apply(body, shape=shape)  # or shape.apply_verdict(body, verdict)

Every ``shape=`` of a verdict takes such a call as well as a name;
``module("gemini")`` says where to get one in its ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, get_args

from curfew_client import anthropic_shapes, completions_shapes, openai_shapes, responses_shapes
from curfew_client.openai_shapes import VerdictLike

Shape = Literal["chat", "responses", "messages", "completions"]
SHAPES: tuple[Shape, ...] = get_args(Shape)
#: Not a shape by body: a Gemini call's shape comes from its path and query.
GEMINI = "gemini"
GEMINI_BY_CALL = (
    "a Gemini call's shape comes from its path and query, not its body: "
    "use curfew_client.gemini_shapes.call_at(path, query)"
)


class ShapeModule(Protocol):
    """What every shape module gives."""

    def apply_verdict(self, body: Mapping[str, Any], verdict: VerdictLike) -> dict[str, Any]:
        """The request as the verdict lets it go upstream (equal when it passes)."""
        ...

    def answer(self, body: Mapping[str, Any], text: str) -> dict[str, Any]:
        """The complete non-streamed short-circuit answer, zero usage."""
        ...

    def answer_events(
        self, body: Mapping[str, Any], text: str
    ) -> Sequence[tuple[str | None, dict[str, Any]]]:
        """The streamed answer as ``(event name or None, data)`` pairs."""
        ...

    def short_circuit_body(self, body: Mapping[str, Any], text: str) -> tuple[bytes, str]:
        """``(payload, content_type)``: JSON, or SSE when the body asked to stream."""
        ...


_MODULES: dict[Shape, ShapeModule] = {
    "chat": openai_shapes,
    "responses": responses_shapes,
    "messages": anthropic_shapes,
    "completions": completions_shapes,
}


def module(shape: Shape | ShapeModule) -> ShapeModule:
    """The module for ``shape``, or ``shape`` itself when it is one already (a
    Gemini call's: ``gemini_shapes.call_at``); ``ValueError`` naming the
    choices otherwise (for ``gemini``, where its shape comes from)."""
    if not isinstance(shape, str):
        return shape
    try:
        return _MODULES[shape]
    except KeyError:
        if shape == GEMINI:
            raise ValueError(GEMINI_BY_CALL) from None
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}") from None
