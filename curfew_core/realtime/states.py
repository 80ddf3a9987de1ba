"""What a capsule sends: one read of the state per burst, shared by a user's sockets.

A change fans out to every open capsule of a user at once (one ``user.changed``
message per socket, or one timer per socket at the same boundary). Each socket
asking the database thread on its own costs a thread hop and a computation per
socket, which at a thousand sockets is seconds. Instead the sockets of one user
that ask in the same event-loop turn join one *flight*: a single read, launched
on the next turn, after every joiner had received its event, so it sees every
commit any joiner was told about. A socket that asks after the flight has
started waits for the next one, never reuses an older read.

The 24-hour band (``band=24h``) is read only when a joiner asked for it, and
sent only to those that did (``CapsuleState.band_text``).

A timer push knows its instant in advance: the state is a function of the
instant and the user's rows, so it is read a little *before* the boundary, for
the boundary (``prepare``), and the sockets woken there are sent it at once
instead of waiting for a read (``boundary_state``) - at ten thousand sockets the
read was the first tenth of the push. It is the same read a flight would make,
with two guards: any change heard for the user since the read began drops it
(``changed``; the socket's group message, as for any push), and it is used only
while the boundary is recent and the state it read is still valid.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async

from curfew_core.realtime import access, clock, timers
from curfew_core.selectors.tokens import identify
from curfew_core.selectors.verdicts import CAPSULE_BAND, capsule_payload

log = logging.getLogger("curfew.realtime")

#: How long before a boundary its state is read (``prepare``): longer than a read
#: takes on a busy server, short, as it is also when the user's rows are checked.
AHEAD = timedelta(seconds=1)
#: How long after its boundary a prepared read may still be sent: the timer push
#: comes at once; anything later reads afresh.
FRESH_FOR = timedelta(seconds=2)


@dataclass(frozen=True, slots=True)
class CapsuleState:
    payload: dict[str, Any]
    #: The payload as sent on the wire, encoded once for every socket (no band).
    text: str
    #: Embed tokens among the joiners that are no longer live (revoked, wrong user).
    refused: frozenset[str]
    #: The user is still active (deactivation by any path, a bulk update too, closes
    #: every socket of theirs; see ``access``).
    active: bool = True
    #: The payload with the day's band, for sockets that asked (``None``: none did).
    band_text: str | None = None

    def text_for(self, *, band: bool) -> str:
        return self.band_text if band and self.band_text is not None else self.text


@dataclass(eq=False)
class _Flight:
    user_id: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[CapsuleState]
    tokens: set[str] = field(default_factory=set)
    #: A joiner asked for the band.
    band: bool = False


#: Flights not yet launched, by user. Once launched a flight is off this map.
_boarding: dict[int, _Flight] = {}
#: Launched reads, held so the loop does not drop them half-way.
_running: set[asyncio.Task[None]] = set()


def read_state(
    *, user_id: int, now: datetime, tokens: frozenset[str], band: bool = False
) -> CapsuleState:
    """The state at ``now`` and which of ``tokens`` no longer authorise ``user_id``;
    with ``band``, also the payload with the day's band."""
    refused = set()
    for raw in tokens:
        identity = identify(raw, kind="embed")
        if identity is None or identity.user_id != user_id:
            refused.add(raw)
    payload = capsule_payload(user_id=user_id, now=now, band=band)
    plain = {key: value for key, value in payload.items() if key != CAPSULE_BAND}
    return CapsuleState(
        plain,
        json.dumps(plain, ensure_ascii=False),
        frozenset(refused),
        active=access.user_active(user_id),
        band_text=json.dumps(payload, ensure_ascii=False) if band else None,
    )


async def _fly(flight: _Flight) -> None:
    try:
        state = await database_sync_to_async(read_state)(
            user_id=flight.user_id,
            now=clock.now(),
            tokens=frozenset(flight.tokens),
            band=flight.band,
        )
    except Exception as exc:  # every joiner hears it and closes with 1011
        flight.future.set_exception(exc)
    else:
        flight.future.set_result(state)


def _launch(flight: _Flight) -> None:
    if _boarding.get(flight.user_id) is flight:
        del _boarding[flight.user_id]
    task = flight.loop.create_task(_fly(flight))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def shared_state(*, user_id: int, tokens: Iterable[str], band: bool) -> CapsuleState:
    """The state read after this call began, for sockets holding ``tokens`` (see
    ``CapsuleState.refused``); with ``band`` its ``band_text`` holds the day's band."""
    loop = asyncio.get_running_loop()
    flight = _boarding.get(user_id)
    if flight is None or flight.loop is not loop:
        flight = _Flight(user_id, loop, loop.create_future())
        _boarding[user_id] = flight
        # The next turn: every socket woken by the same event joins first.
        loop.call_soon(_launch, flight)
    flight.tokens.update(tokens)
    if band:
        flight.band = True
    # A socket that goes away while waiting must not cancel the others' read.
    return await asyncio.shield(flight.future)


