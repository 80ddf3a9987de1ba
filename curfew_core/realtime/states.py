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
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async

from curfew_core.realtime import access, clock, timers
from curfew_core.selectors.bundles import UserBundle, bundle_for, bundles_for
from curfew_core.selectors.tokens import TokenIdentity, identify_many
from curfew_core.selectors.verdicts import CAPSULE_BAND, bundle_capsule_payload

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
#: Flights boarding on each loop in this turn, launched together on its next.
_departing: dict[asyncio.AbstractEventLoop, list[_Flight]] = {}
#: Launched reads, held so the loop does not drop them half-way.
_running: set[asyncio.Task[None]] = set()

#: Flights launched in one turn are read in hops of at most this many: a
#: team's schedule change wakes every member's capsules in one turn (issue 26),
#: and their rows, tokens and active flags are read together (``read_states``).
#: A hop stays bounded so the first answers are not held back by the last reads.
FLIGHTS_PER_HOP = 512


@dataclass(frozen=True, slots=True)
class Ask:
    """One user's read: the embed tokens of the sockets waiting for it, and
    whether one of them shows the band."""

    user_id: int
    tokens: frozenset[str] = frozenset()
    band: bool = False


def read_states(asks: list[Ask], *, now: datetime) -> list[CapsuleState | Exception]:
    """Each ask's state at ``now``, in ask order, or its error (one that fails
    fails alone).

    Several asks are read together: one cache read and at most one query per
    table for all their rows, tokens and active flags, and one payload for the
    users whose rows give the same state (a team's members on the defaults).
    If reading them together fails (an outage), each is read alone, so each
    keeps its own fall-back (its last known rows) and its own error.
    """
    if len(asks) > 1:
        try:
            return _read_together(asks, now)
        except Exception:
            log.warning("capsule: %s states could not be read together", len(asks), exc_info=True)
    return [_read_alone(ask, now) for ask in asks]


def _read_alone(ask: Ask, now: datetime) -> CapsuleState | Exception:
    try:
        identities = identify_many(ask.tokens, kind="embed")
        return _state_of(
            bundle_for(ask.user_id), ask, now, identities, access.user_active(ask.user_id), {}
        )
    except Exception as exc:
        return exc


def _read_together(asks: list[Ask], now: datetime) -> list[CapsuleState | Exception]:
    user_ids = list(dict.fromkeys(ask.user_id for ask in asks))
    bundles = bundles_for(user_ids)
    identities = identify_many({raw for ask in asks for raw in ask.tokens}, kind="embed")
    active = access.users_active(user_ids)
    shared: dict[tuple[Any, ...], tuple[dict[str, Any], str, str | None]] = {}
    out: list[CapsuleState | Exception] = []
    for ask in asks:
        try:
            state = _state_of(
                bundles[ask.user_id], ask, now, identities, active[ask.user_id], shared
            )
        except Exception as exc:
            log.warning(
                "capsule: the state of user %s could not be read", ask.user_id, exc_info=True
            )
            out.append(exc)
        else:
            out.append(state)
    return out


def _state_of(
    bundle: UserBundle,
    ask: Ask,
    now: datetime,
    identities: dict[str, TokenIdentity | None],
    active: bool,
    shared: dict[tuple[Any, ...], tuple[dict[str, Any], str, str | None]],
) -> CapsuleState:
    # The payload is a function of the instant and these, never of the user's id
    # or version: users whose rows say the same share it, encoded once.
    key = (
        id(bundle.schedule),
        bundle.overrides,
        bundle.team_id,
        id(bundle.team),
        bundle.overtime_from,
        ask.band,
    )
    texts = shared.get(key)
    if texts is None:
        payload = bundle_capsule_payload(bundle, now=now, band=ask.band)
        plain = {name: value for name, value in payload.items() if name != CAPSULE_BAND}
        texts = shared[key] = (
            plain,
            json.dumps(plain, ensure_ascii=False),
            json.dumps(payload, ensure_ascii=False) if ask.band else None,
        )
    refused = set()
    for raw in ask.tokens:
        identity = identities.get(raw)
        if identity is None or identity.user_id != ask.user_id:
            refused.add(raw)
    plain, text, band_text = texts
    return CapsuleState(plain, text, frozenset(refused), active=active, band_text=band_text)


