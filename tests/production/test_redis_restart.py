"""A Redis restart costs no request (issue 41, finding 3).

Pooled connections opened before a restart are dead after it; each failed
one request (503 + ``Retry-After``, or a capsule socket closed 1011) while
``/readyz`` already said ``redis: ok``: 20 s after a 0.5 s restart, a burst
of 80 verdicts got 67 × 503. Here ``bin/serve`` (two workers, PostgreSQL,
Redis through a switchboard that closes every connection, as a restart
does) is warmed up with many connections in its pools, Redis "restarts",
and once ``/readyz`` says ok a burst of verdicts, states and schedule reads
from many clients must get no 503 at all.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from curfew_testkit.server import ServedApp
from tests.production.conftest import forget_namespace, new_user, shared_env
from tests.production.switchboard import Switchboard

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

CLIENTS = 16
PATHS = ("/api/v1/verdict", "/api/v1/state", "/api/v1/schedule")


@pytest.fixture
def production(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_url: str,
    redis_board: Switchboard,
) -> Iterator[ServedApp]:
    # A freshness of 1 s: the burst reads Redis, not only what each process keeps.
    env = shared_env(
        postgres_url, redis_board.through, CURFEW_TOKEN_RATE="off", CURFEW_CACHE_FRESH_SECONDS="1"
    )
    app = ServedApp(tmp_path_factory.mktemp("redis-restart"), env=env, workers=2)
    app.start()
    yield app
    app.stop()
    forget_namespace({**env, "REDIS_URL": redis_board.url})


def _burst(app: ServedApp, tokens: list[str], rounds: int) -> Counter[int]:
    """``CLIENTS`` clients at once, each asking every door ``rounds`` times."""
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def client(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}", **app.client_headers}
        with httpx.Client(base_url=app.base_url, headers=headers, timeout=15) as http:
            for _ in range(rounds):
                for path in PATHS:
                    if path.endswith("verdict"):
                        response = http.post(path, json={"max_tokens": 100})
                    else:
                        response = http.get(path)
                    with lock:
                        statuses[response.status_code] += 1

    threads = [
        threading.Thread(target=client, args=(tokens[n % len(tokens)],), daemon=True)
        for n in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


def _ready(app: ServedApp, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(f"{app.base_url}/readyz", headers=app.client_headers, timeout=5)
            if answer.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("/readyz did not come back")


def test_a_redis_restart_costs_no_request_once_ready(
    production: ServedApp, redis_board: Switchboard
) -> None:
    tokens = [new_user(production, f"restart-{n}")[0] for n in range(4)]
    warm = _burst(production, tokens, rounds=10)
    assert set(warm) == {200}, warm  # the control: every door answers, pools full

    redis_board.cut()  # Redis goes down: every connection closed ...
    time.sleep(0.5)
    redis_board.restore()  # ... and it is back, empty of connections
    _ready(production)
    time.sleep(2)  # the burst came well after /readyz said ok

    after = _burst(production, tokens, rounds=5)
    assert after[200] == CLIENTS * 5 * len(PATHS), f"a restart was felt after /readyz: {after}"
