"""A socket test gives back the database connections its reads borrowed.

On PostgreSQL every read borrows a connection from the process's pool (40).
A capsule reads off the event loop on the loop's own threads
(``thread_sensitive=False``), which end with the test's loop: a connection
they kept was lost to the pool for the rest of the run. Channels' test
communicator kept them (``tests/conftest.py``), one or more per socket test,
and late in a worker's run every read waited 5 s for a connection and failed.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.realtime.conftest import embed_token, open_live, socket

pytestmark = pytest.mark.django_db(transaction=True)


def lent() -> int:
    """Connections the pool has lent and not had back."""
    from django.db import connection

    stats = connection.pool.get_stats()  # type: ignore[attr-defined]  # PostgreSQL's
    return int(stats["pool_size"] - stats["pool_available"])


def pooled() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql" and getattr(connection, "pool", None) is not None


async def test_a_sockets_reads_give_their_connections_back_to_the_pool(
    user: Any, frozen: None
) -> None:
    if not await sync_to_async(pooled)():
        pytest.skip("only PostgreSQL's pool lends connections (DATABASE_URL)")
    token = await sync_to_async(embed_token)(user)
    loop = asyncio.get_running_loop()
    threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="loop-threads")
    loop.set_default_executor(threads)  # the threads of this loop that end with it
    before = await sync_to_async(lent)()
    for _ in range(3):
        comm = socket(token=token)
        await open_live(comm)  # its team is read on the loop's threads
        await comm.disconnect()
    await loop.run_in_executor(None, lambda: None)
    threads.shutdown(wait=True)  # as when the loop closes
    assert await sync_to_async(lent)() <= before, "a connection went with its thread"
