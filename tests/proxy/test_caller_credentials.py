"""Subscription logins through the proxy (issue 42): a caller's own provider
credential, with its Curfew token in ``X-Curfew-Token``.

Where the operator allows it (``CURFEW_PROXY_CALLER_CREDENTIALS``), exactly
the caller's credential reaches the upstream, in the header it came in, and no
Curfew token and no operator key does; off duty nothing reaches the upstream
(the canned answer). Where it is not allowed, such a call is a 403 in the
door's shape, whatever the hour, and nothing goes upstream. The credential is
never logged (at any level, by any logger), never stored in the ledger, never
relayed back in an error. In-process, against the recording fake upstreams.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core import serializers
from django.test import override_settings

from curfew_core.models import Decision
from curfew_core.services import ledger_recorder as recorder
from curfew_testkit.asgi_client import AsyncClient
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream, Recorded
from tests.proxy.inprocess import SECRET, body_of, token_at

pytestmark = pytest.mark.django_db(transaction=True)

#: A Claude Pro/Max login's token, an Anthropic key, an OpenAI key, and one
#: shaped like nothing any redaction pattern knows (so a log line holding it
#: could only be a log line that wrote it).
OAUTH = "sk-ant-oat01-" + "OwnLogin7" * 6
OWN_ANTHROPIC_KEY = "sk-ant-api03-" + "OwnKey42x" * 5
OWN_OPENAI_KEY = "sk-proj-" + "OwnOpenAi9" * 4
OPAQUE = "opaque-own-credential-Zq8xT1vW"

MESSAGES = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "input": "hi"}
EMBEDDINGS = {"model": "m", "input": "hi"}
CREDENTIAL_HEADERS = {"authorization", "x-api-key", "api-key"}


@pytest.fixture
def allowed(both_upstreams: None) -> Iterator[None]:
    with override_settings(CURFEW_PROXY_CALLER_CREDENTIALS=True):
        yield


async def post(path: str, body: object, headers: dict[str, str]) -> Any:
    return await AsyncClient().post(path, body, content_type="application/json", headers=headers)


async def get(path: str, headers: dict[str, str]) -> Any:
    return await AsyncClient().get(path, headers=headers)


def _credentials_at(sent: Recorded) -> list[tuple[str, str]]:
    return [(name, value) for name, value in sent.header_list if name in CREDENTIAL_HEADERS]


def _nothing_of_curfew(sent: Recorded, token: str) -> None:
    every = json.dumps(sent.header_list)
    assert token not in every
    assert token[4:] not in every
    assert SECRET not in every  # the operator's key
    assert not [name for name, _ in sent.header_list if name.startswith("x-curfew")]


async def on_duty() -> str:
    return await sync_to_async(token_at)("own-on-duty", "20:00")


async def off_duty() -> str:
    return await sync_to_async(token_at)("own-off-duty", "10:00")


# -- allowed: the caller's credential, and only it, reaches the upstream ------------------


@pytest.mark.parametrize(
    "own",
    [("Authorization", f"Bearer {OAUTH}"), ("x-api-key", OWN_ANTHROPIC_KEY)],
    ids=["claude login (Bearer)", "own key (x-api-key)"],
)
async def test_the_messages_door_sends_the_callers_own_credential(
    allowed: None, anthropic_upstream: FakeAnthropic, closing: None, own: tuple[str, str]
) -> None:
    token = await on_duty()
    response = await post(
        "/v1/messages",
        MESSAGES,
        {"X-Curfew-Token": token, own[0]: own[1], "anthropic-beta": "oauth-2025-04-20"},
    )
    assert response.status_code == 200, await body_of(response)
    assert response["X-Curfew-Action"] == "pass"
    [sent] = anthropic_upstream.message_requests
    assert _credentials_at(sent) == [(own[0].lower(), own[1])]
    assert ("anthropic-beta", "oauth-2025-04-20") in sent.header_list
    _nothing_of_curfew(sent, token)
    assert sent.json == MESSAGES


async def test_count_tokens_sends_it_too(
    allowed: None, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    token = await on_duty()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    response = await post(
        "/v1/messages/count_tokens",
        body,
        {"X-Curfew-Token": token, "Authorization": f"Bearer {OAUTH}"},
    )
    assert response.status_code == 200, await body_of(response)
    [sent] = anthropic_upstream.requests
    assert _credentials_at(sent) == [("authorization", f"Bearer {OAUTH}")]
    _nothing_of_curfew(sent, token)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", CHAT),
        ("/v1/responses", RESPONSES),
        ("/v1/embeddings", EMBEDDINGS),
        ("/v1/completions", {"model": "m", "prompt": "hi"}),
        ("/v1/models", None),
    ],
)
async def test_the_openai_doors_send_the_callers_own_bearer_and_its_account(
    allowed: None, upstream: FakeUpstream, closing: None, path: str, body: object
) -> None:
    token = await on_duty()
    headers = {
        "X-Curfew-Token": token,
        "Authorization": f"Bearer {OWN_OPENAI_KEY}",
        "OpenAI-Organization": "org-the-callers-own",
        "chatgpt-account-id": "acct-1",
    }
    if body is None:
        response = await get(path, headers)
    else:
        response = await post(path, body, headers)
    assert response.status_code == 200, await body_of(response)
    [sent] = upstream.requests
    assert _credentials_at(sent) == [("authorization", f"Bearer {OWN_OPENAI_KEY}")]
    # With the caller's own key, its organization is its own, and goes with it.
    assert ("openai-organization", "org-the-callers-own") in sent.header_list
    assert ("chatgpt-account-id", "acct-1") in sent.header_list
    _nothing_of_curfew(sent, token)


async def test_off_duty_nothing_reaches_the_upstream(
    allowed: None, anthropic_upstream: FakeAnthropic, upstream: FakeUpstream
) -> None:
    token = await off_duty()
    messages = await post(
        "/v1/messages", MESSAGES, {"X-Curfew-Token": token, "Authorization": f"Bearer {OAUTH}"}
    )
    chat = await post(
        "/v1/chat/completions",
        CHAT,
        {"X-Curfew-Token": token, "Authorization": f"Bearer {OWN_OPENAI_KEY}"},
    )
    for response in (messages, chat):
        assert response.status_code == 200
        assert response["X-Curfew-State"] == "off-duty"
        assert response["X-Curfew-Action"] == "short-circuit"
    assert json.loads(messages.content)["content"][0]["text"]  # the canned reply
    assert anthropic_upstream.requests == []
    assert upstream.requests == []


async def test_a_curfew_token_in_the_credential_headers_never_goes_upstream(
    allowed: None, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    """Only a provider's credential is the caller's own: a Curfew token sent
    in ``x-api-key`` too (both variables set) stays here, and the operator's
    key goes as before."""
    token = await on_duty()
    response = await post(
        "/v1/messages",
        MESSAGES,
        {"X-Curfew-Token": token, "x-api-key": token, "Authorization": "Bearer cft_teamkey1234"},
    )
    assert response.status_code == 200, await body_of(response)
    [sent] = anthropic_upstream.message_requests
    assert _credentials_at(sent) == [("x-api-key", SECRET)]
    assert token not in json.dumps(sent.header_list)
    assert "cft_teamkey1234" not in json.dumps(sent.header_list)


async def test_x_curfew_token_alone_uses_the_operators_key(
    both_upstreams: None, anthropic_upstream: FakeAnthropic, closing: None
) -> None:
    """The setting off (the default): ``X-Curfew-Token`` without a credential
    of the caller's own is just another place for the token."""
    token = await on_duty()
    response = await post("/v1/messages", MESSAGES, {"X-Curfew-Token": token})
    assert response.status_code == 200, await body_of(response)
    [sent] = anthropic_upstream.message_requests
    assert _credentials_at(sent) == [("x-api-key", SECRET)]


