"""The client against the real app: it speaks the real API, and the server's
``max_age`` advice makes an override reach a caching gateway within a minute."""

from __future__ import annotations

import time

import httpx
from curfew_client import Action, CurfewClient, State

from curfew_testkit.server import ServedApp
from tests.client.test_client import CountingTransport


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_the_client_follows_the_real_server(api_app: ServedApp) -> None:
    token = api_app.create_user("client-grace")

    def override(body: dict[str, str | bool]) -> None:
        response = httpx.post(
            f"{api_app.base_url}/api/v1/overrides",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text

    override({"debug": "2026-09-29 23:30"})
    clock = Clock()
    transport = CountingTransport()
    client = CurfewClient(api_app.base_url, token, clock=clock, transport=transport)

    verdict = client.verdict(session_id="s", max_tokens=4096)
    assert (verdict.state, verdict.action, verdict.max_tokens) == (
        State.WINDING,
        Action.CLAMP,
        1824,
    )
    assert verdict.max_age is not None
    assert 0 < verdict.max_age <= 60
    assert verdict.debug_at is not None
    for _ in range(50):
        assert client.verdict(session_id="s", max_tokens=4096) is verdict
    assert transport.attempts == 1

    override({"debug": "2026-09-30 03:10"})  # lights out now, unpredictably
    assert client.verdict(session_id="s", max_tokens=4096) is verdict  # still fresh
    clock.now += verdict.max_age  # the server's advice runs out
    changed = client.verdict(session_id="s", max_tokens=4096)
    assert transport.attempts == 2
    assert changed.state == State.LIGHTS_OUT
    assert changed.short_circuit
    assert changed.reply == "明天再说。"
    client.close()
