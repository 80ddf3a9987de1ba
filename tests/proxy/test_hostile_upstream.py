"""An upstream that sends too much, or never stops (issue 41, "try what no one
has tried yet"): a 2 GB body, a body that never ends, an endless event
stream, one endless line with no newline, an error body without end.

Each is cut at ``CURFEW_UPSTREAM_MAX_ANSWER_BYTES`` (set low here): before any
header is sent, a 502 in the door's own error shape; mid-stream, the door's
own error event (SSE) or a broken-off body (JSON, whose 200 head is gone);
either way the upstream connection is closed and a log line says what
happened, without the key. A huge event stream that does end flows through in
linear time (the key scrub's scan was quadratic in an event's length).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from curfew_core.proxy import stream_lines
from curfew_core.proxy.usage import UsageScan
from curfew_testkit.asgi_client import AsyncClient
from tests.proxy.hostile_upstream import CHUNK, EVENT, HostileUpstream, wait_for
from tests.proxy.inprocess import CHAT, SECRET

pytestmark = pytest.mark.django_db(transaction=True)

CAP = 1024 * 1024
STREAM = {**CHAT, "stream": True}
MESSAGES = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    fake = HostileUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def capped(hostile: HostileUpstream) -> Iterator[HostileUpstream]:
    hostile.reset()
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{hostile.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY=SECRET,
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{hostile.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
        CURFEW_UPSTREAM_MAX_ANSWER_BYTES=CAP,
        CURFEW_UPSTREAM_TIMEOUT=10,
    ):
        yield hostile
    hostile.release.set()


async def call(token: str, door: str, body: dict[str, Any]) -> Any:
    if door == "messages":
        return await AsyncClient().post(
            "/v1/messages", body, content_type="application/json", headers={"x-api-key": token}
        )
    return await AsyncClient().post(
        "/v1/chat/completions",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


async def read_all(response: Any) -> tuple[bytes, BaseException | None]:
    """The streamed body as far as it came, and what ended it early: the app's
    failure mid-answer, which a server answers by aborting the connection
    (the in-process client would wait for the next chunk for ever)."""
    chunks: list[bytes] = []
    body = aiter(response.streaming_content)
    app = response.task
    while True:
        following = asyncio.ensure_future(anext(body))
        await asyncio.wait((following, app), return_when=asyncio.FIRST_COMPLETED)
        if not following.done():
            # The app is over: what it queued still comes, then nothing.
            await asyncio.wait((following,), timeout=0.5)
        if not following.done():
            following.cancel()
            return b"".join(chunks), app.exception() or AssertionError("no end of body")
        try:
            chunks.append(following.result())
        except StopAsyncIteration:
            return b"".join(chunks), None
        except Exception as exc:
            return b"".join(chunks), exc


def assert_logged_without_key(caplog: pytest.LogCaptureFixture, words: str) -> None:
    lines = [r.getMessage() for r in caplog.records if r.name == "curfew.proxy"]
    assert any(words in line for line in lines), lines
    assert not any(SECRET in line for line in lines)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("door", ["chat", "messages"])
async def test_a_declared_2_gb_answer_is_a_502_in_the_doors_shape(
    token: str, capped: HostileUpstream, door: str, caplog: pytest.LogCaptureFixture
) -> None:
    capped.reset("huge-json")
    caplog.set_level(logging.INFO, "curfew.proxy")
    response = await call(token, door, MESSAGES if door == "messages" else CHAT)
    assert response.status_code == 502
    body = json.loads(response.content)
    if door == "messages":
        assert body["type"] == "error"
        assert body["error"]["type"] == "api_error"
    else:
        assert body["error"]["code"] == "upstream_too_large"
    assert "1048576 bytes" in json.dumps(body)
    assert wait_for(capped.hangups), "the upstream connection was left open"
    assert capped.sent < 64 * CAP
    assert_logged_without_key(caplog, "larger than")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["huge-error", "endless-error"])
async def test_an_error_body_without_end_is_not_read_into_memory(
    token: str, capped: HostileUpstream, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    capped.reset(mode)
    caplog.set_level(logging.INFO, "curfew.proxy")
    response = await call(token, "chat", CHAT)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_too_large"
    assert "HTTP 500" in error["message"]
    assert wait_for(capped.hangups)
    assert capped.sent < 64 * CAP
    assert_logged_without_key(caplog, "larger than")


@pytest.mark.timeout(60)
async def test_a_json_body_that_never_ends_is_broken_off_at_the_cap(
    token: str, capped: HostileUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    """Its 200 head is sent: the body is broken off (the server aborts the
    connection), never ended as if whole, so no client takes it for complete."""
    capped.reset("endless-json")
    caplog.set_level(logging.INFO, "curfew.proxy")
    response = await call(token, "chat", CHAT)
    assert response.status_code == 200
    body, ended_by = await read_all(response)
    assert ended_by is not None, "a cut-off JSON body was ended as if it were whole"
    assert CAP // 2 <= len(body) <= CAP
    assert wait_for(capped.hangups)
    assert_logged_without_key(caplog, "larger than")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["endless-sse", "endless-line"])
@pytest.mark.parametrize("door", ["chat", "messages"])
async def test_an_endless_stream_ends_with_the_doors_error_event(
    token: str, capped: HostileUpstream, mode: str, door: str, caplog: pytest.LogCaptureFixture
) -> None:
    capped.reset(mode)
    caplog.set_level(logging.INFO, "curfew.proxy")
    body = {**(MESSAGES if door == "messages" else CHAT), "stream": True}
    response = await call(token, door, body)
    assert response.status_code == 200
    relayed, ended_by = await read_all(response)
    assert ended_by is None
    assert len(relayed) <= CAP + 4096
    last = relayed.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].decode()
    if door == "messages":
        assert last.startswith("event: error\ndata: ")
        error = json.loads(last.split("data: ", 1)[1])
        assert error["type"] == "error"
    else:
        assert last.startswith("data: ")
        error = json.loads(last.removeprefix("data: "))
    assert "1048576 bytes" in error["error"]["message"]
    assert wait_for(capped.hangups)
    assert_logged_without_key(caplog, "larger than")


@pytest.mark.timeout(60)
async def test_an_event_cut_at_the_cap_is_closed_before_the_error_event(
    token: str, capped: HostileUpstream
) -> None:
    """One endless line, longer than the scrub holds back (1 MiB), so part of
    its event has gone out when the cap (3 MiB here) cuts it: the event is
    closed first, or the error event would run into it and no client could
    read the error."""
    capped.reset("endless-line")
    with override_settings(CURFEW_UPSTREAM_MAX_ANSWER_BYTES=3 * CAP):
        relayed, ended_by = await read_all(await call(token, "chat", STREAM))
    assert ended_by is None
    assert relayed.startswith(b"data: xxx")
    last = relayed.rstrip(b"\n").rsplit(b"\n\n", 1)[-1].decode()
    assert last.startswith("data: {")
    assert "3145728 bytes" in json.loads(last.removeprefix("data: "))["error"]["message"]


@pytest.mark.timeout(60)
async def test_a_stream_within_the_cap_is_relayed_whole(
    token: str, capped: HostileUpstream
) -> None:
    capped.reset("slow-sse", size=CAP // 2)
    response = await call(token, "chat", STREAM)
    relayed, ended_by = await read_all(response)
    assert ended_by is None
    assert relayed.endswith(b"data: [DONE]\n\n")
    assert b'"error"' not in relayed


@pytest.mark.timeout(60)
async def test_one_3_mb_line_flows_through_in_linear_time(
    token: str, capped: HostileUpstream
) -> None:
    """An event without its blank line for megabytes: the scrub's scan for the
    event's end was quadratic in what it held (a 160 kB line took minutes of
    the event loop), so one such answer froze every call of the process."""
    size = 3 * 1024 * 1024
    capped.reset("sse-line", size=size)
    with override_settings(CURFEW_UPSTREAM_MAX_ANSWER_BYTES=8 * CAP):
        response = await call(token, "chat", STREAM)
        relayed, ended_by = await read_all(response)
    assert ended_by is None
    assert relayed.count(b"x") == size
    assert relayed.endswith(b"\n\ndata: [DONE]\n\n")


def test_the_usage_scan_holds_at_most_a_bounded_line() -> None:
    """The usage scan kept a partial line whole, however long: 50 MB without a
    newline were 50 MB held (and copied again for every chunk)."""
    scan = UsageScan(sse=True)
    piece = b"x" * CHUNK
    scan.feed(b"data: ")
    for _ in range(50 * 1024 * 1024 // CHUNK):
        scan.feed(piece)
        assert len(scan._lines.rest) <= stream_lines.MAX_LINE + CHUNK
    scan.feed(b'\ndata: {"usage": {"prompt_tokens": 3, "completion_tokens": 4}}\n\n')
    assert scan.tokens == (3, 4)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("door", ["chat", "messages"])
async def test_a_stream_broken_off_mid_event_ends_with_a_readable_error_event(
    token: str, capped: HostileUpstream, door: str
) -> None:
    """The part of an event that had arrived ran into the proxy's error event
    (``data: {"choidata: {"error": ...}``): the client read one broken event,
    not the error. It is dropped now, so the error event stands alone."""
    capped.reset("broken-sse")
    body = {**(MESSAGES if door == "messages" else CHAT), "stream": True}
    relayed, ended_by = await read_all(await call(token, door, body))
    assert ended_by is None
    events = [event for event in relayed.decode().split("\n\n") if event]
    assert events[0] == EVENT.decode().strip()
    data = events[-1].split("data: ", 1)[1]
    assert json.loads(data)["error"]["message"] == "the upstream provider broke off the answer"
    assert len(events) == 2


@pytest.mark.timeout(60)
async def test_a_json_body_broken_off_upstream_is_broken_off_here_too(
    token: str, capped: HostileUpstream
) -> None:
    """It was ended as if it were whole: a clean end of a truncated body."""
    capped.reset("broken-json")
    relayed, ended_by = await read_all(await call(token, "chat", CHAT))
    assert relayed == b'{"id": "cmpl-1", "cho'
    assert ended_by is not None, "a truncated JSON body was ended as if it were whole"


@pytest.mark.timeout(60)
async def test_an_error_body_that_trickles_for_ever_is_bounded_in_time(
    token: str, capped: HostileUpstream
) -> None:
    """A byte every tenth of a second never trips the read timeout between
    chunks, and an error body is read whole before it is relayed: the read
    was unbounded. It has the read timeout in all now (one second here)."""
    capped.reset("trickle-error")
    with override_settings(CURFEW_UPSTREAM_TIMEOUT=1):
        response = await call(token, "chat", CHAT)
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "upstream_error"
    assert "HTTP 500" in error["message"]
    assert wait_for(capped.hangups)
