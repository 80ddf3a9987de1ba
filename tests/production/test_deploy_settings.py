"""Production settings come from the environment, pass Django's deploy check,
and the health endpoints tell a load balancer the truth.

Settings are read once per process, so each case runs in a fresh subprocess
with exactly the environment an operator would set.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ROOT, ServedApp, free_port
from tests.production.conftest import call, forget_namespace, shared_env

#: Everything an operator could set; the tests start from none of it.
OPERATOR_KEYS = {
    "SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "CONN_MAX_AGE",
    "DJANGO_SETTINGS_MODULE",
}

INSPECT = """
import json, django
django.setup()
from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.utils.module_loading import import_string
db = settings.DATABASES["default"]
cache = settings.CACHES["default"]
layer = settings.CHANNEL_LAYERS["default"]
print(json.dumps({
    "debug": settings.DEBUG,
    "db_engine": db["ENGINE"], "db_name": str(db["NAME"]),
    "db_host": db.get("HOST"), "db_port": db.get("PORT"),
    "cache": cache["BACKEND"], "cache_location": cache.get("LOCATION"),
    "cache_is_redis": issubclass(import_string(cache["BACKEND"]), RedisCache),
    "cache_prefix": cache.get("KEY_PREFIX"),
    "layer": layer["BACKEND"], "layer_config": layer.get("CONFIG"),
}, default=str))
"""


def operator_env(tmp_path: Path, **settings: str | None) -> dict[str, str]:
    """A production environment: a long random key, debug unset, a real host name."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in OPERATOR_KEYS and not k.startswith("CURFEW_")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "curfew_site.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "curfew.example.com",
            "CSRF_TRUSTED_ORIGINS": "https://curfew.example.com",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "CURFEW_STATIC_ROOT": str(tmp_path / "static"),
        }
    )
    for key, value in settings.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def production_checkout(tmp_path: Path) -> Path:
    """The code as a server has it: no ``.local/`` (only ``make run`` makes one, and
    manage.py would take its key when SECRET_KEY is unset)."""
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy2(ROOT / "manage.py", root / "manage.py")
    for name in ("curfew_core", "curfew_site", "templates", "locale", "static"):
        (root / name).symlink_to(ROOT / name)
    return root


def inspect(env: dict[str, str]) -> dict[str, Any]:
    done = run(env, "-c", INSPECT)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


# -- the deploy check ------------------------------------------------------------------


