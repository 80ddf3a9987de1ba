"""Redis going away under load, in production mode (issue 23, "not yet tried").

``bin/serve`` (two workers, PostgreSQL, Redis) answers a steady stream of
verdicts from 16 clients while Redis is cut off for two seconds and then comes
back: every connection to it closed, and new ones refused (a switchboard
between the app and the real Redis, ``tests/production/switchboard.py``). What must hold:

- every answer is in the verdict door's own shape: a complete verdict, or a
  JSON 503 with ``Retry-After`` while Redis is gone; never a 500, never HTML,
  never a dropped connection;
- a schedule save tried while Redis is gone is answered either way in shape:
  a 200 is committed and no cache hides it once Redis is back, a 503
  changed nothing;
- verdicts are answered again by themselves within seconds of Redis' return.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from curfew_testkit.loadgen import is_verdict
from curfew_testkit.server import ServedApp
from tests.production.conftest import forget_namespace, new_user, shared_env
from tests.production.switchboard import Switchboard

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

CLIENTS = 16


@pytest.fixture
def production(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_board: Switchboard
) -> Iterator[ServedApp]:
    env = shared_env(postgres_url, redis_board.through, CURFEW_TOKEN_RATE="off")
    app = ServedApp(tmp_path_factory.mktemp("redis-gone"), env=env, workers=2)
    app.start()
    yield app
    app.stop()
    forget_namespace({**env, "REDIS_URL": redis_board.url})


def test_redis_gone_under_load_answers_in_shape_and_recovers_by_itself(
    production: ServedApp, redis_board: Switchboard
) -> None:
    token, _ = new_user(production, "under-load")
    headers = {"Authorization": f"Bearer {token}", **production.client_headers}
    url = f"{production.base_url}/api/v1/verdict"
    answers: Counter[str] = Counter()
    wrong: list[str] = []
    stop = threading.Event()

    def client() -> None:
        with httpx.Client(timeout=15, headers=headers) as http:
            while not stop.is_set():
                try:
                    response = http.post(url, json={"max_tokens": 4096})
                except httpx.HTTPError as exc:
                    wrong.append(f"{type(exc).__name__}: {exc}")
                    continue
                kind = response.headers.get("content-type", "")
                if response.status_code == 200 and is_verdict(response.content):
                    answers["verdict"] += 1
                elif (
                    response.status_code == 503
                    and kind.startswith("application/json")
                    and response.headers.get("retry-after", "").isdigit()
                    and response.json().get("error") == "unavailable"
                ):
                    answers["503"] += 1
                else:
                    wrong.append(f"HTTP {response.status_code} {kind}: {response.text[:200]}")

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(2)
    before = answers["verdict"]
    assert before > 0, wrong[:5]

    redis_board.cut()
    time.sleep(1)
    saved = httpx.patch(
        f"{production.base_url}/api/v1/schedule",
        json={"off_duty_reply": "saved while Redis was gone"},
        headers=headers,
        timeout=15,
    )
    time.sleep(1)
    redis_board.restore()
    back = time.monotonic()
    recovered: float | None = None
    while time.monotonic() - back < 15:
        count = answers["verdict"]
        time.sleep(0.5)
        if answers["verdict"] - count >= 5:
            recovered = time.monotonic() - back
            break
    stop.set()
    for thread in threads:
        thread.join(20)

    assert wrong == [], wrong[:5]
    assert answers["503"] > 0, "control: Redis' absence was felt"
    assert recovered is not None, f"no verdicts after Redis came back: {dict(answers)}"
    assert saved.status_code in (200, 503), saved.text
    expected = "saved while Redis was gone" if saved.status_code == 200 else "。"
    schedule = httpx.get(f"{production.base_url}/api/v1/schedule", headers=headers, timeout=15)
    assert schedule.status_code == 200, schedule.text
    assert schedule.json()["off_duty_reply"] == expected
    print(
        json.dumps(
            {
                "answers": dict(answers),
                "save_during_outage": saved.status_code,
                "recovered_after_s": round(recovered, 2),
            }
        )
    )