async def test_an_unknown_x_curfew_token_is_a_401(allowed: None) -> None:
    response = await post(
        "/v1/messages",
        MESSAGES,
        {"X-Curfew-Token": "cfw_not-a-token-at-all", "Authorization": f"Bearer {OAUTH}"},
    )
    assert response.status_code == 401
    assert OAUTH not in response.content.decode()


# -- not allowed: a clear 403 in the door's shape, nothing upstream ------------------------


@pytest.mark.parametrize("moment", ["20:00", "10:00"], ids=["on duty", "off duty"])
async def test_not_allowed_is_a_403_in_the_doors_shape(
    both_upstreams: None, anthropic_upstream: FakeAnthropic, upstream: FakeUpstream, moment: str
) -> None:
    token = await sync_to_async(token_at)(f"own-refused-{moment[:2]}", moment)
    own = {"X-Curfew-Token": token, "Authorization": f"Bearer {OAUTH}"}
    messages = await post("/v1/messages", MESSAGES, own)
    counted = await post("/v1/messages/count_tokens", MESSAGES, own)
    assert messages.status_code == counted.status_code == 403
    for response in (messages, counted):
        body = json.loads(response.content)
        assert body["type"] == "error"
        assert body["error"]["type"] == "permission_error"
        assert "CURFEW_PROXY_CALLER_CREDENTIALS" in body["error"]["message"]
        assert OAUTH not in response.content.decode()
    assert messages["X-Curfew-Action"] == "none"

    openai_own = {"X-Curfew-Token": token, "Authorization": f"Bearer {OWN_OPENAI_KEY}"}
    for path, body in (
        ("/v1/chat/completions", CHAT),
        ("/v1/responses", RESPONSES),
        ("/v1/embeddings", EMBEDDINGS),
    ):
        response = await post(path, body, openai_own)
        assert response.status_code == 403, path
        error = json.loads(response.content)["error"]
        assert error["code"] == "caller_credentials_not_allowed"
        assert OWN_OPENAI_KEY not in response.content.decode()
    listed = await get("/v1/models", openai_own)
    assert listed.status_code == 403
    assert anthropic_upstream.requests == []
    assert upstream.requests == []


