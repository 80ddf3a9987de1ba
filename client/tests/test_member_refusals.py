"""A refusal for one member is that call's answer, never an outage (issue 39).

With a team key, a name that is not a member (404) or that the server cannot
read (400) raises ``CurfewRefused`` for that call, whatever the policy, and
leaves the client enforcing for everyone else: no outage state, no backoff,
no ``fail_open`` for the member switched off. The control group: the same
client facing a real outage (a 503, a wrong base URL's 404) serves its policy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from curfew_client import AsyncCurfewClient, CurfewClient, CurfewRefused
from wire_samples import WINDING

NOW = 1_790_000_000.0  # before WINDING's valid_until
KEY = "cft_team-key"
#: Alice is switched off: her verdict short-circuits.
OFF: dict[str, Any] = {
    **WINDING,
    "state": "lights-out",
    "schedule_state": "lights-out",
    "action": "short-circuit",
    "reply": "Curfew: lights out until 09:00.",
    "max_tokens": None,
    "persona": None,
    "progress": None,
}

NOT_MEMBER = (404, {"error": "not_found", "message": "'ghost' is not a member of this key's team"})
NAMELESS = (
    400,
    {"error": "invalid_request", "message": "a team key asks for one member: name them"},
)
OUTAGE = (503, {"error": "unavailable", "message": "storage unavailable; retry shortly"})
#: A wrong base URL: the 404 of a path that is not Curfew's API (an HTML page).
WRONG_URL = (404, "<html><title>Not Found</title></html>")


def server(
    refusal: tuple[int, Any], asked: list[str | None], *, member: str = "ghost"
) -> httpx.MockTransport:
    """Answers alice's verdict, and ``refusal`` for ``member`` (and a call naming nobody)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/decisions":
            return httpx.Response(200, json={"received": 0, "stored": 0})
        user = json.loads(request.content or b"{}").get("user")
        asked.append(user)
        if user == "alice":
            return httpx.Response(200, json=OFF)
        status, body = refusal
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers={"Content-Type": "text/html"})
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handler)


def options(transport: httpx.MockTransport, policy: str) -> dict[str, Any]:
    clock: Callable[[], float] = lambda: NOW  # noqa: E731
    return {"transport": transport, "clock": clock, "policy": policy, "report_decisions": False}


@pytest.mark.parametrize("policy", ["fail_open", "fail_closed", "last_known", "raise"])
@pytest.mark.parametrize(("refusal", "who"), [(NOT_MEMBER, "ghost"), (NAMELESS, None)])
def test_a_refused_member_is_that_calls_answer_and_no_outage(
    policy: str, refusal: tuple[int, Any], who: str | None
) -> None:
    asked: list[str | None] = []
    with CurfewClient("http://curfew", KEY, **options(server(refusal, asked), policy)) as client:
        with pytest.raises(CurfewRefused) as raised:
            client.verdict(user=who)
        assert raised.value.status == refusal[0]
        assert raised.value.user == who
        assert refusal[1]["message"] in str(raised.value)
        # No outage: healthy, nothing to back off from, no policy serving.
        assert client.healthy
        assert not client.health().serving_policy
        # Alice, switched off, is asked for at once and refused: enforced.
        verdict = client.verdict(user="alice")
        assert verdict.origin == "server"
        assert verdict.short_circuit
        # And the refused name is asked again (nothing cached), refused again.
        with pytest.raises(CurfewRefused):
            client.verdict(user=who)
    assert asked == [who, "alice", who]


@pytest.mark.parametrize("policy", ["fail_open", "fail_closed", "last_known", "raise"])
async def test_the_async_client_refuses_the_call_and_enforces_the_rest(policy: str) -> None:
    asked: list[str | None] = []
    async with AsyncCurfewClient(
        "http://curfew", KEY, **options(server(NOT_MEMBER, asked), policy)
    ) as client:
        with pytest.raises(CurfewRefused) as raised:
            await client.verdict(user="ghost")
        assert raised.value.status == 404
        assert client.healthy
        verdict = await client.verdict(user="alice")
        assert (verdict.origin, verdict.short_circuit) == ("server", True)
    assert asked == ["ghost", "alice"]


@pytest.mark.parametrize("refusal", [OUTAGE, WRONG_URL], ids=["503", "wrong-url-404"])
def test_control_an_outage_still_serves_the_policy_to_everyone(refusal: tuple[int, Any]) -> None:
    """The gate's control group: a failure that is every call's (a 503, a 404
    that is not Curfew's refusal) is an outage, and fail_open passes alice."""
    asked: list[str | None] = []
    transport = server(refusal, asked)
    with CurfewClient("http://curfew", KEY, **options(transport, "fail_open")) as client:
        first = client.verdict(user="ghost")
        assert first.origin == "fail_open"
        assert not client.healthy
        # Backing off: alice is not asked, and passes unchecked.
        second = client.verdict(user="alice")
        assert (second.origin, second.short_circuit) == ("fail_open", False)
    assert asked == ["ghost"]


def test_a_refusal_ends_an_outage_in_progress() -> None:
    """The server answered: it is up again, whatever it said of this call."""
    clock = [NOW]
    state = {"down": True}
    asked: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content or b"{}").get("user"))
        if state["down"]:
            return httpx.Response(503, json=OUTAGE[1])
        return httpx.Response(404, json=NOT_MEMBER[1])

    with CurfewClient(
        "http://curfew",
        KEY,
        transport=httpx.MockTransport(handler),
        clock=lambda: clock[0],
        report_decisions=False,
    ) as client:
        assert client.verdict(user="ghost").origin == "fail_open"
        assert not client.healthy
        state["down"] = False
        clock[0] += 5  # past the retry interval
        with pytest.raises(CurfewRefused):
            client.verdict(user="ghost")
        assert client.healthy
