"""What the upstream said it used, read off its answer as it passes through
(for the decision ledger), and the one ledger entry per model call.

Each wire protocol declares how its answers name it (``protocols``: its
``usage``): OpenAI's chat and legacy completions ``usage`` (``prompt_tokens`` /
``completion_tokens``, in a stream's last chunk when the client asked for it),
the Responses API's (``input_tokens`` / ``output_tokens``, in
``response.completed``), Anthropic's messages (``input_tokens`` in
``message_start``, the running ``output_tokens`` in ``message_delta``),
Gemini's ``usageMetadata`` (``promptTokenCount`` / ``candidatesTokenCount``).
The latest number seen for each wins. Nothing else of the answer is kept.
Likewise its reply budget's names (``budgets``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase

from curfew_core.engine import Verdict
from curfew_core.ledger.entry import MAX_STORED, verdict_entry
from curfew_core.protocols import anthropic, openai
from curfew_core.protocols.base import Path, Usage, at
from curfew_core.proxy.stream_lines import StreamLines
from curfew_core.services.ledger_recorder import record

#: A JSON answer larger than this is relayed without reading its usage.
MAX_JSON_SCAN = 4 * 2**20
#: What a scan reads when not told a protocol: OpenAI's names and Anthropic's
#: (both call it ``usage``).
ANY_USAGE = Usage(
    "usage",
    input=openai.OPENAI.usage.input,
    output=openai.OPENAI.usage.output,
    within=(*openai.OPENAI.usage.within, *anthropic.ANTHROPIC.usage.within),
)
#: One decoder for every answer (it keeps no state between calls).
_DECODER = json.JSONDecoder()


def asked_budget(
    body: Mapping[str, Any], budgets: tuple[Path, ...] = openai.OPENAI.budgets
) -> int | None:
    """The tightest reply budget the client named (under any of its
    protocol's ``budgets``), as the ledger records it: at most ``MAX_STORED``.
    The body itself is relayed as sent (the upstream judges its own limits);
    only the ledger's copy is capped, so no client's number can make a row the
    database refuses."""
    asked = [
        value
        for path in budgets
        if isinstance(value := body.get(path[0]) if len(path) == 1 else at(body, path), int)
        and not isinstance(value, bool)
        and value > 0
    ]
    return min(*asked, MAX_STORED) if asked else None


def _whole(value: Any) -> int | None:
    """A usage count as the ledger records it: a whole number, capped at
    ``MAX_STORED`` (an upstream's number is only recorded, never trusted to fit)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, MAX_STORED)
    return None


def _first(usage: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """The count under the first of ``names`` the object has (as the ledger records it)."""
    for name in names:
        if name in usage:
            return _whole(usage[name])
    return None


class UsageScan:
    """Feed it the answer's bytes; ``tokens`` is then (input, output), each
    ``None`` when the answer did not say."""

    def __init__(self, *, sse: bool, names: Usage = ANY_USAGE) -> None:
        self.sse = sse
        self.names = names
        self._marker = names.marker
        self._holders = ("", *names.within)
        self.input: int | None = None
        self.output: int | None = None
        #: An event stream's lines (one past ``stream_lines.MAX_LINE``: not read).
        self._lines = StreamLines()
        self._body: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if not self.sse:
            self._size += len(chunk)
            if self._size <= MAX_JSON_SCAN:
                self._body.append(chunk)
            return
        for line in self._lines.feed(chunk):
            if line.startswith(b"data:") and self._marker in line:
                self._take(line[5:])

    def _take(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if isinstance(event, dict):
            self._usage_of(event)

    def _take_last_usage(self, body: bytes) -> None:
        """The answer's last ``"usage": {...}`` object (by its protocol's
        name), decoded alone: a long answer is not parsed whole on the event
        loop for two numbers."""
        marker = self._marker
        found = body.rfind(marker)
        start = body.find(b"{", found) if found >= 0 else -1
        if start < 0 or body[found + len(marker) : start].strip() != b":":
            return
        try:
            usage, _ = _DECODER.raw_decode(body[start:].decode("utf-8", "replace"))
        except ValueError:
            return
        if isinstance(usage, dict):
            self._counts(usage)

    def _usage_of(self, event: dict[str, Any]) -> None:
        key = self.names.key
        for within in self._holders:
            holder = event.get(within) if within else event
            usage = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                self._counts(usage)

    def _counts(self, usage: dict[str, Any]) -> None:
        given_in = _first(usage, self.names.input)
        given_out = _first(usage, self.names.output)
        self.input = given_in if given_in is not None else self.input
        self.output = given_out if given_out is not None else self.output

    @property
    def tokens(self) -> tuple[int | None, int | None]:
        if not self.sse and self._body and self._size <= MAX_JSON_SCAN:
            self._take_last_usage(b"".join(self._body))
            self._body = []
        if self.sse:
            last = self._lines.take_rest()
            if last.startswith(b"data:"):
                self._take(last[5:])
        return self.input, self.output


class Recording:
    """One model call's ledger entry, recorded exactly once."""

    def __init__(
        self,
        verdict: Verdict,
        *,
        origin: str,
        at: datetime,
        token_id: int,
        user_id: int | None = None,
        session: str | None,
        purpose: str | None,
        budget_before: int | None,
        action: str | None = None,
        usage: Usage = ANY_USAGE,
    ) -> None:
        self.verdict = verdict
        self.usage = usage
        self.origin = origin
        self.at = at
        self.token_id = token_id
        self.user_id = user_id
        self.session = session
        self.purpose = purpose
        self.budget_before = budget_before
        self.action = action
        self.done = False

    def __call__(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        if self.done:
            return
        self.done = True
        record(
            verdict_entry(
                self.verdict,
                origin=self.origin,
                at=self.at,
                user_id=self.user_id,
                token_id=self.token_id,
                session=self.session,
                purpose=self.purpose,
                budget_before=self.budget_before,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                action=self.action,
            )
        )

    def after(self, response: HttpResponseBase) -> HttpResponseBase:
        """Record when the answer is over: a relayed stream when its last
        byte has passed (or the client went away), anything else now (an
        upstream error or an outage: usage unknown)."""
        if not isinstance(response, StreamingHttpResponse) or not response.is_async:
            self()
            return response
        scan = UsageScan(
            sse="text/event-stream" in response.get("Content-Type", ""), names=self.usage
        )
        # The relay itself, not ``streaming_content``'s wrapping of it (a
        # generator more per chunk, only to check each is bytes: the edge
        # checks as it sends): closing this closes the relay.
        inner: AsyncIterator[bytes] = response._iterator  # type: ignore[attr-defined]

        async def relayed() -> AsyncIterator[bytes]:
            try:
                async for chunk in inner:
                    scan.feed(chunk)
                    yield chunk
            finally:
                self(*scan.tokens)
                aclose = getattr(inner, "aclose", None)
                if aclose is not None:
                    await aclose()

        response.streaming_content = relayed()
        # Also on close: a response dropped before its relay began still counts once.
        response._resource_closers.append(lambda: self(*scan.tokens))  # type: ignore[attr-defined]
        return response
