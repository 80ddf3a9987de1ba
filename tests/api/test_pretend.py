""" "Pretend it is ..." (the ``debug`` override) from every door: the API's
``duration``, the terminal's ``--for``, the page's form words. It ends by
itself (an hour unless told, a minute to a day), and then it is as if cleared:
the verdict and the state follow the schedule again, with no write."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.http import QueryDict

from curfew_core.engine import OverrideError
from curfew_core.models import Override
from curfew_core.schedules.override_commands import (
    DEFAULT_PRETEND,
    OverrideCommand,
    from_json,
    from_words,
    words_from_form,
)
from curfew_core.selectors.bundles import bundle_for, overrides_active
from tests.api.conftest import FrozenClock, local, stored

OVERRIDES = "/api/v1/overrides"
pytestmark = pytest.mark.django_db(transaction=True)


def post(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(OVERRIDES, body)
    assert response.status_code == 200, response.content
    data: dict[str, Any] = response.json()
    return data


def verdict(api: Any) -> dict[str, Any]:
    response = api.post("/api/v1/verdict", {})
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


def row(user: User) -> tuple[datetime | None, datetime | None]:
    override = Override.objects.get(user=user)
    return override.debug_at, override.debug_until


# -- the API -----------------------------------------------------------------------


def test_the_debug_verb_alone_pretends_for_an_hour(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    body = post(api, {"debug": "01:30"})
    assert row(api.user) == (local("2026-09-30 01:30"), local("2026-09-29 21:00"))
    assert body["state"] == "winding"
    # The state and the verdict hold no longer than the pretend.
    assert datetime.fromisoformat(body["valid_until"]) == local("2026-09-29 21:00")
    answer = verdict(api)
    assert answer["max_tokens"] == 560
    assert datetime.fromisoformat(answer["valid_until"]) == local("2026-09-29 21:00")
    assert answer["max_age"] <= 3600


@pytest.mark.parametrize(
    ("duration", "length"),
    [
        ("15m", timedelta(minutes=15)),
        ("4h", timedelta(hours=4)),
        ("24h", timedelta(hours=24)),
        ("1h30m", timedelta(minutes=90)),
        (1, timedelta(minutes=1)),
        (1440, timedelta(hours=24)),
        ("90", timedelta(minutes=90)),
    ],
)
def test_a_duration_sets_the_end(
    api: Any, clock: FrozenClock, duration: Any, length: timedelta
) -> None:
    clock.set(local("2026-09-29 20:00"))
    post(api, {"debug": "2026-09-30 01:30", "duration": duration})
    assert row(api.user) == (local("2026-09-30 01:30"), clock.now + length)


def test_after_the_end_it_is_as_if_cleared(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    post(api, {"debug": "01:30", "duration": "15m"})
    clock.advance(timedelta(minutes=14, seconds=59))
    assert verdict(api)["state"] == "winding"
    clock.advance(timedelta(seconds=1))
    answer = verdict(api)
    assert (answer["state"], answer["debug_at"]) == ("on-duty", None)
    assert datetime.fromisoformat(answer["at"]) == clock.now
    # The schedule's own next change (23:00), no longer the pretend's end.
    assert datetime.fromisoformat(answer["valid_until"]) == local("2026-09-29 23:00")
    state = api.get("/api/v1/state").json()
    assert (state["state"], state["debug_at"]) == ("on-duty", None)
    # Nothing was written: the row still says what was asked, and when it ended.
    assert row(api.user) == (local("2026-09-30 01:30"), local("2026-09-29 20:15"))


def test_clear_and_auto_end_it_now(api: Any, clock: FrozenClock) -> None:
    for stop in ({"debug": "clear"}, {"auto": True}):
        post(api, {"debug": "01:30", "duration": "4h"})
        body = post(api, stop)
        assert row(api.user) == (None, None)
        assert body["debug_at"] is None


def test_a_refused_duration_names_it_and_changes_nothing(api: Any, clock: FrozenClock) -> None:
    post(api, {"debug": "01:30"})
    before = stored(api.user)
    response = api.post(OVERRIDES, {"debug": "02:00", "duration": "25h"})
    assert response.status_code == 422
    assert response.json()["fields"] == {
        "duration": "'25h' is not a length to pretend for; use e.g. 15m, 1h, 4h or 24h "
        "(from 1 minute to 24 hours)"
    }
    response = api.post(OVERRIDES, {"overtime": "30m", "duration": "1h"})
    assert response.status_code == 400
    assert response.json()["fields"] == {"duration": "duration goes with debug only"}
    assert stored(api.user) == before


def test_the_openapi_document_declares_the_duration(api: Any) -> None:
    schema = api.get("/api/v1/openapi.json").json()["components"]["schemas"]["DebugRequest"]
    assert schema["required"] == ["debug"]
    assert schema["properties"]["duration"]["default"] == "1h"
    assert schema["additionalProperties"] is False


# -- the terminal ------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command("curfew", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_terminal_pretends_for_an_hour_or_for_as_long_as_told(
    user: User, clock: FrozenClock
) -> None:
    clock.set(local("2026-09-29 20:00"))
    run("debug", "01:30", "--user", user.username)
    assert row(user) == (local("2026-09-30 01:30"), local("2026-09-29 21:00"))
    run("debug", "2026-09-29", "23:30", "--for", "4h", "--user", user.username)
    assert row(user) == (local("2026-09-29 23:30"), local("2026-09-30 00:00"))
    # "for" typed as a word works too.
    run("debug", "23:30", "for", "15m", "--user", user.username)
    assert row(user) == (local("2026-09-29 23:30"), local("2026-09-29 20:15"))


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("debug", "01:30", "--for", "25h"), "not a length to pretend for"),
        (("debug", "01:30", "--for", "0m"), "not a length to pretend for"),
        (("debug", "01:30", "--for", "soon"), "not a length to pretend for"),
        (("debug", "01:30", "for"), "one length after"),
        (("debug", "clear", "--for", "1h"), "takes no length"),
    ],
)
def test_the_terminal_refuses_a_bad_length(
    user: User, clock: FrozenClock, args: tuple[str, ...], problem: str
) -> None:
    run("debug", "01:30", "--user", user.username)
    before = stored(user)
    with pytest.raises(CommandError, match=problem):
        run(*args, "--user", user.username)
    assert stored(user) == before


# -- the page's form words ---------------------------------------------------------


def form(**fields: str) -> QueryDict:
    data = QueryDict(mutable=True)
    data.update(fields)
    return data


def test_form_words() -> None:
    assert words_from_form(form(verb="debug", moment="2026-09-30T01:30", duration="4h")) == [
        "debug",
        "2026-09-30 01:30",
        "for",
        "4h",
    ]
    assert words_from_form(form(verb="debug", moment="2026-09-30T01:30")) == [
        "debug",
        "2026-09-30 01:30",
    ]
    assert words_from_form(form(verb="debug-clear")) == ["debug", "clear"]
    assert words_from_form(form(verb="overtime", duration="30m")) == ["overtime", "30m"]
    assert words_from_form(form(verb="overtime", custom_duration=" 45m ")) == ["overtime", "45m"]
    assert words_from_form(form(verb="off")) == ["off"]
    assert words_from_form(form()) == []


def test_form_words_become_commands() -> None:
    command = from_words(
        words_from_form(form(verb="debug", moment="2026-09-30T01:30", duration="15m"))
    )
    assert command == OverrideCommand("debug", timedelta(minutes=15), "2026-09-30 01:30")
    default = from_words(words_from_form(form(verb="debug", moment="2026-09-30T01:30")))
    assert default.duration == DEFAULT_PRETEND == timedelta(hours=1)
    with pytest.raises(OverrideError, match="not a length to pretend for") as refused:
        from_words(words_from_form(form(verb="debug", moment="2026-09-30T01:30", duration="2d")))
    assert refused.value.field == "duration"


def test_json_without_a_duration_is_the_default() -> None:
    assert from_json({"debug": "01:30"}) == OverrideCommand("debug", DEFAULT_PRETEND, "01:30")
    assert from_json({"debug": "clear"}) == OverrideCommand("debug-clear")


# -- where overrides become engine input -------------------------------------------


def test_overrides_active_drops_an_ended_pretend(api: Any, clock: FrozenClock) -> None:
    clock.set(local("2026-09-29 20:00"))
    post(api, {"debug": "01:30", "duration": "15m"})
    bundle = bundle_for(api.user.pk)
    assert bundle.overrides.debug_until == local("2026-09-29 20:15")
    active = overrides_active(bundle, local("2026-09-29 20:14"))
    assert (active["debug_at"], active["debug_until"]) == (
        local("2026-09-30 01:30"),
        local("2026-09-29 20:15"),
    )
    ended = overrides_active(bundle, local("2026-09-29 20:15"))
    assert (ended["debug_at"], ended["debug_until"]) == (None, None)