async def _read_hop(asks: list[Ask], now: datetime) -> list[CapsuleState | Exception]:
    """``read_states`` in the database thread; a hop that never ran is each ask's error."""
    try:
        read: list[CapsuleState | Exception] = await database_sync_to_async(read_states)(
            asks, now=now
        )
    except Exception as exc:
        return [exc] * len(asks)
    return read


async def _fly(waiting: Sequence[_Flight | _Prepared], now: datetime | None) -> None:
    """Read for flights (``now``: ``None``, the moment the hop runs) or for reads
    prepared for an instant, and end each one's future with its state or error
    (a flight's joiners then close 1011; a prepared read's sockets read afresh)."""
    asks = [Ask(read.user_id, frozenset(read.tokens), read.band) for read in waiting]
    states = await _read_hop(asks, clock.now() if now is None else now)
    for read, state in zip(waiting, states, strict=True):
        if isinstance(state, Exception):
            read.future.set_exception(state)
        else:
            read.future.set_result(state)


def _launch_hops(
    loop: asyncio.AbstractEventLoop,
    waiting: Sequence[_Flight | _Prepared],
    now: datetime | None = None,
) -> None:
    """``_fly`` for ``waiting`` in hops of ``FLIGHTS_PER_HOP``, held until done."""
    for start in range(0, len(waiting), FLIGHTS_PER_HOP):
        task = loop.create_task(_fly(waiting[start : start + FLIGHTS_PER_HOP], now))
        _running.add(task)
        task.add_done_callback(_running.discard)


def _board(flight: _Flight) -> None:
    """Launch ``flight`` on its loop's next turn, with every flight boarding in this one."""
    waiting = _departing.get(flight.loop)
    if waiting is None:
        waiting = _departing[flight.loop] = []
        # The next turn: every socket woken by the same event joins first.
        flight.loop.call_soon(_launch, flight.loop)
    waiting.append(flight)


def _launch(loop: asyncio.AbstractEventLoop) -> None:
    flights = _departing.pop(loop, [])
    for flight in flights:
        if _boarding.get(flight.user_id) is flight:
            del _boarding[flight.user_id]
    _launch_hops(loop, flights)


async def shared_state(*, user_id: int, tokens: Iterable[str], band: bool) -> CapsuleState:
    """The state read after this call began, for sockets holding ``tokens`` (see
    ``CapsuleState.refused``); with ``band`` its ``band_text`` holds the day's band."""
    loop = asyncio.get_running_loop()
    flight = _boarding.get(user_id)
    if flight is None or flight.loop is not loop:
        flight = _Flight(user_id, loop, loop.create_future())
        _boarding[user_id] = flight
        _board(flight)
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
    started: bool = False

    def covers(self, tokens: Iterable[str], band: bool) -> bool:
        return (self.band or not band) and self.tokens.issuperset(tokens)


@dataclass(eq=False)
class _Wake:
    """The reads prepared for one instant on one loop: one timer starts them all,
    read together (a team's members share their boundaries), and one ends them."""

    entries: dict[int, _Prepared]
    #: Their reads' start, then (once started) the entries' removal.
    handle: asyncio.TimerHandle | None = None
    #: The reads began: a read prepared now for the instant needs a group of its own.
    started: bool = False


#: One prepared read per user (the next boundary of their sockets).
_prepared: dict[int, _Prepared] = {}
#: The prepared reads by the loop and instant they are for.
_wakes: dict[tuple[asyncio.AbstractEventLoop, datetime], _Wake] = {}


def prepare(*, user_id: int, tokens: Iterable[str], band: bool, wake: datetime) -> None:
    """Read ``user_id``'s state for ``wake`` shortly before it (``AHEAD``), for the
    sockets holding ``tokens`` that wake then (``burst_states``)."""
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
    key = (loop, wake)
    group = _wakes.get(key)
    if group is None or group.started:
        group = _wakes[key] = _Wake({})
        delay = (wake - AHEAD - clock.now()).total_seconds()
        group.handle = loop.call_later(max(0.0, delay), _start, key, group)
    group.entries[user_id] = prepared


