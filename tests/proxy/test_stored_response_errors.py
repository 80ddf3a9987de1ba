"""``GET`` and ``DELETE /v1/responses/<id>`` when things go wrong (issue 41):
an id nobody stored, ids of odd characters, an upstream that answers 404 or
500 (as JSON, or as its edge's HTML page), that never answers, that is gone;
off duty; with a personal token and with a team key. Each is one clear answer
in OpenAI's error shape, and nothing but ``/v1/responses/<id>`` ever reaches
the upstream. (Traversals sent as raw bytes to a served proxy, and the
forwarding whatever the hour, are ``test_responses``'.) The ids forwarded here
are the caller's own (``own``): anyone else's is refused before the upstream
(``test_stored_response_owner``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from curfew_core.services.stored_responses import stored_response_record
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.server import free_port
from tests.proxy.hostile_upstream import HostileUpstream
from tests.proxy.inprocess import SECRET, token_at
from tests.teams.test_done_means import last_line, run

pytestmark = pytest.mark.django_db(transaction=True)

METHODS = ["GET", "DELETE"]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    fake = HostileUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def served(hostile: HostileUpstream) -> Iterator[HostileUpstream]:
    hostile.reset()
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{hostile.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY=SECRET,
        CURFEW_UPSTREAM_TIMEOUT=1,
    ):
        yield hostile
    hostile.release.set()


async def make_token(name: str, clock: str) -> str:
    return await sync_to_async(token_at)(name, clock)


async def own(username: str, response_id: str) -> None:
    """``response_id`` is ``username``'s, as if made through the proxy."""

    def record() -> None:
        user_id = User.objects.get(username=username).pk
        stored_response_record(response_id=response_id, user_id=user_id, at=timezone.now())

    await sync_to_async(record)()


async def stored(method: str, path: str, token: str, **headers: str) -> Any:
    client = AsyncClient()
    send = client.get if method == "GET" else client.delete
    return await send(path, headers={"Authorization": f"Bearer {token}", **headers})


def openai_error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    assert isinstance(error["message"], str)
    assert error["message"]
    assert SECRET not in response.content.decode()
    return error


ODD_IDS = [
    "..",
    "%2e%2e",
    "a%2Fb",
    "..%2F..%2Fusage",
    "r%C3%A9sp_1",  # résp_1
    "%F0%9F%98%80",  # an emoji
    "resp%00",
    "resp_" + "a" * 10_000,
]


@pytest.mark.parametrize("odd", ODD_IDS)
@pytest.mark.parametrize("method", METHODS)
async def test_an_odd_id_goes_nowhere(served: HostileUpstream, method: str, odd: str) -> None:
    token = await make_token("odd", "20:00")
    response = await stored(method, f"/v1/responses/{odd}", token)
    error = openai_error(response, response.status_code)
    assert response.status_code in (400, 404)
    if response.status_code == 400:
        assert error["code"] == "invalid_response_id"
        assert error["param"] == "response_id"
    assert served.paths == []


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("status", [404, 500])
async def test_an_upstream_error_is_relayed_in_openai_shape(
    served: HostileUpstream, method: str, status: int
) -> None:
    served.reset("status", status=status)
    token = await make_token("unknown", "20:00")
    await own("unknown", "resp_nobody_stored")
    response = await stored(method, "/v1/responses/resp_nobody_stored", token)
    assert openai_error(response, status)["message"] == "nope"
    assert response["X-Curfew-Action"] == "pass"
    assert served.paths == ["/v1/responses/resp_nobody_stored"]


@pytest.mark.parametrize("method", METHODS)
async def test_an_upstream_html_page_becomes_an_openai_error(
    served: HostileUpstream, method: str
) -> None:
    """A provider's edge answers with its own HTML page (a 404 of nginx, a
    502 of a CDN): the client's SDK gets an OpenAI error with the status."""
    served.reset("html", status=404)
    token = await make_token("html", "20:00")
    await own("html", "resp_1")
    response = await stored(method, "/v1/responses/resp_1", token)
    error = openai_error(response, 404)
    assert error["code"] == "upstream_error"
    assert "HTTP 404" in error["message"]
    assert "text/html" in error["message"]
    assert "<html>" not in response.content.decode()


@pytest.mark.parametrize("method", METHODS)
async def test_an_upstream_that_never_answers_is_a_504(
    served: HostileUpstream, method: str
) -> None:
    served.reset("hang")
    token = await make_token("hang", "20:00")
    await own("hang", "resp_1")
    response = await stored(method, "/v1/responses/resp_1", token)
    assert openai_error(response, 504)["code"] == "upstream_timeout"


@pytest.mark.parametrize("method", METHODS)
async def test_an_upstream_that_is_gone_is_a_502(served: HostileUpstream, method: str) -> None:
    token = await make_token("gone", "20:00")
    await own("gone", "resp_1")
    with override_settings(CURFEW_UPSTREAM_BASE_URL=f"http://127.0.0.1:{free_port()}/v1"):
        response = await stored(method, "/v1/responses/resp_1", token)
    assert openai_error(response, 502)["code"] == "upstream_unreachable"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("clock", "state"), [("10:00", "off-duty"), ("05:00", "lights-out")])
async def test_off_duty_a_stored_response_is_still_forwarded(
    served: HostileUpstream, method: str, clock: str, state: str
) -> None:
    """Reading or deleting one is no model call: nothing is generated, so the
    curfew has nothing to hold back (and a gateway cleaning up at night must
    not fail); the answer says the state, and ``pass``."""
    token = await make_token(f"night-{clock[:2]}", clock)
    await own(f"night-{clock[:2]}", "resp_1")
    response = await stored(method, "/v1/responses/resp_1", token)
    assert response.status_code == 200
    assert response["X-Curfew-State"] == state
    assert response["X-Curfew-Action"] == "pass"
    assert served.paths == ["/v1/responses/resp_1"]


@pytest.fixture
def team_key(transactional_db: None) -> str:
    token_at("alice", "20:00")
    token_at("boss", "20:00")
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    stored_response_record(
        response_id="resp_1",
        user_id=User.objects.get(username="alice").pk,
        at=timezone.now(),
    )
    return last_line(run("team-token", "acme"))


@pytest.mark.parametrize("method", METHODS)
async def test_a_team_key_names_its_member_or_is_refused(
    served: HostileUpstream, team_key: str, method: str
) -> None:
    nobody = await stored(method, "/v1/responses/resp_1", team_key)
    assert openai_error(nobody, 400)
    outsider = await stored(method, "/v1/responses/resp_1", team_key, **{"X-Curfew-User": "eve"})
    assert outsider.status_code in (400, 403, 404)
    openai_error(outsider, outsider.status_code)
    assert served.paths == []
    member = await stored(method, "/v1/responses/resp_1", team_key, **{"X-Curfew-User": "alice"})
    assert member.status_code == 200
    assert member["X-Curfew-Action"] == "pass"
    assert served.paths == ["/v1/responses/resp_1"]
    odd = await stored(method, "/v1/responses/..%2Fx", team_key, **{"X-Curfew-User": "alice"})
    openai_error(odd, odd.status_code)
    assert served.paths == ["/v1/responses/resp_1"]
