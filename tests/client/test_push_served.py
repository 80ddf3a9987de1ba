"""Push mode against the real served app: an override reaches a caching gateway
within about a second, not ``max_age``.

Each test keeps a control client without push beside the pushed one: the
control still serves its cached (stale) verdict, so the pushed client's fresh
one was the stream's doing, not an expiry. Waiting is a poll with a deadline
well under ``max_age`` (about a minute), never an assertion on speed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from curfew_client import Action, CurfewClient, State, push

from curfew_testkit.server import ServedApp

#: Far under any ``max_age`` the server advises (about 60 s): only a push is this quick.
DEADLINE = 15.0


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class VerdictCounter(httpx.HTTPTransport):
    """Counts requests for verdicts (not the change stream's)."""

    def __init__(self) -> None:
        super().__init__()
        self.verdicts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/verdict"):
            self.verdicts += 1
        return super().handle_request(request)


def eventually(condition: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"not within {deadline}s: {what}"
        time.sleep(0.02)


def api(app: ServedApp, token: str, body: dict[str, str | bool]) -> None:
    response = httpx.post(
        f"{app.base_url}/api/v1/overrides",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module", params=["in-memory", "redis"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApp]:
    """The app with each channel layer: in-memory (the watcher carries other
    processes' writes) and Redis (every process hears every change)."""
    env = {"CURFEW_MANIFEST_STATIC": "0"}
    if request.param == "redis":
        # The session's test Redis: skips without it, fails in CI.
        env["REDIS_URL"] = request.getfixturevalue("redis_url")
    app = ServedApp(Path(tmp_path_factory.mktemp(f"push-{request.param}")), env=env)
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.terminate()
    app.wait_stopped(3)  # open streams would hold a graceful stop for its whole timeout


def winding_clients(app: ServedApp, user: str) -> tuple[str, CurfewClient, CurfewClient]:
    token = app.create_user(user)
    api(app, token, {"debug": "2026-09-29 23:30"})  # winding, by the time machine
    # Generous timeouts: on a busy machine a cold answer may take longer than
    # a gateway's default, and these tests are about freshness, not speed.
    pushed = CurfewClient(app.base_url, token, push=True, timeout=5.0)
    control = CurfewClient(app.base_url, token, timeout=5.0)
    assert pushed.feed is not None
    eventually(lambda: pushed.cache.pushed, "the change stream is live")
    for client in (pushed, control):
        warm = client.verdict(session_id="s", max_tokens=4096)
        assert (warm.state, warm.action, warm.max_tokens) == (State.WINDING, Action.CLAMP, 1824)
        assert warm.max_age is not None
        assert warm.max_age > DEADLINE
    return token, pushed, control


def test_an_override_through_the_api_reaches_a_pushed_gateway(served: ServedApp) -> None:
    token, pushed, control = winding_clients(served, "push-api")
    stale = control.verdict(session_id="s", max_tokens=4096)
    try:
        api(served, token, {"off": True})
        eventually(
            lambda: pushed.verdict(session_id="s", max_tokens=4096).short_circuit,
            "the pushed gateway short-circuits",
        )
        off = pushed.verdict(session_id="s", max_tokens=4096)
        assert off.override == "off"
        assert off.origin == "server"
        # The control group: no push, so its cached verdict stands until max_age.
        assert control.verdict(session_id="s", max_tokens=4096) is stale
        assert not stale.short_circuit
    finally:
        pushed.close()
        control.close()


def test_curfew_off_from_another_process_reaches_a_pushed_gateway(served: ServedApp) -> None:
    """``manage.py curfew off`` commits in its own process: with the in-memory
    layer only the watcher can tell this server's streams."""
    _, pushed, control = winding_clients(served, "push-cli")
    stale = control.verdict(session_id="s")
    try:
        done = served.manage("curfew", "off", "--user", "push-cli")
        assert "lights-out" in done.stdout or "off-duty" in done.stdout, done.stdout
        eventually(lambda: pushed.verdict(session_id="s").short_circuit, "the gateway hears it")
        assert control.verdict(session_id="s") is stale
        assert not stale.short_circuit
    finally:
        pushed.close()
        control.close()


def _lines(app: ServedApp, token: str, out: list[str], status: list[int]) -> None:
    with httpx.stream(
        "GET",
        f"{app.base_url}/api/v1/changes",
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(60, connect=5),
    ) as response:
        status.append(response.status_code)
        out.append(response.headers["content-type"])
        for line in response.iter_lines():
            out.append(line)


def test_a_revoked_token_ends_its_stream_and_is_refused_after(served: ServedApp) -> None:
    token = served.create_user("push-revoked")
    lines: list[str] = []
    status: list[int] = []
    reader = threading.Thread(target=_lines, args=(served, token, lines, status), daemon=True)
    reader.start()
    eventually(lambda: "event: ready" in lines, "the stream is ready")
    assert status == [200]
    assert lines[0].startswith("text/event-stream")
    # Revoked from another process, as an operator would (the watcher or Redis carries it).
    served.manage(
        "shell",
        "-c",
        "from curfew_core.models import ApiToken; from django.utils import timezone; "
        "from curfew_core.services.tokens import token_revoke; "
        "row = ApiToken.objects.get(user__username='push-revoked'); "
        "token_revoke(user=row.user, token_id=row.pk)",
    )
    reader.join(timeout=DEADLINE)
    assert not reader.is_alive(), "the stream did not end"
    assert "event: end" in lines
    assert "revoked" in lines[lines.index("event: end") + 1]
    again = httpx.get(
        f"{served.base_url}/api/v1/changes",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert again.status_code == 401
    assert again.json()["error"] == "unauthorized"
    assert again.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_stream_answers_errors_in_the_apis_shape(served: ServedApp) -> None:
    missing = httpx.get(f"{served.base_url}/api/v1/changes", timeout=10)
    assert missing.status_code == 401
    assert missing.json() == {"error": "unauthorized", "message": "missing bearer token"}
    token = served.create_user("push-shape")
    wrong = httpx.post(
        f"{served.base_url}/api/v1/changes",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert wrong.status_code == 405
    assert wrong.headers["Allow"] == "GET"
    assert wrong.json()["error"] == "method_not_allowed"


def test_with_the_stream_down_freshness_falls_back_to_max_age(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own server, stopped and started again: the shared one stays up."""
    # Reconnect at least every second: the server is down for a few seconds
    # and the default backoff would wait up to 16 s more to notice it is back.
    monkeypatch.setattr(push, "LONGEST_RETRY", 1.0)
    app = ServedApp(tmp_path, env={"CURFEW_MANIFEST_STATIC": "0"})
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    token = app.create_user("push-down")
    api(app, token, {"debug": "2026-09-29 23:30"})
    clock, counter = Clock(), VerdictCounter()
    # A generous timeout: a server's first answers after a start are slow, and
    # this test is about freshness, not speed.
    pushed = CurfewClient(
        app.base_url, token, push=True, clock=clock, transport=counter, timeout=10.0
    )
    assert pushed.feed is not None
    try:
        eventually(lambda: pushed.cache.pushed, "the change stream is live")
        first = pushed.verdict()
        assert first.max_age is not None
        clock.now += first.max_age + 1  # past max_age, before valid_until
        assert pushed.verdict() is first  # the live stream vouches for it
        assert counter.verdicts == 1

        app.terminate()
        app.wait_stopped(3)
        eventually(lambda: not pushed.cache.pushed, "the client noticed the stream is down")
        fallback = pushed.verdict()  # past max_age: asked, and nobody answers
        assert counter.verdicts == 2
        assert fallback.origin == "fail_open"

        app.start()
        eventually(lambda: pushed.cache.pushed, "the stream came back", deadline=60)
        assert pushed.feed.connects == 2
        assert pushed.cache.entries == {}  # dropped once on reconnect: a change may be missed
        clock.now += pushed.cache.retry_interval  # the outage policy's back-off is over
        back = pushed.verdict()
        assert back.origin == "server", back.reason
    finally:
        pushed.close()
        app.terminate()
        app.wait_stopped(3)
