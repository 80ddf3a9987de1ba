"""A stored response is its maker's alone (``proxy.stored_owner``).

OpenAI's Responses API keeps what it makes (``store`` defaults to true) and
answers its id to whoever holds the key that made it: through the proxy, the
operator's, shared by everyone. So the proxy records whose each id is, and
another caller's ``GET``, ``DELETE`` or ``previous_response_id`` is answered
as the upstream answers an id it does not know, with nothing sent upstream.
Each refusal has its control: the maker's same request does arrive.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from curfew_core.proxy import stored_owner
from curfew_core.selectors.stored_responses import response_owner
from curfew_core.services import ledger_prune
from curfew_core.services.stored_responses import stored_response_record
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_openai_more import RESPONSE_ID
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.hostile_upstream import HostileUpstream
from tests.proxy.inprocess import SECRET, body_of, token_at
from tests.teams.test_done_means import last_line, run

pytestmark = pytest.mark.django_db(transaction=True)

#: The id the hostile upstream gives every response it makes.
MADE = "resp_1"
CREATE = {"model": "m", "input": "hi"}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    fake = HostileUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def served(hostile: HostileUpstream) -> Iterator[HostileUpstream]:
    """An upstream that makes ``resp_1`` and answers 200 to anything."""
    hostile.reset()
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{hostile.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield hostile


async def make_token(name: str, clock: str = "20:00") -> str:
    """A token of a new user whose clock says ``clock`` (20:00: on duty)."""
    return await sync_to_async(token_at)(name, clock)


async def call(method: str, path: str, token: str, body: Any = None, **headers: str) -> Any:
    client = AsyncClient()
    sent = {"Authorization": f"Bearer {token}", **headers}
    if method == "POST":
        response = await client.post(
            path, json.dumps(body), content_type="application/json", headers=sent
        )
    else:
        send = client.get if method == "GET" else client.delete
        response = await send(path, headers=sent)
    return await settled(response)


async def settled(response: Any) -> Any:
    """The answer with a streamed body read to its end (and kept, to read
    again): the app goes on relaying a stream nobody reads in a task of its
    own, and a relayed create writes its owner on another thread as it ends.
    A test that left a 200 unread ended while that write was still going,
    and the teardown's flush of the in-memory SQLite met it ("database table
    is locked", once in a full run)."""
    if getattr(response, "streaming", False):
        body = await body_of(response)

        async def again() -> Any:
            yield body

        response.streaming_content = again()
    return response


async def create(token: str, **headers: str) -> Any:
    response = await call("POST", "/v1/responses", token, CREATE, **headers)
    assert response.status_code == 200, response.content[:300]
    await body_of(response)
    return response


async def continued(token: str, previous: str, **headers: str) -> Any:
    body = {**CREATE, "previous_response_id": previous}
    return await call("POST", "/v1/responses", token, body, **headers)


