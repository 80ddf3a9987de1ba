"""The ASGI lifespan: a server's stop writes what its process noted.

The ledger's decisions and the tokens' last uses are written in batches by
background threads (``services.ledger_recorder``, ``selectors.tokens``). When
a process manager stops the server (SIGTERM), uvicorn drains its requests and
then dies of the re-raised signal, where no exit hook runs: a batch still
being written by then was lost (a write waiting on SQLite's one writer, say).
A lifespan ``shutdown`` comes after the last request is answered and before
that end, so both batches are written here and the server waits for them
(``tests/production/test_token_use_at_stop.py`` holds the database's write
lock across the stop to prove it).

Servers without the lifespan protocol (Daphne) keep the older net: the stop
signal wakes both writers at once (their ``_watch_stop_signals``).

The stop waits at most ``STOP_WRITE_SECONDS`` for them: a database that
accepts and never answers must not hold a process manager's stop for ever
(what is still unwritten then is said in the log).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from curfew_core.selectors import tokens
from curfew_core.services import ledger_recorder

Message = dict[str, Any]

log = logging.getLogger(__name__)

#: How long a stop waits for the last writes.
STOP_WRITE_SECONDS = 10.0


def write_what_is_noted() -> None:
    """The ledger's buffered decisions, then the tokens' noted uses, now, on
    this thread (each logs its own failure and keeps its rows)."""
    ledger_recorder.flush_quietly()
    tokens.flush_used_quietly()


async def lifespan(
    scope: Message,
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """The ``lifespan`` scope: nothing to do at start; at the end, the writes
    (on a thread: Django refuses database calls on the event loop's), for at
    most ``STOP_WRITE_SECONDS``."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            try:
                await asyncio.wait_for(_on_a_thread(write_what_is_noted), STOP_WRITE_SECONDS)
            except TimeoutError:
                log.warning(
                    "stop: the last ledger and token-use writes did not finish in %s s; "
                    "the process ends without them",
                    STOP_WRITE_SECONDS,
                )
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _on_a_thread(work: Callable[[], object]) -> None:
    """``work()`` on a daemon thread of its own, awaited. Not the loop's
    executor (``asyncio.to_thread``): the loop's end joins those threads,
    so a write past the bound would still have held the process."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def run() -> None:
        try:
            work()
        finally:
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                loop.call_soon_threadsafe(_settle, done)

    threading.Thread(target=run, name="curfew-stop-writes", daemon=True).start()
    await done


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
