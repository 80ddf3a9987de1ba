"""One module per wire protocol (``openai``, ``anthropic``, ``gemini``), each
a :class:`~curfew_core.protocols.base.WireProtocol`; ``ALL`` lists them.

A new provider is a module here, a line in ``ALL``, one handler module in
``proxy``, a row of the door table and its client's shapes
(``docs/subsystems/protocols.md``)."""

from __future__ import annotations

from curfew_core.protocols import anthropic, gemini, openai
from curfew_core.protocols.base import WireProtocol

ALL: tuple[WireProtocol, ...] = (openai.OPENAI, anthropic.ANTHROPIC, gemini.GEMINI)
