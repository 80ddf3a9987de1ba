"""An answer over ASGI: whole or streamed, with the head's headers, and the
request's end however it comes (the last byte, the client going away, a
failure mid-stream).

Handlers answer with Django's response objects (``HttpResponse``, or
``StreamingHttpResponse`` over an async iterator for a relayed upstream
answer or the change stream): they are plain containers here, no handler
or middleware of Django's runs. Their resource closers run when the answer is
over, whatever ended it (``finish``): that is where a relayed call gives back
its upstream slot and records its ledger entry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from django.http.response import HttpResponseBase, StreamingHttpResponse

from curfew_core.edge.scope import Headers, Message
from curfew_core.store.memos import LRU

Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Answer:
    """A whole answer without Django's response object, for the routes that
    answer thousands of times a second (``api.hot``): sent exactly as an
    ``HttpResponse(content, content_type=..., status=...)`` is (its content
    type, then the head's headers), without building one (a tenth of a warm
    verdict went to making the ``HttpResponse`` and reading its headers back)."""

    __slots__ = ("content", "content_type", "status_code")
    streaming = False

    def __init__(
        self, content: bytes, content_type: str = "application/json", status: int = 200
    ) -> None:
        self.content = content
        self.content_type = content_type
        self.status_code = status


#: An ``Answer``'s headers per content type and head (a handful of each), by
#: the head's headers object itself (a head's are made once, ``edge.heads``:
#: hashing the pairs anew per answer was most of this), kept with it so that
#: its ``id`` is not reused while the entry stands. Bounded, least recently
#: used (issue 40); written on the event loop only.
_ANSWER_HEADS_KEPT = 256
_answer_heads: LRU[tuple[str, int], tuple[tuple[tuple[bytes, bytes], ...], Headers]] = LRU(
    maxsize=_ANSWER_HEADS_KEPT
)


def head_of_answer(answer: Answer, extra: tuple[tuple[bytes, bytes], ...]) -> Headers:
    key = (answer.content_type, id(extra))
    found = _answer_heads.get(key)
    if found is not None and found[0] is extra:
        return found[1]
    own = (b"content-type", answer.content_type.encode("latin-1"))
    headers = [own, *(pair for pair in extra if pair[0] != b"content-type")]
    _answer_heads[key] = (extra, headers)
    return headers


#: Header names as sent (lower case, encoded), by their name in a response: a
#: few dozen names, written on every answer.
_names: dict[str, bytes] = {}


def _name(name: str) -> bytes:
    raw = _names.get(name)
    if raw is None:
        raw = name.lower().encode("latin-1")
        if len(_names) < 1024:
            _names[name] = raw
    return raw


def head_of(response: HttpResponseBase, extra: tuple[tuple[bytes, bytes], ...]) -> Headers:
    """The answer's headers, then each of ``extra`` it did not set itself."""
    headers = [(_name(name), str(value).encode("latin-1")) for name, value in response.items()]
    if extra:
        own = {name for name, _ in headers}
        headers.extend(pair for pair in extra if pair[0] not in own)
    return headers


_nothing = contextlib.nullcontext()


async def send_whole(
    send: Send, status: int, headers: Headers, content: bytes, *, close: bool = False
) -> None:
    """A whole answer with its length (``close``: the body was not read)."""
    headers = [*headers, (b"content-length", str(len(content)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def send_response(
    send: Send,
    response: HttpResponseBase | Answer,
    extra: tuple[tuple[bytes, bytes], ...] = (),
    *,
    close: bool = False,
) -> None:
    """``response`` over ASGI, then closed (a stream chunk by chunk as it comes)."""
    if isinstance(response, Answer):
        head = head_of_answer(response, extra)
        await send_whole(send, response.status_code, head, response.content, close=close)
        return
    try:
        headers = head_of(response, extra)
        if not response.streaming:
            await send_whole(
                send,
                response.status_code,
                headers,
                response.content,  # type: ignore[attr-defined]
                close=close,
            )
            return
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        if isinstance(response, StreamingHttpResponse) and response.is_async:
            # The iterator itself, not ``streaming_content``'s wrapping of it
            # (a generator more per chunk, to check it is bytes: done here).
            # Closed however the answer ends (the client gone, a failure): the
            # relay's own ``finally`` gives back what it holds upstream.
            chunks: Any = response._iterator  # type: ignore[attr-defined]
            make_bytes = response.make_bytes
            closing = contextlib.aclosing(chunks) if hasattr(chunks, "aclose") else _nothing
            async with closing:
                async for chunk in chunks:
                    body = chunk if chunk.__class__ is bytes else make_bytes(chunk)
                    await send({"type": "http.response.body", "body": body, "more_body": True})
        else:
            chunks = response.streaming_content  # type: ignore[attr-defined]
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        finish(response)


def finish(response: HttpResponseBase) -> None:
    """``response.close()`` without Django's ``request_finished`` signal.

    The closers run (a relay's upstream slot, its ledger entry) and the
    response is marked closed, as ``close`` does; the signal is not sent: an
    edge answer is no Django request, and its receivers (closing this thread's
    database connections, every cache's, resetting the URLconf, each through
    asgiref's context-local storage) tidy after work the event loop never
    does. They cost a tenth of a warm verdict. The sync work that does touch
    the database sends both request signals around itself (``edge.threads``).
    """
    closers: list[Any] = response._resource_closers  # type: ignore[attr-defined]
    for closer in closers:
        # As Django's ``close``: a closer's failure is its own (no ``suppress``
        # object made per closer, per answer).
        try:  # noqa: SIM105
            closer()
        except Exception:  # noqa: S110
            pass
    closers.clear()
    response.closed = True


async def until_disconnect(receive: Receive) -> None:
    """Return when the client goes away (the body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def cancelled_on_disconnect(receive: Receive, work: Awaitable[None]) -> None:
    """Run ``work`` (make and send an answer), cancelled if the client goes away
    first: a long answer (an upstream call, a stream) stops when nobody reads
    it, and its ``close`` gives back what it held.

    ``work`` runs in this task, with one task beside it listening for the
    client's hang-up (not a task for each and a wait on both: a passed proxy
    call's own CPU went to that as much as to its judgment)."""
    task = asyncio.current_task()
    assert task is not None
    gone = False
    over = False

    async def listen() -> None:
        nonlocal gone
        try:
            await until_disconnect(receive)
        finally:
            # Gone, or the server's receive failed: nobody is reading either way.
            if not over:
                gone = True
                task.cancel()

    listener = asyncio.ensure_future(listen())
    try:
        await work
    except asyncio.CancelledError:
        # Ours when the client left; a cancellation from outside (the server
        # shutting down) is the caller's, and stands.
        if not gone or task.uncancel() > 0:
            raise
    finally:
        over = True
        listener.cancel()
