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
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from curfew_core.selectors import tokens
from curfew_core.services import ledger_recorder

Message = dict[str, Any]


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
    (on a thread: Django refuses database calls on the event loop's)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await asyncio.to_thread(write_what_is_noted)
            await send({"type": "lifespan.shutdown.complete"})
            return
