"""The page and the capsule say the same thing: one name per state and language,
one progress number, from one declaration (``curfew_core.vocabulary``).

The page is rendered and the capsule asked (by socket and by polling) at the same
frozen instant. 23:30 is 12.5 % of the default night's winding: a half percent,
where rounding rules part ways (Python's ``round`` gives 12, JavaScript's
``Math.round`` 13); the declared rule is floor, so both must say 12.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.vocabulary import STATE_ORDER, progress_percent
from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import embed_token, local, open_live, session_cookie, socket

#: One instant in each state under the default schedule (2026-09-29 is a Tuesday).
INSTANTS = {
    "on-duty": "2026-09-29 20:00",
    "winding": "2026-09-29 23:30",
    "off-duty": "2026-09-29 10:00",
    "lights-out": "2026-09-30 03:00",
}


class Frozen:
    def __init__(self) -> None:
        self.now = local("2026-09-29 20:00")

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def frozen() -> Iterator[Frozen]:
    """One clock for the page (``timezone.now``) and the capsule (``realtime.clock``
    reads ``timezone.now`` through the module)."""
    clock = Frozen()
    with mock.patch("django.utils.timezone.now", side_effect=clock):
        yield clock


def page_html(user: User, language: str = "en") -> str:
    client = Client()
    client.force_login(user)
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def page_percent(text: str) -> int:
    found = re.search(r"(\d+)% of the way through the night", text)
    assert found, "the Now card shows no progress"
    return int(found.group(1))


def legend(text: str) -> dict[str, str]:
    """The band legend's name for each state, as the page shows it."""
    items = re.findall(
        r'<span class="swatch s-([a-z-]+)"[^>]*></span><span class="legend-name">([^<]*)</span>',
        text,
    )
    return {state: html.unescape(name) for state, name in items}


def polled(user: User) -> dict[str, Any]:
    response = Client().get("/embed/state", {"token": embed_token(user)})
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def test_progress_is_floored_to_a_whole_percent() -> None:
    """One rule (``engine.progress_percent``), used by the reason, the page and the capsule."""
    assert progress_percent(0.125) == 12  # round() would say 12, Math.round 13: floor says 12
    assert progress_percent(0.175) == 17  # round() says 18 here
    assert progress_percent(0.29) == 29  # 0.29 * 100 is 28.999999999999996: no point lost
    assert progress_percent(0.9999) == 99  # never 100 while winding goes on
    assert progress_percent(0.0) == 0
    assert progress_percent(1.0) == 100
    assert progress_percent(None) is None


@pytest.mark.django_db
def test_page_and_polled_capsule_show_the_same_percent_at_a_half_percent(
    user: User, frozen: Frozen
) -> None:
    frozen.now = local(INSTANTS["winding"])
    shown = page_percent(page_html(user))
    state = polled(user)
    assert state["state"] == "winding"
    assert state["progress"] == 0.125, "the instant is a half percent (the case that parts rules)"
    assert state["percent"] == shown == 12
    assert "winding 12%" in state["reason"], "the engine's reason rounds the same way"


@pytest.mark.django_db(transaction=True)
async def test_page_and_pushed_capsule_show_the_same_percent(user: User, frozen: Frozen) -> None:
    frozen.now = local(INSTANTS["winding"])
    shown = page_percent(await sync_to_async(page_html)(user))
    comm = socket(cookie=await sync_to_async(session_cookie)(user))
    payload = await open_live(comm)
    await comm.disconnect()
    assert payload["state"] == "winding"
    assert payload["percent"] == shown == 12


@pytest.mark.django_db
@pytest.mark.parametrize("state", STATE_ORDER)
def test_capsule_names_each_state_as_the_page_legend_does(
    user: User, frozen: Frozen, state: str
) -> None:
    frozen.now = local(INSTANTS[state])
    pushed = polled(user)
    assert pushed["state"] == state
    for language, key in (("zh-CN,zh;q=0.9", "zh"), ("en-US", "en")):
        names = legend(page_html(user, language))
        assert set(names) == set(STATE_ORDER), names
        assert pushed["names"][key] == names[state], (language, state)
    assert pushed["names"]["zh"] != pushed["names"]["en"], "the Chinese name is translated"
