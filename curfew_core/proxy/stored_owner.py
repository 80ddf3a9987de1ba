"""Who may touch a response the upstream stores: the person who made it.

OpenAI's Responses API keeps each response it makes (``store`` defaults to
true), and answers ``GET`` / ``DELETE /v1/responses/<id>`` and a create's
``previous_response_id`` to anyone holding the key that made it: for calls
through the proxy, the operator's, shared by everyone. So the proxy records
whose each id is and keeps the rest out:

- **Recorded.** A passed ``POST /v1/responses`` answered with an id (a JSON
  answer's top-level ``id``; a stream's ``response.created`` or later event's
  ``response.id``) is the caller's (:func:`recorded`). The owner is the person
  the call was served as: a personal token's owner, or the member a team key
  named (``edge.team_caller``), not the key. The response holds that person's
  words, and a team gateway names the member on every call (a team key's
  ``GET`` without one is already a 400), so the member's own later calls, by
  the key or their own token, find it, and another member's do not; a member
  who leaves the team keeps theirs. Canned answers are never stored upstream
  (``store: false``) and neither is a create that says ``store: false``:
  nothing is recorded for them.
- **Refused.** A ``GET`` / ``DELETE`` of an id, or a forwarded create naming
  it as ``previous_response_id``, whose owner is someone else or nobody
  (never made here, made before owners were recorded, deleted, pruned) is
  answered as the upstream answers an id it does not know (:func:`unknown`,
  :func:`unknown_previous`) and nothing goes upstream: whether an id exists
  does not leak. A call sent with the caller's own provider credential
  (``forward.own_credential``) is not checked: its ids live in the caller's
  own upstream account, and the upstream checks them itself.

When it is written: never before the upstream is asked (a passed call has
no database round trip more before it goes). The id is seen as the answer
passes; the write starts at once on a pooled thread, and the relay does not
end (the client does not see the answer's end) before it is committed, so a
client that reads the answer and then asks for the id, from any server
process, finds it. Until it is committed, this process's own lookups find
the id among the pending ones (:data:`_pending`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any

from curfew_client.openai_shapes import error_body
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

from curfew_core.edge.dialects import labelled
from curfew_core.edge.threads import run_sync
from curfew_core.engine import Verdict
from curfew_core.proxy import upstream
from curfew_core.proxy.stream_lines import StreamLines
from curfew_core.selectors.stored_responses import response_owner
from curfew_core.services.stored_responses import stored_response_forget, stored_response_record

log = logging.getLogger("curfew.proxy")

#: A JSON answer whose head does not name its id is parsed whole, up to this.
MAX_JSON_SCAN = 4 * 2**20
#: The events whose ``response`` carries the id (the first one found wins).
_ID_EVENTS = (b'"response.created"', b'"response.in_progress"', b'"response.completed"')
#: ``{"id": "resp_…"`` at the head of a JSON answer (OpenAI names it first).
_HEAD_ID = re.compile(rb'\A\s*\{\s*"id"\s*:\s*"([^"\\]{1,256})"')

#: Ids seen in an answer whose owner is not committed yet, and whose they are.
#: Read by this process's lookups; emptied as each write ends.
_pending: dict[str, int] = {}
#: The writes under way (held so none is collected before it ends).
_writing: set[asyncio.Task[None]] = set()


# -- the check ------------------------------------------------------------------


async def owns(user_id: int, response_id: str) -> bool:
    """Whether ``response_id`` was made through the proxy by ``user_id``:
    this process's pending records first, then one read."""
    pending = _pending.get(response_id)
    if pending is not None:
        return pending == user_id
    try:
        upstream.response_path(response_id)
    except upstream.UnsafePath:
        return False  # no such id was ever recorded
    return await run_sync(response_owner, response_id) == user_id


def _not_found(
    verdict: Verdict, status: int, message: str, *, param: str | None, code: str | None
) -> HttpResponseBase:
    """OpenAI's own answer to an id it does not know (``type``,
    ``param`` and ``code`` as it sends them), labelled as a refusal is
    (``calls.refused``): nothing was done."""
    body = json.dumps(error_body(message, code=code, param=param)).encode()
    response = labelled(HttpResponse(body, status=status, content_type="application/json"), verdict)
    response["X-Curfew-Action"] = "none"
    return response


def unknown(verdict: Verdict, response_id: str) -> HttpResponseBase:
    """``GET`` / ``DELETE`` of an id that is not the caller's: OpenAI's 404."""
    return _not_found(
        verdict, 404, f"Response with id '{response_id}' not found.", param=None, code=None
    )


def unknown_previous(verdict: Verdict, response_id: str) -> HttpResponseBase:
    """A create continuing a response that is not the caller's: OpenAI's 400."""
    return _not_found(
        verdict,
        400,
        f"Previous response with id '{response_id}' not found.",
        param="previous_response_id",
        code="previous_response_not_found",
    )


