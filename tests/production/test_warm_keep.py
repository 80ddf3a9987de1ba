"""The writer keeps what it loaded (issue 40), served on PostgreSQL + Redis: a
verdict that loaded a user cold leaves the rows in its process's layer, so the
next one reads no cache from Redis; another process still hears the change."""

from __future__ import annotations

import time

from curfew_testkit.server import ServedApp
from tests.production.conftest import ok
from tests.production.test_warm_layer import PEAK_AT, PUSH_SECONDS, Monitor, pair

__all__ = ["pair"]  # a fixture, shared

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_the_verdict_after_a_cold_load_reads_no_cache_from_redis(
    pair: tuple[ServedApp, ServedApp], redis_url: str
) -> None:
    a, b = pair
    first = a.create_user("keep-first")  # the process's first verdict subscribes its layer
    ok(a, "POST", "/api/v1/verdict", token=first, body=PEAK_AT)
    time.sleep(0.5)
    token = a.create_user("keep-cold")
    ok(a, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)  # cold: loaded, written
    time.sleep(0.2)  # its own message on the channel has come back by now
    with Monitor(redis_url, a.env["CURFEW_REDIS_PREFIX"]) as seen:
        ok(a, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)
    assert not [command for command in seen.commands if command.startswith("MGET")], seen.commands
    # The other process, which loaded nothing, still hears a change made on A.
    assert ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["reply"] == "。"
    version = ok(a, "GET", "/api/v1/schedule", token=token)["version"]
    body = {"off_duty_reply": "下班了", "version": version}
    ok(b, "PATCH", "/api/v1/schedule", token=token, body=body)
    changed = time.monotonic()
    while ok(a, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["reply"] != "下班了":
        assert time.monotonic() - changed < PUSH_SECONDS, "A kept the rows it had loaded"
        time.sleep(0.02)
