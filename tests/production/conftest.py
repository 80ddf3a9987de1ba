"""Production mode against the real services: a throwaway PostgreSQL database
per test run, a Redis namespace per server pair, and small HTTP helpers.

Without PostgreSQL or Redis these tests skip with the reason; in CI they fail.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from curfew_testkit.server import ServedApp
from tests.conftest import require
from tests.production.switchboard import Switchboard

#: A maintenance database to create and drop the run's own database from.
POSTGRES_URL = os.environ.get(
    "CURFEW_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)


def postgres_answers(url: str = POSTGRES_URL) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin(sql: str, *names: str) -> None:
    """Run one statement on the maintenance database (autocommit: CREATE DATABASE)."""
    import psycopg
    from psycopg import sql as pgsql

    query = pgsql.SQL(sql).format(*(pgsql.Identifier(n) for n in names))
    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(query)


@contextmanager
def cut_off_database(url: str) -> Iterator[None]:
    """No new connection to the database at ``url`` and its open ones ended, for a while."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    admin("ALTER DATABASE {} ALLOW_CONNECTIONS false", name)
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        yield
    finally:
        admin("ALTER DATABASE {} ALLOW_CONNECTIONS true", name)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test run, dropped at its end."""
    require(
        postgres_answers(), f"no PostgreSQL answering at {POSTGRES_URL} (CURFEW_TEST_POSTGRES_URL)"
    )
    name = f"curfew_test_{secrets.token_hex(6)}"
    admin("CREATE DATABASE {}", name)
    try:
        yield with_database(POSTGRES_URL, name)
    finally:
        admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", name)


@pytest.fixture
def postgres_board(postgres_url: str) -> Iterator[Switchboard]:
    """The run's database behind a switchboard (``switchboard.py``): serve
    ``postgres_board.through``, then cut, stall and restore it."""
    board = Switchboard(postgres_url)
    yield board
    board.cut()


@pytest.fixture
def redis_board(redis_url: str) -> Iterator[Switchboard]:
    """Redis behind a switchboard, as ``postgres_board``."""
    board = Switchboard(redis_url)
    yield board
    board.cut()


def shared_env(postgres_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    """What every process of one deployment shares: one database, one Redis namespace."""
    return {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
        "CURFEW_REDIS_PREFIX": f"curfew-prod-test-{secrets.token_hex(6)}",
        # Static files are not what these tests are about (collectstatic takes 15 s).
        "CURFEW_MANIFEST_STATIC": "0",
        **extra,
    }


def new_user(app: ServedApp, username: str) -> tuple[str, str]:
    """A user with an API token and an embed token, in one management command."""
    script = (
        "from django.contrib.auth.models import User\n"
        "from curfew_core.services.tokens import token_create\n"
        f"user = User.objects.create_user({username!r})\n"
        "print(token_create(user=user, name='api', kind='api')[1])\n"
        "print(token_create(user=user, name='embed', kind='embed')[1])\n"
    )
    api, embed = app.manage("shell", "-c", script).stdout.split()[-2:]
    return api, embed


def forget_namespace(env: dict[str, str]) -> None:
    """Delete what a deployment left in Redis (its keys expire anyway; this is tidiness)."""
    import redis

    client = redis.Redis.from_url(env["REDIS_URL"], socket_timeout=5)
    keys = list(client.scan_iter(match=f"{env['CURFEW_REDIS_PREFIX']}:*", count=1000))
    if keys:
        client.delete(*keys)


def call(
    app: ServedApp,
    method: str,
    path: str,
    *,
    token: str | None = None,
    body: Any = None,
    timeout: float = 10,
) -> tuple[int, Any]:
    """One request as a client would send it: ``(status, parsed JSON body)``."""
    headers = {"Content-Type": "application/json", **app.client_headers}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        app.base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers=headers,
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def ok(app: ServedApp, method: str, path: str, **kwargs: Any) -> Any:
    status, payload = call(app, method, path, **kwargs)
    assert status == 200, (status, payload)
    return payload