def previous_of(body: Mapping[str, Any]) -> str | None:
    """The id a create continues (``previous_response_id``), if it names one."""
    previous = body.get("previous_response_id")
    return previous if isinstance(previous, str) else None


def stored(body: Mapping[str, Any]) -> bool:
    """Whether the upstream keeps the response a create makes (``store``
    defaults to true)."""
    return body.get("store", True) is not False


# -- the record -----------------------------------------------------------------


class IdScan:
    """Feed it a create's answer; ``found`` is then its response id, or ``None``."""

    def __init__(self, *, sse: bool) -> None:
        self.sse = sse
        self.found: str | None = None
        #: An event stream's lines (one past ``stream_lines.MAX_LINE``: skipped).
        self._lines = StreamLines()
        self._body: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if self.found is not None:
            return
        if not self.sse:
            self._size += len(chunk)
            if self._size <= MAX_JSON_SCAN:
                self._body.append(chunk)
                if len(self._body) == 1 or self._size - len(chunk) < 1024:
                    head = _HEAD_ID.match(b"".join(self._body)[:1024])
                    if head is not None:
                        self._set(head.group(1).decode("utf-8", "replace"))
            return
        for line in self._lines.feed(chunk):
            self._line(line)
            if self.found is not None:
                return

    def finish(self) -> str | None:
        """The id, the whole answer seen (a JSON answer that did not name it first)."""
        if self.found is None and not self.sse and self._body and self._size <= MAX_JSON_SCAN:
            try:
                answer = json.loads(b"".join(self._body))
            except ValueError:
                answer = None
            if isinstance(answer, dict) and isinstance(answer.get("id"), str):
                self._set(answer["id"])
        if self.found is None and self.sse:
            self._line(self._lines.take_rest())
        self._body = []
        return self.found

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:") or not any(name in line for name in _ID_EVENTS):
            return
        try:
            event = json.loads(line[5:])
        except ValueError:
            return
        response = event.get("response") if isinstance(event, dict) else None
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            self._set(response["id"])

    def _set(self, response_id: str) -> None:
        try:
            upstream.response_path(response_id)
        except upstream.UnsafePath:
            return  # no later call could name it: nothing to record
        self.found = response_id


def _start(response_id: str, user_id: int) -> asyncio.Task[None]:
    """The write of ``response_id``'s owner, under way; pending until it ends."""
    _pending[response_id] = user_id
    task = asyncio.ensure_future(_write(response_id, user_id))
    _writing.add(task)
    task.add_done_callback(_writing.discard)
    return task


async def _write(response_id: str, user_id: int) -> None:
    try:
        await run_sync(
            partial(
                stored_response_record,
                response_id=response_id,
                user_id=user_id,
                at=timezone.now(),
            )
        )
    except Exception:  # an outage: the id is nobody's (refused), never someone else's
        log.warning(
            "stored response: its owner could not be recorded; the id will be refused",
            exc_info=True,
        )
    finally:
        _pending.pop(response_id, None)


def recorded(response: HttpResponseBase, user_id: int) -> HttpResponseBase:
    """A passed create's answer, relayed as it comes, its response id recorded
    as ``user_id``'s once seen; the relay ends only once that is committed.
    Anything but a relayed success (an error, an outage) records nothing."""
    if (
        not isinstance(response, StreamingHttpResponse)
        or not response.is_async
        or response.status_code >= 300
    ):
        return response
    scan = IdScan(sse="text/event-stream" in response.get("Content-Type", ""))
    inner: AsyncIterator[bytes] = response._iterator  # type: ignore[attr-defined]

    async def relayed() -> AsyncIterator[bytes]:
        writing: asyncio.Task[None] | None = None
        try:
            async for chunk in inner:
                if writing is None:
                    scan.feed(chunk)
                    if scan.found is not None:
                        writing = _start(scan.found, user_id)
                yield chunk
        finally:
            # The upstream's connection and slot first (a relay cut short
            # holds them no longer than before), then the owner's write.
            aclose = getattr(inner, "aclose", None)
            if aclose is not None:
                await aclose()
            if writing is None:
                found = scan.finish()
                if found is not None:
                    writing = _start(found, user_id)
            if writing is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(writing)

    response.streaming_content = relayed()
    return response


async def forget(response_id: str) -> None:
    """The upstream deleted ``response_id``: nobody owns it any more."""
    _pending.pop(response_id, None)
    try:
        await run_sync(partial(stored_response_forget, response_id=response_id))
    except Exception:  # the record stays until the prune: it names a deleted response
        log.warning("stored response: a deleted response's owner could not be forgotten")
