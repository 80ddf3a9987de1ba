"""The verdict API under many concurrent clients, on PostgreSQL and Redis, per
ASGI server: the production load test as a benchmark, and the measurement
behind the choice of server.

    python -m bench.load_verdict [--seconds 20] [--clients 200] [--workers 2]
                                 [--servers uvicorn:1,uvicorn:2,gunicorn:2,daphne]

``--workers`` sets the count for every server given without one. Loopback
only; each run is bounded by ``--seconds``. The load generator shares this
machine's cores with the servers: its own CPU use is printed beside each row.
Servers that are not installed (gunicorn, uvicorn-worker) are listed as such.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.servers import RunningServer, ServerSpec, parse_specs
from curfew_testkit.loadgen import LoadReport, build_request, is_verdict, load
from curfew_testkit.server import free_port

ROOT = Path(__file__).resolve().parents[1]

POSTGRES_URL = os.environ.get(
    "CURFEW_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("CURFEW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def services_up() -> str | None:
    import psycopg
    import redis

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except psycopg.Error:
        return f"no PostgreSQL at {POSTGRES_URL}"
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping()
    except (redis.RedisError, OSError):
        return f"no Redis at {REDIS_URL}"
    return None


def admin(statement: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout


#: What each server is asked, one after the other: a raw ASGI hello-world app
#: served the same way (the server's floor, ``curfew_testkit.hello``), the
#: trivial Django JSON view (the baseline), the verdict, and the same without
#: the decision ledger (issue 14: recording must cost no measurable drop); each
#: verdict row is its own start of the server, with these settings.
FLOOR = "raw ASGI hello-world"
ENDPOINTS = {
    "trivial view": {},
    "verdict": {},
    "verdict (no ledger)": {"CURFEW_LEDGER": "0"},
}


def measure(
    spec: ServerSpec, env: dict[str, str], token: str, args: argparse.Namespace, workdir: Path
) -> list[tuple[str, LoadReport]]:
    rows = []
    # As the TLS-terminating proxy in front of production sends it.
    https = {"X-Forwarded-Proto": "https"}
    port = free_port()
    floor = RunningServer(
        spec,
        port=port,
        env=env,
        log_path=workdir / f"{spec.kind}-{port}.log",
        app="curfew_testkit.hello:app",
    )
    try:
        floor.wait_ready()
        hello = build_request("GET", f"{floor.base_url}/", headers=https)
        load(hello, clients=spec.workers * 8, seconds=2)
        rows.append((FLOOR, load(hello, clients=args.clients, seconds=args.seconds)))
    finally:
        floor.stop()
    for index, (endpoint, setup) in enumerate(list(ENDPOINTS.items())[1:]):
        port = free_port()
        server = RunningServer(
            spec,
            port=port,
            env={**env, **setup},
            log_path=workdir / f"{spec.kind}-{port}.log",
        )
        try:
            server.wait_ready()
            verdict = build_request(
                "POST",
                f"{server.base_url}/api/v1/verdict",
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    **https,
                },
                body=b'{"max_tokens": 4096}',
            )
            # Warm every worker's caches and connections before measuring.
            load(verdict, clients=spec.workers * 8, seconds=2, check=is_verdict)
            if index == 0:
                trivial = build_request("GET", f"{server.base_url}/healthz", headers=https)
                rows.append(
                    ("trivial view", load(trivial, clients=args.clients, seconds=args.seconds))
                )
            report = load(verdict, clients=args.clients, seconds=args.seconds, check=is_verdict)
            rows.append((endpoint, report))
        finally:
            server.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--servers", default="uvicorn:1,uvicorn,daphne:1")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--settings",
        default="curfew_site.settings",
        help="Django settings module for the servers (to measure a proposed change)",
    )
    args, _ = parser.parse_known_args()
    specs = [
        spec if ":" in item else ServerSpec(spec.kind, 1 if spec.kind == "daphne" else args.workers)
        for item, spec in zip(args.servers.split(","), parse_specs(args.servers), strict=True)
    ]

    problem = services_up()
    if problem:
        print(f"load_verdict: skipped, {problem} (start them, or set CURFEW_TEST_*_URL)")
        return 0

    name = f"curfew_bench_{secrets.token_hex(6)}"
    admin(f'CREATE DATABASE "{name}"')
    workdir = Path(tempfile.mkdtemp(prefix="curfew-load-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": args.settings,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "CURFEW_DEBUG": "0",
        "CURFEW_BEHIND_PROXY": "1",
        "CURFEW_TRUSTED_PROXIES": "127.0.0.1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}")),
        "REDIS_URL": REDIS_URL,
        "CURFEW_REDIS_PREFIX": name,
        "CURFEW_STATIC_ROOT": str(workdir / "static"),
        "CURFEW_MANIFEST_STATIC": "1",
        # One token stands in for a whole fleet: its own rate would cap the run.
        "CURFEW_TOKEN_RATE": "off",
    }
    env.pop("CURFEW_HTTPS", None)
    rows: list[tuple[ServerSpec, list[tuple[str, LoadReport]] | str]] = []
    try:
        manage(env, "migrate", "--no-input", "-v0")
        script = (
            "from django.contrib.auth.models import User\n"
            "from curfew_core.services.tokens import token_create\n"
            "print(token_create(user=User.objects.create_user('bench'), name='load')[1])\n"
        )
        token = manage(env, "shell", "-c", script).split()[-1]
        print(
            f"POST /api/v1/verdict beside GET /healthz (a trivial Django JSON view), "
            f"{args.clients} concurrent keep-alive clients, "
            f"{args.seconds:.0f}s per server, PostgreSQL + Redis, {os.cpu_count()} cores shared "
            "with the load generator:",
            flush=True,
        )
        for spec in specs:
            why = spec.missing()
            rows.append((spec, why if why else measure(spec, env, token, args, workdir)))
    finally:
        admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    print(
        f"  {'server':<24} {'endpoint':<26} {'req/s':>7} {'x':>6} {'floor':>6} {'p50 ms':>8} "
        f"{'p99 ms':>8} "
        f"{'max ms':>8} {'errors':>7} {'client CPU':>10}"
    )
    print(
        "  (x: throughput against the trivial view on the same server, target: verdict >= 2x; "
        "floor: against the raw ASGI app, issue 21's target: verdict >= 0.33x)"
    )
    for spec, result in rows:
        if isinstance(result, str):
            print(f"  {spec.label:<24} {result}")
            continue
        rates = {endpoint: report.rate for endpoint, report in result}
        trivial_rate, floor_rate = rates["trivial view"], rates[FLOOR]
        for endpoint, report in result:
            share = report.client_cpu_seconds / report.seconds * 100
            print(
                f"  {spec.label:<24} {endpoint:<26} {report.rate:>7,.0f} "
                f"{report.rate / max(trivial_rate, 1e-9):>6.2f} "
                f"{report.rate / max(floor_rate, 1e-9):>6.2f} "
                f"{report.percentile(0.5):>8.1f} {report.percentile(0.99):>8.1f} "
                f"{max(report.latencies_ms, default=0):>8.1f} {report.errors:>7} {share:>9.0f}%"
            )
            if report.errors:
                print(f"    first errors: {report.error_samples[:3]}")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {"server": spec.label, "endpoint": endpoint, **report.as_dict()}
                    for spec, result in rows
                    if not isinstance(result, str)
                    for endpoint, report in result
                ],
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
