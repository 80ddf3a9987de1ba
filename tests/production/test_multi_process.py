"""Two server processes on one PostgreSQL database and one Redis namespace.

What a user saves or overrides through one process is what the other answers
with at once; an override ends on time in both without anyone writing; a
stopped process finishes its in-flight proxy streams and its capsules move to
the survivor. The test plays the load balancer: it picks A or B per request.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from curfew_testkit.server import ServedApp
from tests.production.conftest import (
    call,
    cut_off_database,
    forget_namespace,
    new_user,
    ok,
    shared_env,
)
from tests.production.slow_upstream import WORDS, SlowUpstream

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

#: A Tuesday 10:00 in Shanghai: peak hours under the default schedule.
PEAK_MOMENT = "2026-09-29 10:00"
ON_DUTY_MOMENT = "2026-09-29 20:00"
PEAK_AT = {"at": "2026-09-29T10:00:00+08:00"}
CLOSE_SERVICE_RESTART = 1012
GRACE_SECONDS = 30


@pytest.fixture(scope="module")
def upstream() -> Iterator[SlowUpstream]:
    slow = SlowUpstream(delay=0.25).start()
    yield slow
    slow.stop()


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_url: str,
    redis_url: str,
    upstream: SlowUpstream,
) -> Iterator[tuple[ServedApp, ServedApp]]:
    env = shared_env(
        postgres_url,
        redis_url,
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY="sk-upstream-test",
        CURFEW_UPSTREAM_TIMEOUT="30",
    )
    workdir = tmp_path_factory.mktemp("pair")
    a = ServedApp(workdir, env=env, graceful_seconds=GRACE_SECONDS)
    b = ServedApp(workdir, env=env, graceful_seconds=GRACE_SECONDS)
    a.manage("migrate", "--no-input", "-v0")
    a.start()
    try:
        b.start()
    except BaseException:
        a.stop()
        raise
    yield a, b
    b.stop()
    a.stop()
    forget_namespace(env)


@pytest.fixture
def tokens(request: pytest.FixtureRequest, pair: tuple[ServedApp, ServedApp]) -> tuple[str, str]:
    """A user of its own for each test: (API token, embed token), living at an
    on-duty evening (time machine) whatever the wall clock says: while winding,
    capsules also push their progress on a timer, and such a tick could be taken
    for the push a test waits for."""
    a, _ = pair
    api, embed = new_user(a, f"prod-{request.node.name[5:40]}")
    ok(a, "POST", "/api/v1/overrides", token=api, body={"debug": ON_DUTY_MOMENT})
    return api, embed


def capsule(app: ServedApp, embed: str) -> ClientConnection:
    return connect(
        f"ws://127.0.0.1:{app.port}/ws/capsule/?token={embed}",
        origin=app.base_url,  # type: ignore[arg-type]
        open_timeout=5,
    )


def message(socket: ClientConnection, timeout: float = 5) -> dict[str, Any]:
    return dict(json.loads(socket.recv(timeout=timeout)))


def reconnect(
    apps: list[ServedApp], embed: str, *, within: float
) -> tuple[ClientConnection, ServedApp]:
    """What a capsule does after a close: try the address again until a process answers
    (here the load balancer's choice is the first one that accepts)."""
    deadline = time.monotonic() + within
    while True:
        for app in apps:
            try:
                return capsule(app, embed), app
            except OSError:
                continue
        if time.monotonic() > deadline:
            raise AssertionError(f"no process took the capsule within {within}s")
        time.sleep(0.1)


# -- cache invalidation across processes ------------------------------------------------


def test_a_schedule_saved_through_one_process_is_the_very_next_verdict_of_the_other(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str]
) -> None:
    a, b = pair
    api, _ = tokens
    # B has served this user: its schedule is cached (shared) and built (B's memory).
    assert ok(b, "POST", "/api/v1/verdict", token=api, body=PEAK_AT)["reply"] == "。"
    version = ok(a, "GET", "/api/v1/schedule", token=api)["version"]
    for reply in ["下班了", "off duty, back at 14:00", "。。"]:
        saved = ok(
            a,
            "PATCH",
            "/api/v1/schedule",
            token=api,
            body={"off_duty_reply": reply, "version": version},
        )
        version = saved["version"]
        # The next request, on the other process, no waiting.
        assert ok(b, "POST", "/api/v1/verdict", token=api, body=PEAK_AT)["reply"] == reply
        assert ok(a, "POST", "/api/v1/verdict", token=api, body=PEAK_AT)["reply"] == reply
    # And the other way round.
    ok(b, "PATCH", "/api/v1/schedule", token=api, body={"timezone": "Europe/Berlin"})
    assert ok(a, "GET", "/api/v1/schedule", token=api)["timezone"] == "Europe/Berlin"


