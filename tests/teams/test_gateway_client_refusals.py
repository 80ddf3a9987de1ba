"""The gateway client against the real server with a team key (issue 39): the
server's own refusal of a name that is not a member (404) or of a call naming
nobody (400) is that call's ``CurfewRefused``, and the member switched off is
still refused at once: no outage, no ``fail_open`` for her."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from curfew_client import CurfewClient, CurfewRefused

from curfew_testkit.asgi_client import Client
from tests.teams.test_team_key_doors import team

__all__ = ["team"]


def served(key: str) -> httpx.MockTransport:
    """Each request of the client, answered by the site's ASGI application."""

    def handler(request: httpx.Request) -> httpx.Response:
        client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
        answer = client.post(request.url.path, request.content, content_type="application/json")
        return httpx.Response(
            answer.status_code,
            content=answer.content,
            headers={"Content-Type": answer["Content-Type"]},
        )

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("name", ["bob", "nobody-at-all", None])
def test_a_refused_member_is_that_calls_answer_the_rest_stay_enforced(
    team: dict[str, Any], name: str | None
) -> None:
    with CurfewClient(
        "http://curfew", team["key"], transport=served(team["key"]), report_decisions=False
    ) as client:
        with pytest.raises(CurfewRefused) as raised:
            client.verdict(user=name)
        assert raised.value.status == (400 if name is None else 404)
        if name is not None:
            assert f"'{name}' is not a member of this key's team" in str(raised.value)
        assert client.healthy
        # Alice is at the team's lights-out: enforced, not passed by fail_open.
        alice = client.verdict(user="alice")
        assert (alice.origin, alice.state, alice.short_circuit) == ("server", "lights-out", True)