def _consume(future: asyncio.Future[CapsuleState]) -> None:
    if not future.cancelled():
        future.exception()


def _start(key: tuple[asyncio.AbstractEventLoop, datetime], group: _Wake) -> None:
    loop, wake = key
    live = [
        prepared
        for user_id, prepared in group.entries.items()
        if _prepared.get(user_id) is prepared
    ]
    group.entries = {prepared.user_id: prepared for prepared in live}
    if not live:
        if _wakes.get(key) is group:
            del _wakes[key]
        return
    group.started = True
    for prepared in live:
        prepared.started = True
    # Dropped once they can be used no more, whether or not anybody woke for them.
    group.handle = loop.call_later(
        ((wake + FRESH_FOR) - clock.now()).total_seconds(), _end, key, group
    )
    # The instant the alarm fires at: what a read then would see.
    _launch_hops(loop, live, wake + timers.LATE)


def _end(key: tuple[asyncio.AbstractEventLoop, datetime], group: _Wake) -> None:
    if _wakes.get(key) is group:
        del _wakes[key]
    for prepared in group.entries.values():
        if _prepared.get(prepared.user_id) is prepared:
            del _prepared[prepared.user_id]


def _drop(prepared: _Prepared) -> None:
    if _prepared.get(prepared.user_id) is prepared:
        del _prepared[prepared.user_id]
    key = (prepared.loop, prepared.wake)
    group = _wakes.get(key)
    if group is None or group.entries.get(prepared.user_id) is not prepared:
        return
    if prepared.started:
        # A read under way still ends its future (whoever awaits it sees the
        # entry gone and reads afresh).
        return
    del group.entries[prepared.user_id]
    if not group.entries:
        # Nobody left to read for at that instant: its timer goes.
        del _wakes[key]
        if group.handle is not None:
            group.handle.cancel()


def changed(user_id: int) -> None:
    """Something of ``user_id`` changed (their socket heard it): a read prepared
    before it may have missed it."""
    prepared = _prepared.get(user_id)
    if prepared is not None:
        _drop(prepared)


def _prepared_for(ask: Ask) -> _Prepared | None:
    """The read prepared for the boundary just passed, if it may serve ``ask``."""
    prepared = _prepared.get(ask.user_id)
    if (
        prepared is not None
        and prepared.started
        and prepared.loop is asyncio.get_running_loop()
        and prepared.covers(ask.tokens, ask.band)
        and prepared.wake <= clock.now() < prepared.wake + FRESH_FOR
    ):
        return prepared
    return None


async def burst_states(asks: list[Ask]) -> AsyncIterator[dict[int, CapsuleState | Exception]]:
    """Each ask's state, for sockets that were open, following their user's
    changes, since before any read prepared for this boundary: yielded in
    parts as they are read, so the first are sent while the rest are read.

    A user's prepared read serves when it fits (the boundary just passed, no
    change heard since it began, the state it read still valid, the same
    tokens and band); the others are read together, in hops of
    ``FLIGHTS_PER_HOP``, each after this call began (``read_states``). A state
    that cannot be read is its user's error alone.
    """
    ready: dict[int, CapsuleState | Exception] = {}
    rest = []
    for ask in asks:
        prepared = _prepared_for(ask)
        if prepared is None:
            rest.append(ask)
            continue
        try:
            # A socket that goes away while waiting must not cancel the others' read.
            state = await asyncio.shield(prepared.future)
        except Exception:
            log.debug("capsule: the prepared read failed; reading again", exc_info=True)
            rest.append(ask)
            continue
        if (
            _prepared.get(ask.user_id) is prepared  # no change heard meanwhile
            and clock.now() < datetime.fromisoformat(state.payload["valid_until"])
        ):
            ready[ask.user_id] = state
        else:
            rest.append(ask)
    if ready:
        yield ready
    for start in range(0, len(rest), FLIGHTS_PER_HOP):
        hop = rest[start : start + FLIGHTS_PER_HOP]
        read = await _read_hop(hop, clock.now())
        yield {ask.user_id: state for ask, state in zip(hop, read, strict=True)}