def test_warm_verdicts_need_no_database(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str], postgres_url: str
) -> None:
    a, b = pair
    api, _ = tokens
    for app in pair:  # warm: token and schedule in Redis, schedule built in each process
        assert ok(app, "POST", "/api/v1/verdict", token=api, body=PEAK_AT)["reply"] == "。"
    with cut_off_database(postgres_url):
        # The control: the database really is out of reach for these processes.
        status, body = call(b, "GET", "/readyz")
        assert (status, body["database"]) == (503, "unreachable")
        for _ in range(20):
            for app in (a, b):
                verdict = ok(app, "POST", "/api/v1/verdict", token=api, body=PEAK_AT)
                assert verdict["reply"] == "。"
    assert call(b, "GET", "/readyz")[0] == 200


# -- live capsules across processes -----------------------------------------------------


def test_an_override_through_one_process_is_pushed_to_a_capsule_on_the_other(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str]
) -> None:
    a, b = pair
    api, embed = tokens
    with capsule(b, embed) as on_b:
        assert message(on_b)["forced"] is False
        for command, forced in [({"off": True}, True), ({"auto": True}, False)]:
            started = time.monotonic()
            ok(a, "POST", "/api/v1/overrides", token=api, body=command)
            pushed = message(on_b)
            elapsed = time.monotonic() - started
            assert pushed["forced"] is forced
            # Pushed (a capsule re-reads nothing on its own); the one-second
            # promise is measured by bench/capsule_fanout.py, not on a machine
            # the suite shares with itself.
            assert elapsed < 3.0, f"{command} took {elapsed:.3f}s to reach the other process"


def test_an_overtime_ends_on_time_in_every_process_without_a_write(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str]
) -> None:
    a, b = pair
    api, embed = tokens
    # The time machine at a peak hour: off duty unless overtime says otherwise.
    ok(a, "POST", "/api/v1/overrides", token=api, body={"debug": PEAK_MOMENT})
    assert ok(b, "POST", "/api/v1/verdict", token=api)["reply"] == "。"
    with capsule(b, embed) as on_b:
        assert message(on_b)["override"] is None
        ok(a, "POST", "/api/v1/overrides", token=api, body={"overtime": "2s"})
        assert message(on_b)["override"] == "overtime"
        during = ok(b, "POST", "/api/v1/verdict", token=api)
        assert (during["override"], during["state"], during["action"]) == (
            "overtime",
            "on-duty",
            "pass",
        )
        until = datetime.fromisoformat(during["override_until"])
        # No request, no write: B's capsule hears the end from its own timer.
        ended = message(on_b, timeout=5)
        late = time.time() - until.timestamp()
        assert ended["override"] is None
        assert ended["reply"] == "。"
        # Never early; late by a timer's wake-up on a busy machine, not by a poll.
        assert -0.05 < late < 3.0, f"the capsule on B moved {late:+.3f}s from the expiry"
    for app in (a, b):
        verdict = ok(app, "POST", "/api/v1/verdict", token=api)
        assert (verdict["override"], verdict["reply"]) == (None, "。")


# -- stopping a process ---------------------------------------------------------------


