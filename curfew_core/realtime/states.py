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
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async

from curfew_core.realtime import access, clock
from curfew_core.selectors.tokens import identify
from curfew_core.selectors.verdicts import CAPSULE_BAND, capsule_payload


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
