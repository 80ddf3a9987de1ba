"""SIGTERM to ``bin/serve`` while its workers relay streams (issue 41).

Two workers (uvicorn's supervisor), six streaming calls through the three
streaming doors (chat completions, Responses, Anthropic messages) to a slow
provider, then SIGTERM: every stream is drained (all its events, to the
last), new connections are refused at once (not accepted and left
unanswered: uvicorn's supervisor held the listening socket open until its
workers had drained, ``curfew_site.serve.DrainingMultiprocess``), and the
process exits within its grace period. A stream longer than the grace period
is broken off (the client sees an incomplete body, never a complete-looking
one) and the process still exits on time.

SQLite, ``bin/serve run`` (the release already prepared: static files are
not what this is about).
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from curfew_testkit.server import ServedApp
from tests.production.slow_upstream import WORDS, SlowUpstream

#: The events of one slow stream (role, the words, stop, [DONE]).
EVENTS = len(WORDS) + 3


class RunOnly(ServedApp):
    """``bin/serve run``: the workers only (migrated by the test)."""

    def command(self) -> list[str]:
        return [str(self.root / "bin" / "serve"), "run"]

    def seed_static(self) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[SlowUpstream]:
    slow = SlowUpstream().start()
    yield slow
    slow.stop()


def serve(workdir: Path, upstream: SlowUpstream, grace: int) -> tuple[ServedApp, str]:
    app = RunOnly(
        workdir,
        workers=2,
        graceful_seconds=grace,
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": "sk-upstream-sigterm-test",
            "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": f"{upstream.base_url}/anthropic",
            "CURFEW_ANTHROPIC_UPSTREAM_API_KEY": "sk-ant-sigterm-test",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("sigterm-ada")
    try:
        app.start()
        # No curfew for this user: every call is relayed to the slow provider.
        headers = {"Authorization": f"Bearer {token}", **app.client_headers}
        done = httpx.patch(
            f"{app.base_url}/api/v1/schedule", json={"enabled": False}, headers=headers, timeout=10
        )
        assert done.status_code == 200, done.text
    except BaseException:
        app.stop()  # never left running (alive but not ready, or refusing)
        raise
    return app, token


class Streams:
    """Six streaming calls, each in its thread, their lines as they come."""

    def __init__(self, app: ServedApp, token: str) -> None:
        bearer = {"Authorization": f"Bearer {token}", **app.client_headers}
        key = {"x-api-key": token, **app.client_headers}
        chat = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        doors: list[tuple[str, dict[str, Any], dict[str, str]]] = [
            ("/v1/chat/completions", chat, bearer),
            ("/v1/responses", {"model": "m", "stream": True, "input": "hi"}, bearer),
            ("/v1/messages", {**chat, "max_tokens": 10}, key),
        ] * 2
        self.lines: list[list[str]] = [[] for _ in doors]
        self.errors: list[BaseException | None] = [None] * len(doors)
        self.threads = [
            threading.Thread(target=self._read, args=(i, app.base_url + path, body, headers))
            for i, (path, body, headers) in enumerate(doors)
        ]
        for thread in self.threads:
            thread.start()

    def _read(self, i: int, url: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        try:
            with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line:
                        self.lines[i].append(line)
        except BaseException as exc:  # reported in the test's thread
            self.errors[i] = exc

    def wait_started(self) -> None:
        deadline = time.monotonic() + 15
        while not all(self.lines):
            assert time.monotonic() < deadline, "the streams never started"
            assert not any(self.errors), self.errors
            time.sleep(0.02)

    def join(self, seconds: float) -> None:
        for thread in self.threads:
            thread.join(seconds)
            assert not thread.is_alive()


def new_connection(port: int) -> str:
    """What a new client meets: ``refused``, ``answered``, or ``hung`` (accepted
    by the kernel, and no answer within a second)."""
    with socket.socket() as sock:
        sock.settimeout(1)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return "answered" if sock.recv(64) else "refused"
        except TimeoutError:
            return "hung"
        except OSError:
            return "refused"


def test_sigterm_drains_every_stream_and_refuses_new_connections(
    tmp_path: Path, upstream: SlowUpstream
) -> None:
    grace = 10
    app, token = serve(tmp_path, upstream, grace)
    try:
        streams = Streams(app, token)
        streams.wait_started()
        at_signal = [len(lines) for lines in streams.lines]
        signalled = time.monotonic()
        app.terminate()
        # The supervisor passes the signal on within half a second.
        time.sleep(1)
        met = [new_connection(app.port) for _ in range(3)]
        assert app.process is not None
        assert app.process.poll() is None, "the server quit mid-stream"
        assert met == ["refused"] * 3, met
        streams.join(grace)
        code = app.wait_stopped(grace + 5)
        took = time.monotonic() - signalled
    finally:
        app.stop()
    assert code in (0, -signal.SIGTERM), code
    assert took < grace
    assert streams.errors == [None] * 6, streams.errors
    for before, lines in zip(at_signal, streams.lines, strict=True):
        assert before < len(lines) == EVENTS, (before, lines[-2:])
        assert lines[-1] == "data: [DONE]"
    log = app.log_path.read_text()
    assert "timeout graceful shutdown exceeded" not in log
    assert "sk-upstream-sigterm-test" not in log


def test_a_stream_longer_than_the_grace_is_broken_off_and_the_server_still_stops(
    tmp_path: Path, upstream: SlowUpstream
) -> None:
    grace = 2
    upstream.delay = 1.0  # about 15 s a stream
    app, token = serve(tmp_path, upstream, grace)
    try:
        streams = Streams(app, token)
        streams.wait_started()
        signalled = time.monotonic()
        app.terminate()
        code = app.wait_stopped(grace + 5)
        took = time.monotonic() - signalled
        streams.join(5)
    finally:
        app.stop()
    assert code in (0, -signal.SIGTERM), code
    assert took < grace + 2  # the supervisor's half second, the workers' tenth
    assert all(isinstance(e, httpx.RemoteProtocolError) for e in streams.errors), streams.errors
    assert all(lines[-1] != "data: [DONE]" for lines in streams.lines)
    assert "timeout graceful shutdown exceeded" in app.log_path.read_text()
    assert upstream.aborted.wait(5), "the upstream calls were left open"