def test_a_stopped_process_hands_its_capsules_to_the_other(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str]
) -> None:
    a, b = pair
    api, embed = tokens
    try:
        with capsule(a, embed) as on_a:
            assert message(on_a)["forced"] is False
            a.terminate()
            with pytest.raises(ConnectionClosed) as closed:
                message(on_a)
        # 1012 "service restart": the capsule's cue to reconnect, not an error.
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == CLOSE_SERVICE_RESTART
        assert_stopped_gracefully(a)
        moved, served_by = reconnect([a, b], embed, within=5)
        with moved:
            assert served_by is b
            assert message(moved)["forced"] is False
            ok(b, "POST", "/api/v1/overrides", token=api, body={"off": True})
            assert message(moved, timeout=1)["forced"] is True
    finally:
        if a.process is not None:
            a.wait_stopped(GRACE_SECONDS + 5)
        a.start()


def assert_stopped_gracefully(app: ServedApp) -> None:
    """Exited on its own after SIGTERM (uvicorn re-raises the signal once drained),
    with nothing cut short by the grace period."""
    code = app.wait_stopped(GRACE_SECONDS + 5)
    assert code in (0, -signal.SIGTERM), code
    log = app.log_path.read_text()
    assert "Finished server process" in log
    assert "timeout graceful shutdown exceeded" not in log


def test_sigterm_mid_stream_finishes_the_stream_while_new_requests_go_to_the_survivor(
    pair: tuple[ServedApp, ServedApp], tokens: tuple[str, str], upstream: SlowUpstream
) -> None:
    a, b = pair
    api, _ = tokens
    # Curfew off for this user: every call is relayed to the (slow) provider.
    ok(a, "PATCH", "/api/v1/schedule", token=api, body={"enabled": False})
    upstream.reset()
    lines: list[str] = []
    outcome: dict[str, Any] = {}
    first_line = threading.Event()

    def stream() -> None:
        try:
            with httpx.stream(
                "POST",
                f"{a.base_url}/v1/chat/completions",
                headers={"Authorization": f"Bearer {api}"},
                json={"model": "slow-model", "stream": True, "messages": [{"role": "user"}]},
                timeout=30,
            ) as response:
                outcome["status"] = response.status_code
                outcome["action"] = response.headers.get("X-Curfew-Action")
                for line in response.iter_lines():
                    if line:
                        lines.append(line)
                        first_line.set()
        except Exception as exc:  # reported below, in the test's thread
            outcome["error"] = exc
        finally:
            first_line.set()

    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    try:
        assert first_line.wait(10), "the stream never started"
        assert "error" not in outcome, outcome
        a.terminate()
        received_at_signal = len(lines)
        # A stops taking connections at once ...
        deadline = time.monotonic() + 3
        while True:
            try:
                httpx.get(f"{a.base_url}/healthz", timeout=1)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                # Refused, or (in the instant the listener closes) accepted and
                # dropped unanswered: either way A serves no new request.
                break
            assert time.monotonic() < deadline, "A still accepts new connections"
            time.sleep(0.05)
        # ... so the load balancer's next pick is B, which answers.
        assert ok(b, "POST", "/api/v1/verdict", token=api)["action"] == "pass"
        assert a.process is not None
        assert a.process.poll() is None, "A quit mid-stream"
        reader.join(GRACE_SECONDS)
        assert_stopped_gracefully(a)
    finally:
        if a.process is not None:
            a.wait_stopped(GRACE_SECONDS + 5)
        a.start()
    assert not reader.is_alive()
    assert "error" not in outcome, outcome
    assert (outcome["status"], outcome["action"]) == (200, "pass")
    events = [line.removeprefix("data: ") for line in lines]
    assert received_at_signal < len(events), "the stream was over before the signal"
    assert events[-1] == "[DONE]"
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in events[:-1])
    assert text == "".join(WORDS)
    assert upstream.finished.is_set()
    assert not upstream.aborted.is_set()