async def capsule_state(
    *, user_id: int, token: str | None, band: bool = False
) -> CapsuleState | None:
    """The state to send, read after this call began; ``None`` if ``token`` is no longer live.
    With ``band`` its ``band_text`` holds the day's band."""
    tokens = () if token is None else (token,)
    state = await shared_state(user_id=user_id, tokens=tokens, band=band)
    return None if token is not None and token in state.refused else state


# -- reads prepared before a boundary, for the sockets woken at it ----------------------
@dataclass(eq=False)
class _Prepared:
    user_id: int
    loop: asyncio.AbstractEventLoop
    #: The instant the sockets wake at (their alarm's).
    wake: datetime
    tokens: frozenset[str]
    band: bool
    future: asyncio.Future[CapsuleState]
    #: The read's start, or (once started) the entry's removal.
    handle: asyncio.TimerHandle | None = None
    started: bool = False

    def covers(self, tokens: Iterable[str], band: bool) -> bool:
        return (self.band or not band) and self.tokens.issuperset(tokens)


#: One prepared read per user (the next boundary of their sockets).
_prepared: dict[int, _Prepared] = {}


def prepare(*, user_id: int, tokens: Iterable[str], band: bool, wake: datetime) -> None:
    """Read ``user_id``'s state for ``wake`` shortly before it (``AHEAD``), for the
    sockets holding ``tokens`` that wake then (``boundary_state``)."""
    loop = asyncio.get_running_loop()
    tokens = frozenset(tokens)
    held = _prepared.get(user_id)
    if held is not None:
        if held.loop is loop and held.wake == wake:
            if held.covers(tokens, band):
                return
            # Sockets of one user may hold different tokens, or want the band: one
            # read for all of them.
            tokens, band = tokens | held.tokens, band or held.band
            if not held.started:
                held.tokens, held.band = tokens, band
                return
        _drop(held)
    prepared = _Prepared(user_id, loop, wake, tokens, band, loop.create_future())
    # Nobody may ever await it (no socket woke, a change dropped it): no warning then.
    prepared.future.add_done_callback(_consume)
    _prepared[user_id] = prepared
    delay = (wake - AHEAD - clock.now()).total_seconds()
    prepared.handle = loop.call_later(max(0.0, delay), _start, prepared)


def _consume(future: asyncio.Future[CapsuleState]) -> None:
    if not future.cancelled():
        future.exception()


def _start(prepared: _Prepared) -> None:
    prepared.started = True
    # Dropped once it can be used no more, whether or not anybody woke for it.
    prepared.handle = prepared.loop.call_later(
        ((prepared.wake + FRESH_FOR) - clock.now()).total_seconds(), _drop, prepared
    )
    task = prepared.loop.create_task(_read_prepared(prepared))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def _read_prepared(prepared: _Prepared) -> None:
    try:
        state = await database_sync_to_async(read_state)(
            user_id=prepared.user_id,
            # The instant the alarm fires at: what a read then would see.
            now=prepared.wake + timers.LATE,
            tokens=prepared.tokens,
            band=prepared.band,
        )
    except Exception as exc:  # the sockets read afresh instead
        prepared.future.set_exception(exc)
    else:
        prepared.future.set_result(state)


def _drop(prepared: _Prepared) -> None:
    if _prepared.get(prepared.user_id) is prepared:
        del _prepared[prepared.user_id]
    if prepared.handle is not None:
        prepared.handle.cancel()
        prepared.handle = None
    # A read under way still ends its future (whoever awaits it sees the entry
    # gone and reads afresh); one not started is awaited by nobody.


def changed(user_id: int) -> None:
    """Something of ``user_id`` changed (their socket heard it): a read prepared
    before it may have missed it."""
    prepared = _prepared.get(user_id)
    if prepared is not None:
        _drop(prepared)


async def boundary_state(*, user_id: int, tokens: Iterable[str], band: bool) -> CapsuleState:
    """``shared_state`` for sockets that were open, following the user's changes,
    since before the read prepared for this boundary: that read when it fits
    (the boundary just passed, no change heard since it began, the state it read
    still valid, the same tokens and band), else a fresh one."""
    tokens = frozenset(tokens)
    prepared = _prepared.get(user_id)
    if (
        prepared is not None
        and prepared.started
        and prepared.loop is asyncio.get_running_loop()
        and prepared.covers(tokens, band)
        and prepared.wake <= clock.now() < prepared.wake + FRESH_FOR
    ):
        try:
            # A socket that goes away while waiting must not cancel the others' read.
            state = await asyncio.shield(prepared.future)
        except Exception:
            log.debug("capsule: the prepared read failed; reading again", exc_info=True)
        else:
            if (
                _prepared.get(user_id) is prepared  # no change heard meanwhile
                and clock.now() < datetime.fromisoformat(state.payload["valid_until"])
            ):
                return state
    return await shared_state(user_id=user_id, tokens=tokens, band=band)
