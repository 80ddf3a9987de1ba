"""The capsule's optional 24-hour band (``band=24h``): sent only to capsules that
ask, drawn by the settings page's own selector (``selectors.web.band_day``), and
pushed again when the day or the schedule changes."""

from __future__ import annotations

import asyncio
import json
from datetime import date, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.realtime import states
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.web import CELLS_PER_DAY, band_day
from curfew_core.services.schedules import schedule_update
from curfew_core.vocabulary import state_names
from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import (
    band_cells as cells,
)
from tests.realtime.conftest import (
    embed_token,
    local,
    next_state,
    open_live,
    session_cookie,
    socket,
)

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


def page_cells(user: User, day: date) -> list[str]:
    """The states of the settings page's band for ``day`` (the selector it draws)."""
    return [cell.state for cell in band_day(bundle_for(user.pk).schedule, day).cells]


def save(user: User, **changes: Any) -> None:
    schedule_update(user=user, changes=changes, source="test")


async def test_a_capsule_that_asks_gets_the_pages_band(user, set_clock):
    set_clock(local("2026-09-29 10:00"))  # a Tuesday
    comm = socket(token=await db(embed_token)(user), query="band=24h")
    payload = await open_live(comm)
    await comm.disconnect()
    band = payload["band"]
    assert band["date"] == "2026-09-29"
    assert band["step"] == 15
    assert len(cells(band)) == CELLS_PER_DAY == 96
    assert cells(band) == await db(page_cells)(user, date(2026, 9, 29))
    # The default Tuesday: winding from midnight, lights out 03-09, peak hours off duty.
    assert [state for state, _ in band["runs"]] == [
        "winding",
        "lights-out",
        "off-duty",
        "on-duty",
        "off-duty",
        "on-duty",
        "winding",
    ]
    # Every state in it is named as the page's legend names it.
    assert band["names"] == {state: state_names(state) for state, _ in band["runs"]}
    # Small: the runs, not 96 spelled-out states.
    assert len(json.dumps(band, ensure_ascii=False).encode()) < 600


async def test_a_capsule_that_does_not_ask_gets_no_band(user, set_clock):
    set_clock(local("2026-09-29 10:00"))
    raw = await db(embed_token)(user)
    for query in ("", "band=", "band=12h"):
        comm = socket(token=raw, query=query)
        payload = await open_live(comm)
        await comm.disconnect()
        assert "band" not in payload, query
        assert payload["state"] == "off-duty"


async def test_sockets_sharing_one_read_each_get_what_they_asked_for(user, set_clock, monkeypatch):
    set_clock(local("2026-09-29 10:00"))
    reads: list[bool] = []
    real = states.read_states

    def counting(asks: list[states.Ask], **kwargs: Any) -> Any:
        reads.extend(ask.band for ask in asks)
        return real(asks, **kwargs)

    monkeypatch.setattr(states, "read_states", counting)
    mine, plain = await asyncio.gather(
        states.capsule_state(user_id=user.pk, token=None, band=True),
        states.capsule_state(user_id=user.pk, token=None),
    )
    assert mine is plain, "one flight, one read"
    assert reads == [True]
    assert "band" in json.loads(mine.text_for(band=True))
    assert "band" not in json.loads(plain.text_for(band=False))
    # A flight nobody asked the band of reads none.
    alone = await states.capsule_state(user_id=user.pk, token=None)
    assert reads == [True, False]
    assert alone.band_text is None


async def test_a_signed_in_capsule_can_ask_too(user, set_clock):
    set_clock(local("2026-09-29 10:00"))
    comm = socket(cookie=await db(session_cookie)(user), query="band=24h")
    payload = await open_live(comm)
    await comm.disconnect()
    assert payload["band"]["date"] == "2026-09-29"


async def test_the_next_days_band_is_pushed_at_midnight(user, set_clock):
    """The clock stands 1.5 s before midnight until the capsule has told its first
    state, then a millisecond before it for longer than the socket's timer (1.5 s
    of real time) takes to come due: a timer set for an earlier instant would
    push Friday's band then. Then it stands at midnight: the timer wakes to it
    whatever the setup cost. A clock running from before the setup gave
    Saturday's band first when the token and the connect took longer than 1.5 s."""
    # Friday night to Saturday: Saturday has no peak hours (a weekend valley).
    midnight = local("2026-09-12 00:00")
    set_clock(midnight - timedelta(seconds=1.5))
    comm = socket(token=await db(embed_token)(user), query="band=24h")
    first = await open_live(comm)
    assert first["band"]["date"] == "2026-09-11"
    assert "off-duty" in cells(first["band"])
    # The held clock leaves no budget step between: the next change is the day's.
    assert first["valid_until"] == midnight.isoformat()
    set_clock(midnight - timedelta(milliseconds=1))
    assert await comm.receive_nothing(timeout=2)
    set_clock(midnight)
    pushed = await next_state(comm, timeout=4)
    await comm.disconnect()
    assert pushed["band"]["date"] == "2026-09-12"
    assert "off-duty" not in cells(pushed["band"])
    assert cells(pushed["band"]) == await db(page_cells)(user, date(2026, 9, 12))


async def test_a_save_pushes_the_new_band(user, set_clock):
    set_clock(local("2026-09-29 10:00"))
    comm = socket(token=await db(embed_token)(user), query="band=24h")
    first = await open_live(comm)
    assert "off-duty" in cells(first["band"])
    await db(save)(user, peak_shift=False)
    pushed = await next_state(comm)
    await comm.disconnect()
    assert "off-duty" not in cells(pushed["band"])
    assert cells(pushed["band"]) == await db(page_cells)(user, date(2026, 9, 29))


async def test_the_band_is_the_day_in_the_schedules_own_zone(user, set_clock):
    set_clock(local("2026-09-29 03:00"))  # Tuesday in Shanghai, Monday 21:00 in Berlin
    assert schedule_config.default_config()["timezone"] == "Asia/Shanghai"
    await db(save)(user, timezone="Europe/Berlin")
    comm = socket(token=await db(embed_token)(user), query="band=24h")
    payload = await open_live(comm)
    await comm.disconnect()
    assert payload["band"]["date"] == "2026-09-28"
    assert cells(payload["band"]) == await db(page_cells)(user, date(2026, 9, 28))


# -- the HTTP doors ---------------------------------------------------------------


def _poll(user: User, **params: str) -> Any:
    return Client().get("/embed/state", {"token": embed_token(user), **params})


@pytest.mark.django_db
def test_polling_carries_the_band_only_when_asked(user: User, set_clock: Any) -> None:
    set_clock(local("2026-09-29 10:00"))
    asked = _poll(user, band="24h")
    assert asked.status_code == 200
    assert asked.json()["band"]["date"] == "2026-09-29"
    assert "band" not in _poll(user).json()
    bad = _poll(user, band="7d")
    assert bad.status_code == 400
    assert "band must be one of 24h" in bad.json()["message"]
    assert bad["Access-Control-Allow-Origin"] == "*"


@pytest.mark.django_db
def test_the_iframe_page_passes_the_band_on(user: User) -> None:
    raw = embed_token(user)
    page = Client().get("/embed/capsule/", {"token": raw, "band": "24h"})
    assert page.status_code == 200
    assert 'data-band="24h"' in page.content.decode()
    plain = Client().get("/embed/capsule/", {"token": raw})
    assert "data-band" not in plain.content.decode()
    bad = Client().get("/embed/capsule/", {"token": raw, "band": "week"})
    assert bad.status_code == 400
    assert "band must be one of 24h, not &#x27;week&#x27;" in bad.content.decode()