def assert_unknown(response: Any, response_id: str) -> None:
    """OpenAI's 404 for an id it does not know, labelled, nothing done."""
    assert response.status_code == 404, getattr(response, "content", b"")[:300]
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {
        "error": {
            "message": f"Response with id '{response_id}' not found.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    assert response["X-Curfew-Action"] == "none"
    assert response["X-Curfew-State"] == "on-duty"


def assert_unknown_previous(response: Any, response_id: str) -> None:
    """OpenAI's 400 for a ``previous_response_id`` it does not know."""
    assert response.status_code == 400, getattr(response, "content", b"")[:300]
    assert response.json() == {
        "error": {
            "message": f"Previous response with id '{response_id}' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }
    assert response["X-Curfew-Action"] == "none"


async def owner_of(response_id: str) -> int | None:
    return await sync_to_async(response_owner)(response_id)


async def user_id(name: str) -> int:
    return await sync_to_async(lambda: User.objects.get(username=name).pk)()


async def test_a_call_here_ends_with_the_apps_own_work(served: HostileUpstream) -> None:
    """``call`` returns once the app's task is over, owner's write included
    (``settled``), so no write of one test runs into the next one's flush."""
    ada = await make_token("ada")
    response = await call("POST", "/v1/responses", ada, CREATE)
    assert response.streaming  # the control: a relayed stream, read in a task of its own
    assert response.task.done()
    assert await owner_of(MADE) == await user_id("ada")
    assert json.loads(await body_of(response))["id"] == MADE  # still readable


async def test_only_the_maker_reads_deletes_and_continues(served: HostileUpstream) -> None:
    ada = await make_token("ada")
    eve = await make_token("eve")
    await create(ada)
    assert served.paths == ["/v1/responses"]
    # Another person: the upstream's answer to an unknown id, nothing sent.
    assert_unknown(await call("GET", f"/v1/responses/{MADE}", eve), MADE)
    assert_unknown(await call("DELETE", f"/v1/responses/{MADE}", eve), MADE)
    assert_unknown_previous(await continued(eve, MADE), MADE)
    assert served.paths == ["/v1/responses"]
    # The control: the maker's same requests arrive.
    read = await call("GET", f"/v1/responses/{MADE}", ada)
    assert read.status_code == 200
    assert read["X-Curfew-Action"] == "pass"
    assert (await continued(ada, MADE)).status_code == 200
    assert served.paths == ["/v1/responses", f"/v1/responses/{MADE}", "/v1/responses"]


async def test_a_deletion_the_upstream_answered_forgets_the_owner(
    served: HostileUpstream,
) -> None:
    ada = await make_token("ada")
    await create(ada)
    deleted = await call("DELETE", f"/v1/responses/{MADE}", ada)
    assert deleted.status_code == 200
    assert served.paths == ["/v1/responses", f"/v1/responses/{MADE}"]
    assert await owner_of(MADE) is None
    assert_unknown(await call("GET", f"/v1/responses/{MADE}", ada), MADE)
    assert len(served.paths) == 2


async def test_a_deletion_the_upstream_refused_keeps_the_owner(served: HostileUpstream) -> None:
    ada = await make_token("ada")
    await create(ada)
    served.reset("status", status=500)
    assert (await call("DELETE", f"/v1/responses/{MADE}", ada)).status_code == 500
    assert await owner_of(MADE) == await user_id("ada")


async def test_the_owner_is_committed_when_the_answer_ends(served: HostileUpstream) -> None:
    """So a client that read the answer and asks for the id at once, from
    any server process, finds it (not only this process's pending records)."""
    ada = await make_token("ada")
    await create(ada)
    assert await owner_of(MADE) == await user_id("ada")


async def test_while_the_write_is_under_way_this_process_knows_the_owner(
    served: HostileUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner's write starts once the id is seen; until it is committed,
    this process's lookups find it among the pending ones (and only for its
    owner), and the answer does not end before it is committed."""
    ada = await make_token("ada")
    eve = await make_token("eve")
    held = threading.Event()
    record = stored_owner.stored_response_record

    def slow(**kwargs: Any) -> None:
        held.wait(10)
        record(**kwargs)

    monkeypatch.setattr(stored_owner, "stored_response_record", slow)
    creating = asyncio.ensure_future(create(ada))
    for _ in range(200):
        if MADE in stored_owner._pending:
            break
        await asyncio.sleep(0.01)
    assert MADE in stored_owner._pending
    assert await owner_of(MADE) is None  # not written yet
    assert not creating.done()  # the answer has not ended
    assert_unknown(await call("GET", f"/v1/responses/{MADE}", eve), MADE)
    assert (await call("GET", f"/v1/responses/{MADE}", ada)).status_code == 200
    held.set()
    await creating
    assert await owner_of(MADE) == await user_id("ada")
    assert MADE not in stored_owner._pending
    assert served.paths == ["/v1/responses", f"/v1/responses/{MADE}"]


async def test_a_streamed_create_records_its_id(
    upstream: FakeUpstream, both_upstreams: None
) -> None:
    ada = await make_token("ada")
    eve = await make_token("eve")
    response = await call("POST", "/v1/responses", ada, {**CREATE, "stream": True})
    assert response.status_code == 200
    assert b"response.created" in await body_of(response)
    assert await owner_of(RESPONSE_ID) == await user_id("ada")
    assert_unknown(await call("GET", f"/v1/responses/{RESPONSE_ID}", eve), RESPONSE_ID)
    assert [r.method for r in upstream.requests] == ["POST"]
    await call("GET", f"/v1/responses/{RESPONSE_ID}", ada)  # the control
    assert [(r.method, r.route) for r in upstream.requests] == [
        ("POST", "/v1/responses"),
        ("GET", f"/v1/responses/{RESPONSE_ID}"),
    ]


@pytest.mark.parametrize("method", ["GET", "DELETE", "continue"])
async def test_an_id_nobody_made_here_is_unknown(served: HostileUpstream, method: str) -> None:
    """Never made through the proxy, or made before owners were recorded:
    no row, so it exists for nobody (``docs/security.md``)."""
    ada = await make_token("ada")
    if method == "continue":
        assert_unknown_previous(await continued(ada, "resp_from_before"), "resp_from_before")
    else:
        answer = await call(method, "/v1/responses/resp_from_before", ada)
        assert_unknown(answer, "resp_from_before")
    assert served.paths == []


async def test_unstored_answers_leave_no_owner(served: HostileUpstream) -> None:
    """The curfew's canned answer (off duty) and a create that says ``store:
    false``: the upstream keeps neither, so their ids stay unknown."""
    night = await make_token("night", "10:00")
    canned = await call("POST", "/v1/responses", night, CREATE)
    assert canned["X-Curfew-Action"] == "short-circuit"
    canned_id = json.loads(await body_of(canned))["id"]
    assert_unknown_previous(await continued(await make_token("ada"), canned_id), canned_id)
    ada = await make_token("ada2")
    unstored = await call("POST", "/v1/responses", ada, {**CREATE, "store": False})
    assert unstored.status_code == 200
    await body_of(unstored)
    assert served.paths == ["/v1/responses"]
    assert_unknown(await call("GET", f"/v1/responses/{MADE}", ada), MADE)
    assert served.paths == ["/v1/responses"]
    assert await owner_of(MADE) is None
    assert await owner_of(canned_id) is None


async def test_off_duty_a_continuation_is_answered_here_unchecked(
    served: HostileUpstream,
) -> None:
    """The canned answer sends nothing upstream and echoes what it was
    given: nothing to check (and a tool's off-duty follow-up of a canned id
    keeps getting the curfew's reply, not an error)."""
    night = await make_token("night", "10:00")
    answer = await continued(night, "resp_someone_elses")
    assert answer.status_code == 200
    assert answer["X-Curfew-Action"] == "short-circuit"
    assert served.paths == []


@pytest.fixture
def team(transactional_db: None) -> dict[str, str]:
    tokens = {name: token_at(name, "20:00") for name in ("alice", "bob", "boss")}
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    run("team", "add", "acme", "bob")
    return {**tokens, "key": last_line(run("team-token", "acme"))}


async def test_a_team_keys_response_is_the_members_it_named(
    served: HostileUpstream, team: dict[str, str]
) -> None:
    """A team gateway names its member on every call: the response is that
    member's, through the key or their own token; another member's call,
    through the same key or their own token, finds nothing."""
    key = team["key"]
    await create(key, **{"X-Curfew-User": "alice"})
    assert await owner_of(MADE) == await user_id("alice")
    path = f"/v1/responses/{MADE}"
    assert_unknown(await call("GET", path, key, **{"X-Curfew-User": "bob"}), MADE)
    assert_unknown(await call("GET", path, team["bob"]), MADE)
    assert_unknown_previous(await continued(key, MADE, **{"X-Curfew-User": "bob"}), MADE)
    assert_unknown(await call("GET", path, team["boss"]), MADE)
    assert served.paths == ["/v1/responses"]
    # The controls: alice, through the key and through her own token.
    assert (await call("GET", path, key, **{"X-Curfew-User": "alice"})).status_code == 200
    assert (await call("GET", path, team["alice"])).status_code == 200
    assert (await continued(key, MADE, **{"X-Curfew-User": "alice"})).status_code == 200
    assert served.paths == ["/v1/responses", path, path, "/v1/responses"]


def test_owners_past_the_upstreams_retention_are_pruned_hourly(transactional_db: None) -> None:
    """The servers' hourly prune (``services.ledger_prune``) takes them too."""
    user = User.objects.create_user("ada")
    now = timezone.now()
    stored_response_record(response_id="resp_old", user_id=user.pk, at=now - timedelta(days=31))
    stored_response_record(response_id="resp_new", user_id=user.pk, at=now - timedelta(days=29))
    cache.delete(ledger_prune.STAMP_KEY)
    ledger_prune.reset()
    assert ledger_prune.prune_if_due(now=now, clock=1000.0) == 0  # no decisions
    assert response_owner("resp_old") is None
    assert response_owner("resp_new") == user.pk
    ledger_prune.reset()


def test_the_prune_command_prunes_owners_too(transactional_db: None) -> None:
    user = User.objects.create_user("ada")
    now = timezone.now()
    stored_response_record(response_id="resp_old", user_id=user.pk, at=now - timedelta(days=31))
    stored_response_record(response_id="resp_new", user_id=user.pk, at=now - timedelta(days=1))
    call_command("curfew", "prune")
    assert response_owner("resp_old") is None
    assert response_owner("resp_new") == user.pk


async def test_a_callers_own_credential_is_left_to_the_upstream(served: HostileUpstream) -> None:
    """Sent with the caller's own provider key (where the operator allows
    it), a response is in the caller's own upstream account: the upstream
    answers its ids to that key alone, so nothing is recorded or checked."""
    ada = await make_token("ada")
    own = {"X-Curfew-Token": ada, "Authorization": "Bearer sk-adas-own-key-1234"}
    with override_settings(CURFEW_PROXY_CALLER_CREDENTIALS=True):
        client = AsyncClient()
        made = await client.post(
            "/v1/responses", json.dumps(CREATE), content_type="application/json", headers=own
        )
        assert made.status_code == 200
        await body_of(made)
        assert await owner_of(MADE) is None
        read = await client.get("/v1/responses/resp_made_elsewhere", headers=own)
        assert read.status_code == 200
    assert served.paths == ["/v1/responses", "/v1/responses/resp_made_elsewhere"]
