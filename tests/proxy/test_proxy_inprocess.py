"""The proxy in-process (Django's async test client): settings read per request,
one pooled upstream client per loop, and no upstream key in any log record."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import override_settings

from curfew_core.proxy import upstream as upstream_module
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import free_port
from tests.proxy.inprocess import CHAT, SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)


async def test_settings_are_read_per_request_and_the_pool_is_reused(
    token: str, upstream: FakeUpstream, closing: None
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with override_settings(CURFEW_UPSTREAM_BASE_URL=dead, CURFEW_UPSTREAM_API_KEY=SECRET):
        down = await client(token).post("/v1/chat/completions", CHAT)
    assert down.status_code == 502
    assert down.json()["error"]["code"] == "upstream_unreachable"
    assert down["X-Curfew-State"] == "on-duty"
    assert down["X-Curfew-Action"] == "pass"
    pool = upstream_module.shared_client()

    live = f"{upstream.base_url}/v1"
    with override_settings(CURFEW_UPSTREAM_BASE_URL=live, CURFEW_UPSTREAM_API_KEY=SECRET):
        up = await client(token).post("/v1/chat/completions", CHAT)
        assert up.status_code == 200
        assert json.loads(await body_of(up))["choices"][0]["message"]["content"] == REPLY_TEXT
    [sent] = upstream.chat_requests
    assert sent.headers["Authorization"] == f"Bearer {SECRET}"
    assert upstream_module.shared_client() is pool, "one pooled client per event loop"


async def test_the_upstream_key_appears_in_no_log_record(
    token: str, upstream: FakeUpstream, closing: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, aiohttp's included
    dead = f"http://127.0.0.1:{free_port()}/v1"
    live = f"{upstream.base_url}/v1"
    with override_settings(CURFEW_UPSTREAM_API_KEY=SECRET):
        with override_settings(CURFEW_UPSTREAM_BASE_URL=live):
            ok = await client(token).post("/v1/chat/completions", {**CHAT, "stream": True})
            streamed = await body_of(ok)
            upstream.fail = (500, f'{{"error": {{"message": "bad key {SECRET}"}}}}'.encode())
            failed = await client(token).post("/v1/chat/completions", CHAT)
        with override_settings(CURFEW_UPSTREAM_BASE_URL=dead):
            await client(token).post("/v1/chat/completions", CHAT)
    assert b"data: [DONE]" in streamed
    assert failed.status_code == 500
    assert SECRET not in failed.content.decode()  # scrubbed from a relayed error body
    assert "[redacted]" in failed.content.decode()
    records = [r.getMessage() + str(r.args) for r in caplog.records]
    assert any("unreachable" in r for r in records), "the outage was logged (the log is live)"
    assert not [r for r in records if SECRET in r]


async def test_non_post_and_unknown_paths_answer_in_openai_shape(token: str) -> None:
    wrong_method = await client(token).get("/v1/chat/completions")
    assert wrong_method.status_code == 405
    assert wrong_method["X-Curfew-Action"] == "none"
    # /v1/embeddings is served since issue 11: the audio API is still not proxied.
    elsewhere = await client(token).post("/v1/audio/speech", {})
    assert elsewhere.status_code == 404
    assert "chat/completions" in elsewhere.json()["error"]["message"]
    assert elsewhere["X-Curfew-State"] == "unknown"


async def test_bad_scope_headers_are_named(token: str, upstream: FakeUpstream) -> None:
    response = await client(token).post(
        "/v1/chat/completions", CHAT, **{"X-Curfew-Subagent": "maybe"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "X-Curfew-Subagent"
    too_long = await client(token).post(
        "/v1/chat/completions", CHAT, **{"X-Curfew-Session": "x" * 201}
    )
    assert too_long.status_code == 400
    assert "X-Curfew-Session" in too_long.json()["error"]["message"]
    assert upstream.requests == []


async def test_an_unexpected_failure_still_answers_in_openai_shape(
    token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from curfew_core.proxy import calls

    def broken(*args: object) -> None:
        raise RuntimeError("database on fire")

    monkeypatch.setattr(calls, "judge", broken)
    with caplog.at_level(logging.ERROR, logger="curfew.edge"):
        response = await client(token).post("/v1/chat/completions", CHAT)
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert response["X-Curfew-State"] == "unknown"
    assert response["X-Curfew-Action"] == "none"
    assert "database on fire" in caplog.text


async def test_a_warm_call_is_judged_on_the_event_loop(
    token: str, upstream: FakeUpstream, closing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13: the token check and verdict of a warm call take no thread (the
    edge's sync path, ``caller._cold``, runs once, for the cold call), and the
    warm verdict is the one the sync path gave (control: both calls passed)."""
    from curfew_core.edge import caller

    synced: list[str] = []
    real = caller._cold

    def counted(*args: object) -> object:
        synced.append("judge")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(caller, "_cold", counted)
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        cold = await client(token).post("/v1/chat/completions", CHAT)
        warm = await client(token).post("/v1/chat/completions", CHAT)
    assert cold.status_code == warm.status_code == 200
    assert cold["X-Curfew-Action"] == warm["X-Curfew-Action"] == "pass"
    assert len(upstream.chat_requests) == 2
    assert synced == ["judge"]
