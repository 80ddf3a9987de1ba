"""The verdict API holds 200 concurrent clients for 20 seconds (60 in ``make
soak``: ``CURFEW_LOAD_SECONDS``), with zero errors,
and its throughput is reported beside a trivial Django JSON view's on the same
servers, on the production command (``bin/serve``: two uvicorn workers on one port,
PostgreSQL and Redis). Loopback only, bounded in time.

Throughput and latency are reported (``-s`` prints them; test-artifacts/load.json
keeps them), not asserted: this 2-core machine runs the clients too. What is
asserted is that every single answer is a complete verdict.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from curfew_testkit.loadgen import build_request, is_verdict, load
from curfew_testkit.server import ServedApp
from tests.production.conftest import forget_namespace, new_user, ok, shared_env

pytestmark = [pytest.mark.load, pytest.mark.postgres, pytest.mark.redis]

CLIENTS = int(os.environ.get("CURFEW_LOAD_CLIENTS", "200"))
#: 20 s shows the steady state (pools full, the ledger's flushes in step) and
#: keeps ``make test`` within its 10 minutes; ``make soak`` holds it for 60.
SECONDS = float(os.environ.get("CURFEW_LOAD_SECONDS", "20"))
WORKERS = 2


@pytest.fixture(scope="module")
def production(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_url: str
) -> Iterator[ServedApp]:
    # One token stands in for a whole fleet here: its own rate would cap the test.
    env = shared_env(postgres_url, redis_url, CURFEW_TOKEN_RATE="off")
    app = ServedApp(tmp_path_factory.mktemp("load"), env=env, workers=WORKERS)
    app.start()
    yield app
    app.stop()
    forget_namespace(env)


def worker_pids(app: ServedApp) -> set[int]:
    assert app.process is not None
    pid = app.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    # uvicorn spawns its workers; multiprocessing's resource tracker is a child too.
    return {
        int(child)
        for child in children
        if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
    }


def test_the_verdict_api_holds_200_clients_without_an_error(
    production: ServedApp, artifacts_dir: str
) -> None:
    api, _ = new_user(production, "load")
    workers = worker_pids(production)
    assert len(workers) == WORKERS
    headers = {
        **production.client_headers,
        "Authorization": f"Bearer {api}",
        "Content-Type": "application/json",
    }
    body = b'{"max_tokens": 4096}'
    # Warm both workers (token and schedule into Redis, the built schedule into each).
    for _ in range(20):
        ok(production, "POST", "/api/v1/verdict", token=api, body={"max_tokens": 4096})
    request = build_request(
        "POST", f"{production.base_url}/api/v1/verdict", headers=headers, body=body
    )

    report = load(request, clients=CLIENTS, seconds=SECONDS, check=is_verdict)
    # The baseline on the same servers, same clients (issue 13): a trivial
    # Django JSON view. A third of the time: a rate needs no more.
    trivial = load(
        build_request("GET", f"{production.base_url}/healthz", headers=production.client_headers),
        clients=CLIENTS,
        seconds=max(5.0, SECONDS / 3),
    )

    result = {
        "server": f"bin/serve: uvicorn --workers {WORKERS}, PostgreSQL, Redis",
        "endpoint": "POST /api/v1/verdict",
        **report.as_dict(),
        "trivial_view": {"endpoint": "GET /healthz", **trivial.as_dict()},
    }
    Path(artifacts_dir, "load.json").write_text(json.dumps(result, indent=2) + "\n")
    for label, run in (("verdict", report), ("trivial view", trivial)):
        print(
            f"\nload, {label}: {CLIENTS} clients x {run.seconds:.0f}s on {WORKERS} workers: "
            f"{run.requests} requests, {run.errors} errors, {run.rate:,.0f} req/s, "
            f"p50 {run.percentile(0.5):.1f} ms, p99 {run.percentile(0.99):.1f} ms, "
            f"max {max(run.latencies_ms, default=0):.1f} ms "
            f"(client used {run.client_cpu_seconds:.0f} CPU-s)"
        )
    print(f"verdict / trivial view throughput: {report.rate / max(trivial.rate, 1e-9):.2f}x")
    assert report.errors == 0, report.error_samples
    # Every client was answered again and again (at least every 6 s on average),
    # not only a lucky few.
    assert report.fewest_per_client >= SECONDS / 6, report.as_dict()
    # No worker died and was replaced under the load.
    assert worker_pids(production) == workers