# -- never relayed back, never logged, never stored ----------------------------------------


async def test_an_upstream_refusing_the_callers_credential_never_echoes_it(
    allowed: None, anthropic_upstream: FakeAnthropic, upstream: FakeUpstream, closing: None
) -> None:
    token = await on_duty()
    echo = json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": f"bad {OPAQUE}"}}
    ).encode()
    anthropic_upstream.fail = (401, echo)
    refused = await post("/v1/messages", MESSAGES, {"X-Curfew-Token": token, "x-api-key": OPAQUE})
    assert refused.status_code == 401
    assert OPAQUE not in refused.content.decode()
    assert "your own credential" in json.loads(refused.content)["error"]["message"]
    # Any other error is relayed, the credential cut out of it.
    upstream.fail = (400, json.dumps({"error": {"message": f"bad key {OPAQUE}"}}).encode())
    relayed = await post(
        "/v1/chat/completions", CHAT, {"X-Curfew-Token": token, "Authorization": f"Bearer {OPAQUE}"}
    )
    assert relayed.status_code == 400
    assert OPAQUE not in relayed.content.decode()
    assert "[redacted]" in relayed.content.decode()


@pytest.fixture
def every_record(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of every logger, at every level, while the test runs: the
    root and each logger the settings gave a level of its own (``curfew``
    logs at INFO otherwise) at DEBUG, put back after by ``caplog``. The app is
    imported first: that sets the loggers up (``django.setup``), at their levels."""
    import curfew_site.asgi  # noqa: F401

    caplog.set_level(logging.DEBUG)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and logger.level not in (
            logging.NOTSET,
            logging.DEBUG,
        ):
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _as_logged(record: logging.LogRecord) -> str:
    text = record.getMessage()
    if record.exc_info and record.exc_info[0] is not None:
        text += logging.Formatter().formatException(record.exc_info)
    return f"{text} {record.exc_text or ''} {record.stack_info or ''} {record.args!r}"


async def test_the_callers_credential_is_never_logged_nor_stored(
    allowed: None,
    anthropic_upstream: FakeAnthropic,
    upstream: FakeUpstream,
    closing: None,
    every_record: pytest.LogCaptureFixture,
) -> None:
    """A credential shaped like nothing the redaction knows, sent on the happy
    path, the refused path, the upstream's errors and an unreachable
    upstream: no record, at any level, holds it, and no ledger row does."""
    token = await on_duty()
    sleepy = await off_duty()
    anthropic_own = {"X-Curfew-Token": token, "x-api-key": OPAQUE}
    openai_own = {"X-Curfew-Token": token, "Authorization": f"Bearer {OPAQUE}"}
    await post("/v1/messages", {**MESSAGES, "stream": True}, anthropic_own)
    await body_of(await post("/v1/messages", MESSAGES, anthropic_own))
    await post("/v1/chat/completions", CHAT, openai_own)
    await post("/v1/messages", MESSAGES, {"X-Curfew-Token": sleepy, "x-api-key": OPAQUE})
    await post("/v1/messages", {"not": "a call"}, anthropic_own)
    anthropic_upstream.fail = (500, json.dumps({"error": {"message": OPAQUE}}).encode())
    await post("/v1/messages", MESSAGES, anthropic_own)
    anthropic_upstream.fail = None
    with override_settings(CURFEW_ANTHROPIC_UPSTREAM_BASE_URL="http://127.0.0.1:9/anthropic"):
        unreachable = await post("/v1/messages", MESSAGES, anthropic_own)
    assert unreachable.status_code == 502
    with override_settings(CURFEW_PROXY_CALLER_CREDENTIALS=False):
        await post("/v1/messages", MESSAGES, anthropic_own)
    assert anthropic_upstream.message_requests  # the control: it did go upstream
    records = every_record.records
    assert records, "nothing was captured: the check would prove nothing"
    leaked = [_as_logged(r) for r in records if OPAQUE in _as_logged(r)]
    assert not leaked, leaked[:3]

    def rows() -> str:
        recorder.flush()
        return str(serializers.serialize("json", Decision.objects.all()))

    stored = await sync_to_async(rows)()
    assert '"model"' in stored  # the control: the calls were recorded
    assert OPAQUE not in stored