def test_the_deploy_check_passes_clean_with_production_settings(tmp_path: Path) -> None:
    done = run(operator_env(tmp_path), "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)" in done.stdout


@pytest.mark.parametrize(
    ("settings", "warning"),
    [
        # The control group: the check is strict, so "clean" above means something.
        ({"CURFEW_HTTPS": "0"}, "security.W008"),  # no HTTPS redirect
        ({"SECRET_KEY": "short-key"}, "security.W009"),
        ({"CURFEW_HSTS_SECONDS": "0"}, "security.W004"),
    ],
)
def test_the_deploy_check_fails_on_each_weakened_setting(
    tmp_path: Path, settings: dict[str, str], warning: str
) -> None:
    env = operator_env(tmp_path, **settings)
    done = run(env, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0
    assert warning in done.stdout + done.stderr


def test_without_a_secret_key_outside_debug_the_process_refuses_to_start(tmp_path: Path) -> None:
    checkout = production_checkout(tmp_path)
    done = run(operator_env(tmp_path, SECRET_KEY=None), "manage.py", "check", cwd=checkout)
    assert done.returncode != 0
    assert "SECRET_KEY must be set" in done.stderr
    assert "Traceback" not in done.stderr  # one line for the operator
    # Debug mode (``make run``) may start without one.
    debug_env = operator_env(tmp_path, SECRET_KEY=None, CURFEW_DEBUG="1")
    debug = run(debug_env, "manage.py", "check", cwd=checkout)
    assert debug.returncode == 0, debug.stderr


def test_an_empty_secret_key_counts_as_missing(tmp_path: Path) -> None:
    checkout = production_checkout(tmp_path)
    done = run(operator_env(tmp_path, SECRET_KEY=""), "manage.py", "check", cwd=checkout)
    assert done.returncode != 0
    assert "SECRET_KEY" in done.stderr


def test_debug_is_off_unless_asked_for(tmp_path: Path) -> None:
    assert inspect(operator_env(tmp_path))["debug"] is False
    assert inspect(operator_env(tmp_path, CURFEW_DEBUG="1"))["debug"] is True


# -- DATABASE_URL and REDIS_URL ---------------------------------------------------------


def test_database_url_selects_postgresql(tmp_path: Path) -> None:
    url = "postgres://curfew:pw@db.internal:6543/curfew_prod"
    seen = inspect(operator_env(tmp_path, DATABASE_URL=url))
    assert seen["db_engine"] == "django.db.backends.postgresql"
    assert (seen["db_name"], seen["db_host"], seen["db_port"]) == (
        "curfew_prod",
        "db.internal",
        6543,
    )
    # Unset: one SQLite file beside the code (``make run``).
    default = inspect(operator_env(tmp_path, DATABASE_URL=None))
    assert default["db_engine"] == "django.db.backends.sqlite3"
    assert default["db_name"] == str(ROOT / "db.sqlite3")


def test_database_url_reaches_the_real_postgresql(tmp_path: Path, postgres_url: str) -> None:
    probe = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "with connection.cursor() as c:\n"
        "    c.execute('SELECT version(), current_database()')\n"
        "    print(connection.vendor, *c.fetchone(), sep='|')\n"
    )
    done = run(operator_env(tmp_path, DATABASE_URL=postgres_url), "-c", probe)
    assert done.returncode == 0, done.stderr
    vendor, version, database = done.stdout.strip().split("|")
    assert vendor == "postgresql"
    assert version.startswith("PostgreSQL ")
    assert database == postgres_url.rsplit("/", 1)[1]


def test_redis_url_switches_the_cache_and_the_channel_layer(tmp_path: Path) -> None:
    url = "redis://cache.internal:6380/2"
    seen = inspect(operator_env(tmp_path, REDIS_URL=url, CURFEW_REDIS_PREFIX="team-a"))
    assert seen["cache_is_redis"] is True  # Django's Redis cache (or a subclass of it)
    assert (seen["cache_location"], seen["cache_prefix"]) == (url, "team-a")
    assert seen["layer"] == "channels_redis.core.RedisChannelLayer"
    assert seen["layer_config"]["hosts"][0]["address"] == url
    assert seen["layer_config"]["prefix"] == "team-a:asgi"
    # Unset: each process keeps its own (one process, ``make run``).
    alone = inspect(operator_env(tmp_path))
    assert alone["cache"] == "django.core.cache.backends.locmem.LocMemCache"
    assert alone["layer"] == "channels.layers.InMemoryChannelLayer"


def test_processes_on_one_redis_share_one_cache(tmp_path: Path, redis_url: str) -> None:
    env = operator_env(tmp_path, REDIS_URL=redis_url, CURFEW_REDIS_PREFIX=secrets.token_hex(8))
    value = secrets.token_hex(8)
    setup = "import django; django.setup(); from django.core.cache import cache; "
    wrote = run(env, "-c", setup + f"cache.set('probe', {value!r}, 60)")
    assert wrote.returncode == 0, wrote.stderr
    read = run(env, "-c", setup + "print(cache.get('probe'))")
    assert read.stdout.strip() == value
    # Another deployment's prefix on the same Redis sees none of it.
    other = {**env, "CURFEW_REDIS_PREFIX": secrets.token_hex(8)}
    assert run(other, "-c", setup + "print(cache.get('probe'))").stdout.strip() == "None"


# -- health endpoints ---------------------------------------------------------------------


def served(workdir: Path, env: dict[str, str], *, migrate: bool) -> ServedApp:
    app = ServedApp(workdir, env={"CURFEW_MANIFEST_STATIC": "0", **env})
    if migrate:
        app.manage("migrate", "--no-input", "-v0")
    app.start()
    return app


@pytest.fixture(scope="module")
def healthy(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_url: str
) -> Iterator[ServedApp]:
    env = shared_env(postgres_url, redis_url)
    app = served(tmp_path_factory.mktemp("healthy"), env, migrate=True)
    yield app
    app.stop()
    forget_namespace(env)


def test_health_and_readiness_with_postgresql_and_redis_up(healthy: ServedApp) -> None:
    assert call(healthy, "GET", "/healthz") == (200, {"status": "ok"})
    assert call(healthy, "GET", "/readyz") == (
        200,
        {"status": "ok", "database": "ok", "redis": "ok"},
    )


def test_readiness_is_503_naming_the_database_when_it_is_unreachable(tmp_path: Path) -> None:
    # Nothing listens on that port: PostgreSQL is "down" for this server.
    dead_db = f"postgres://postgres@127.0.0.1:{free_port()}/curfew"
    app = served(tmp_path, {"DATABASE_URL": dead_db, "REDIS_URL": ""}, migrate=False)
    try:
        started = time.monotonic()
        status, body = call(app, "GET", "/readyz")
        elapsed = time.monotonic() - started
        assert status == 503
        assert body == {"status": "unavailable", "database": "unreachable"}
        assert elapsed < 5, f"a load balancer's probe would time out ({elapsed:.1f}s)"
        # Alive all the same: a liveness probe must not restart a process for its database.
        assert call(app, "GET", "/healthz") == (200, {"status": "ok"})
    finally:
        app.stop()


def test_readiness_is_503_naming_redis_when_it_is_unreachable(tmp_path: Path) -> None:
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    app = served(tmp_path, {"REDIS_URL": dead_redis}, migrate=True)
    try:
        started = time.monotonic()
        status, body = call(app, "GET", "/readyz")
        elapsed = time.monotonic() - started
        assert status == 503
        assert body == {"status": "unavailable", "database": "ok", "redis": "unreachable"}
        assert elapsed < 5, f"a load balancer's probe would time out ({elapsed:.1f}s)"
        assert call(app, "GET", "/healthz") == (200, {"status": "ok"})
    finally:
        app.stop()
