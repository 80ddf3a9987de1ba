"""Changes made in another process reach this process's capsules, without Redis.

With Redis every process hears ``user.changed`` through the channel layer. The
in-memory layer (``make run``) is this process's alone: ``manage.py curfew off``
runs in its own process, and its event reaches nobody here. So while this
process has capsules open and its layer is not shared, one watcher task per
process asks the database twice a second what changed: schedules and overrides
by ``updated_at``, revoked tokens by ``revoked_at``, in one bounded query. For
each change it did not make itself it drops this process's cached copy and
tells the user's capsules, as the writer would have. When the last capsule
closes the watcher stops: an idle server asks nothing.

Stamps come from the writer's clock, and a row becomes visible at its commit,
a little after its stamp: every poll looks back ``LOOKBACK`` and remembers what
it already saw, so a slow commit is still caught once and only once.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer, InMemoryChannelLayer
from django.core.cache import cache
from django.utils import timezone

from curfew_core.selectors.changes import Change, recent_changes
from curfew_core.services.events import group_event, user_group
from curfew_core.store.cache_policy import bundle_key, token_key

log = logging.getLogger("curfew.realtime")

#: How often a process with open capsules looks (a change arrives within about this).
POLL_SECONDS = 0.5
#: How far back each poll looks: longer than any write transaction takes to commit.
LOOKBACK = timedelta(seconds=10)
#: Most rows one poll reads; beyond it (a bulk import) every capsule here re-reads.
MAX_ROWS = 500

# -- changes this process made itself (their events went out already) ---------------
_local_lock = threading.Lock()
_local: dict[Change, datetime] = {}


def mark_local(change: Change) -> None:
    """A change saved by this process: its writer tells capsules, the watcher need not."""
    with _local_lock:
        _local[change] = change[2]
        if len(_local) > 4 * MAX_ROWS:
            cutoff = timezone.now() - LOOKBACK
            for key in [key for key, stamp in _local.items() if stamp < cutoff]:
                del _local[key]


def _take_local() -> dict[Change, datetime]:
    with _local_lock:
        taken = dict(_local)
        _local.clear()
    return taken


@dataclass(eq=False)
class Watcher:
    loop: asyncio.AbstractEventLoop
    layer: BaseChannelLayer
    members: set[str] = field(default_factory=set)
    seen: dict[Change, datetime] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def poll(self, *, notify: bool) -> set[int]:
        """One look at the database (sync): the users whose capsules to tell."""
        since = timezone.now() - LOOKBACK
        rows = recent_changes(since, limit=MAX_ROWS + 1)
        self.seen.update(_take_local())
        if len(rows) > MAX_ROWS:
            # Too many at once to sort out: re-read every user with a capsule here.
            # (Other users' cached copies live only seconds without Redis anyway.)
            log.warning("capsule watcher: more than %s changes at once", MAX_ROWS)
            self.seen = {row: row[2] for row in rows}
            users = self.capsule_users()
            for user_id in users:
                cache.delete(bundle_key(user_id))
            return users if notify else set()
        fresh = [row for row in rows if row not in self.seen]
        self.seen.update((row, row[2]) for row in fresh)
        self.seen = {key: stamp for key, stamp in self.seen.items() if stamp > since}
        if not notify:
            return set()
        for table, user_id, _, digest in fresh:
            # This process's cached copy may be up to the local cache bound old.
            cache.delete(bundle_key(user_id))
            if table == "token":
                cache.delete(token_key(digest))
        return {row[1] for row in fresh}

    def capsule_users(self) -> set[int]:
        """Users with a capsule open in this process (the in-memory layer's groups)."""
        prefix = user_group(0)[:-1]
        groups = list(getattr(self.layer, "groups", {}))
        return {int(g[len(prefix) :]) for g in groups if g.startswith(prefix)}

    async def run(self) -> None:
        poll = database_sync_to_async(self.poll)
        try:
            await poll(notify=False)  # what is already there is already on every capsule
        except Exception:
            log.warning("capsule watcher: first look failed", exc_info=True)
        finally:
            self.ready.set()
        failing = False
        while self.members:
            await asyncio.sleep(POLL_SECONDS)
            if not self.members:
                break
            try:
                users = await poll(notify=True)
            except Exception:
                if not failing:  # once per outage, not twice a second
                    log.warning("capsule watcher: database unavailable", exc_info=True)
                failing = True
                continue
            failing = False
            for user_id in users:
                group = user_group(user_id)
                await self.layer.group_send(group, group_event(group, "user.changed"))


#: One watcher per event loop (one per server process; tests get one per test).
_watchers: dict[asyncio.AbstractEventLoop, Watcher] = {}


def needed(layer: Any) -> bool:
    """Only a layer that other processes cannot reach needs watching."""
    return isinstance(layer, InMemoryChannelLayer)


async def enroll(channel_name: str, layer: Any) -> None:
    """A capsule opened: make sure this process watches, and has taken its first look.

    Awaited before the capsule's first read, so a change committed after that
    read is one the watcher has not seen yet, and will report.
    """
    if not needed(layer):
        return
    loop = asyncio.get_running_loop()
    watcher = _watchers.get(loop)
    if watcher is None or watcher.layer is not layer:
        watcher = _watchers[loop] = Watcher(loop, layer)
    watcher.members.add(channel_name)
    if watcher.task is None or watcher.task.done():
        watcher.ready = asyncio.Event()
        # A context of its own: the watcher outlives whoever enrolled first, and
        # an HTTP door (the change stream) enrolls from inside a request whose
        # thread executors shut down when it ends.
        watcher.task = loop.create_task(watcher.run(), context=contextvars.Context())
    await watcher.ready.wait()


def leave(channel_name: str) -> None:
    """A capsule closed; the last one out stops the watcher."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    watcher = _watchers.get(loop)
    if watcher is None:
        return
    watcher.members.discard(channel_name)
    if not watcher.members:
        if watcher.task is not None:
            watcher.task.cancel()
        del _watchers[loop]


def watcher_for_this_loop() -> Watcher | None:
    """The running watcher, for tests and diagnostics."""
    return _watchers.get(asyncio.get_running_loop())
