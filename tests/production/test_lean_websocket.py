"""bin/serve's WebSocket protocol keeps uvicorn's behaviour with less per socket
(``curfew_site/serve.py``); the served suites (``test_multi_process``) run it whole."""

from __future__ import annotations

import asyncio

from curfew_site.serve import Flag, Inbox


async def test_the_inbox_hands_messages_over_in_order_and_wakes_its_reader():
    inbox = Inbox()
    assert inbox.empty()
    reader = asyncio.ensure_future(inbox.get())
    await asyncio.sleep(0)
    assert not reader.done()
    inbox.put_nowait({"type": "websocket.connect"})
    inbox.put_nowait({"type": "websocket.disconnect"})
    assert await asyncio.wait_for(reader, 1) == {"type": "websocket.connect"}
    assert not inbox.empty()
    assert await inbox.get() == {"type": "websocket.disconnect"}
    assert inbox.empty()
    assert inbox.items is None, "an empty inbox holds no deque"


async def test_a_cancelled_read_loses_nothing():
    inbox = Inbox()
    reader = asyncio.ensure_future(inbox.get())
    await asyncio.sleep(0)
    reader.cancel()
    await asyncio.sleep(0)
    inbox.put_nowait("kept")
    assert await asyncio.wait_for(inbox.get(), 1) == "kept"


async def test_the_flag_holds_writers_while_cleared_and_releases_them_on_set():
    flag = Flag()
    flag.set()
    await asyncio.wait_for(flag.wait(), 1)  # set: no wait
    flag.clear()
    writers = [asyncio.ensure_future(flag.wait()) for _ in range(2)]
    await asyncio.sleep(0)
    assert not any(writer.done() for writer in writers)
    flag.set()
    await asyncio.wait_for(asyncio.gather(*writers), 1)
    assert flag.waiters is None
