"""Shared fixtures: users and API tokens, a real served app, and the browser.

Outside CI a missing browser or service skips with the reason; with CI=true
(``.ci/run``) it fails instead, so CI can never pass by not testing.

Nothing here imports Django at module level: ``tests/engine`` runs with
``-p no:django`` (``make pytest-engine``) and loads this file too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from curfew_testkit import server
from curfew_testkit.server import ServedApp

if TYPE_CHECKING:
    from django.contrib.auth.models import User

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHROMIUM = os.environ.get("CURFEW_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


#: The Redis the served apps and the Redis tests use (each in its own namespace).
REDIS_URL = os.environ.get("CURFEW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_answers(url: str = REDIS_URL) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def require(condition: bool, reason: str) -> None:
    """Skip when something the test needs is missing; fail instead in CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


#: Modules that start servers, browsers or loads, slowest first, with their
#: rough seconds in a parallel run on this two-core machine (``--durations``,
#: setup, call and teardown summed; measured 2026-12-06, PostgreSQL + Redis):
#: they start first, so the cheap tests fill the other worker meanwhile and no
#: long module is left to run alone at the end. A module missing here only
#: runs in collection order; a stale number only changes the order.
SLOW_MODULES = {
    "tests/client/test_push_served.py": 55,
    "tests/production/test_deploy_settings.py": 45,
    "tests/security/test_authorization_matrix.py": 41,
    "tests/production/test_load.py": 33,
    "tests/production/test_postgres_gone_under_load.py": 32,
    "tests/readme/test_make_run.py": 30,
    "tests/faults/test_served_outages.py": 26,
    "tests/production/test_multi_process.py": 26,
    "tests/litellm/test_litellm_call_id.py": 25,
    "tests/production/test_sigterm_streams.py": 22,
    "tests/litellm/test_litellm_gemini_proxy.py": 20,
    "tests/client/test_push_rename_served.py": 19,
    "tests/litellm/test_vertex_off_duty.py": 18,
    "tests/ledger/test_crash.py": 17,
    "tests/ledger/test_chaos.py": 16,
    "tests/production/test_redis_restart.py": 15,
    "tests/production/test_warm_layer.py": 15,
    "tests/realtime/test_capsule_socket.py": 15,
    "tests/ledger/test_served_exit.py": 14,
    "tests/throttle/test_served_forwarded.py": 13,
    "tests/litellm/test_litellm_proxy.py": 13,
    "tests/realtime/test_capsule_redis.py": 13,
    "tests/production/test_token_use_at_stop.py": 13,
    "tests/realtime/test_capsule_watch.py": 13,
    "tests/production/test_redis_gone_under_load.py": 12,
    "tests/realtime/test_capsule_boundary.py": 12,
    # The browser modules (last, see below), slowest first among themselves.
    "tests/browser/test_sections.py": 75,
    "tests/browser/test_settings_errors.py": 48,
    "tests/browser/test_htmx_error_pages.py": 46,
    "tests/browser/test_team_send_failures.py": 41,
    "tests/browser/test_send_failures.py": 38,
    "tests/browser/test_curve_drag.py": 36,
    "tests/browser/test_activity_columns.py": 32,
    "tests/browser/test_capsule.py": 31,
    "tests/browser/test_pretend_live.py": 30,
    "tests/browser/test_settings_page.py": 29,
    "tests/browser/test_activity_ledger.py": 26,
    "tests/browser/test_settings_fit.py": 26,
    "tests/browser/test_night_editor.py": 25,
    "tests/browser/test_page_look.py": 23,
    "tests/browser/test_activity_what_happened.py": 23,
    "tests/browser/test_vocabulary.py": 22,
    "tests/browser/test_team_page.py": 18,
    "tests/browser/test_account_page.py": 18,
    "tests/browser/test_overtime_team_night.py": 17,
    "tests/browser/test_clickjacking.py": 14,
    "tests/browser/test_pretend_countdown.py": 13,
    "tests/browser/test_heads_up.py": 10,
    "tests/browser/test_pretend_box_fits.py": 10,
    "tests/browser/test_one_truth_member.py": 9,
    "tests/browser/test_pretend_banner.py": 9,
    "tests/browser/test_chart_ticks.py": 8,
}


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    """The order of a run.

    Each module runs on one worker (``make test`` runs ``--dist loadfile``):
    a module's own servers, users and fixtures are made once, as in a run in
    one process (``tests/test_suite_grouping.py`` proves it). After every
    other plugin's reordering (pytest's, pytest-django's), the order
    pytest-xdist hands the modules out in: slow modules first
    (``SLOW_MODULES``), the rest in collection order, and browser tests last:
    Playwright's sync API keeps an event loop in the main thread for the
    session, which async tests after it would trip over. In a parallel run a
    worker is sent them only once nothing else is left.
    """
    yield

    def key(item: pytest.Item) -> tuple[bool, int, str]:
        module = _module(item)
        slow = module in SLOW_MODULES  # a slow module's tests stay together
        return (
            item.get_closest_marker("browser") is not None,
            -SLOW_MODULES.get(module, 0),
            module if slow else "",
        )

    items.sort(key=key)


def _clear_cache() -> None:
    """Empty this process's cache. On Redis only our own prefix goes (never
    FLUSHDB, ``SharedRedisCache.clear``): served test servers and the other
    workers keep their namespaces in the same database."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="session", autouse=True)
def _served_setup_once_per_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The served apps' collectstatic, and the migration of a new database,
    run once per run, for every worker: in the run's own temporary folder,
    which pytest-xdist's workers share."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # popen-gwN's parent: this run's, shared by its workers
    server.shared_dir = base / "curfew-served-setup"


def _close_old_connections_outside_test_transactions() -> None:
    """Django's ``close_old_connections``, except for a connection inside a
    test's transaction (``django_db`` without ``transaction=True``)."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


@pytest.fixture(autouse=True)
def _socket_hops_give_back_their_connections(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Channels' test communicators stop ``database_sync_to_async`` from closing
    its thread's connection while a test sends or waits for a message (nearly
    all of a socket test): for Django's ``TestCase``, whose transaction a close
    would end. On PostgreSQL a connection is lent by the process's pool, and a
    read on the event loop's own threads (``thread_sensitive=False``) then kept
    its connection when the test's loop closed and its threads ended: lost to
    the pool for the rest of the run, one or more per socket test, until the
    pool's 40 were gone and every read waited 5 s and failed (capsule sockets
    timing out, the change stream's 503s). Here the hop closes its connection
    as in production, except one inside a test's transaction."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    from channels.testing import application

    # What ``send_input`` and ``receive_output`` patch ``close_old_connections``
    # with (looked up at each call).
    monkeypatch.setattr(application, "no_op", _close_old_connections_outside_test_transactions)


@pytest.fixture(autouse=True)
def _fresh_cache(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts with empty caches (schedules and tokens are cached)."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield  # the engine suite without Django: no caches to empty
        return
    from curfew_core import throttle
    from curfew_core.selectors import bundles, tokens, users
    from curfew_core.services import ledger_recorder as recorder
    from curfew_core.store import cache_policy, local_layer

    _clear_cache()
    local_layer.reset()  # the process's layer in front of Redis
    # Keys an earlier test's refused pushes left for a retry are that test's.
    with cache_policy._unforgotten_lock:
        cache_policy._unforgotten.clear()
    bundles._built.clear()
    # Ids come again after a rollback: no team built for a test before this one.
    bundles._teams_built.clear()
    tokens.forget_seen()
    users.forget_names()  # ids come again after a rollback
    throttle.reset()  # failed-token and sign-in counts too
    recorder.discard()  # no test flushes another's decisions
    yield
    # A request activates its language in this thread and leaves it there:
    # the next test on this worker must start in the settings' language.
    from django.utils import translation

    translation.deactivate()
    _clear_cache()
    local_layer.reset()
    bundles._built.clear()
    bundles._teams_built.clear()
    throttle.reset()
    recorder.discard()  # nor does the flusher write this test's after it


class ApiClient:
    """Django's test client with a bearer token and JSON helpers."""

    def __init__(self, user: User, token: str) -> None:
        self.user = user
        self.token = token
        from curfew_testkit.asgi_client import Client

        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def get(self, path: str, **extra: Any) -> Any:
        return self.client.get(path, **extra)

    def post(self, path: str, data: Any = None, *, raw: str | bytes | None = None) -> Any:
        import json

        body = raw if raw is not None else json.dumps(data if data is not None else {})
        return self.client.post(path, body, content_type="application/json")

    def patch(self, path: str, data: Any = None, *, raw: str | bytes | None = None) -> Any:
        import json

        body = raw if raw is not None else json.dumps(data)
        return self.client.patch(path, body, content_type="application/json")


@pytest.fixture
def client() -> Any:
    """pytest-django's ``client``, with the edge's routes driven through the edge."""
    from curfew_testkit.asgi_client import Client

    return Client()


@pytest.fixture
def async_client() -> Any:
    """pytest-django's ``async_client``, with the edge's routes driven through the edge."""
    from curfew_testkit.asgi_client import AsyncClient

    return AsyncClient()


@pytest.fixture
def user(db: None) -> User:
    from django.contrib.auth.models import User

    return User.objects.create_user("ada", password="correct horse battery")


@pytest.fixture
def other_user(db: None) -> User:
    from django.contrib.auth.models import User

    return User.objects.create_user("grace", password="correct horse battery")


@pytest.fixture
def api(user: User) -> ApiClient:
    from curfew_core.services.tokens import token_create

    _, raw = token_create(user=user, name="test")
    return ApiClient(user, raw)


@pytest.fixture
def other_api(other_user: User) -> ApiClient:
    from curfew_core.services.tokens import token_create

    _, raw = token_create(user=other_user, name="test")
    return ApiClient(other_user, raw)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The test Redis (``CURFEW_TEST_REDIS_URL``): skips without it, fails in CI."""
    require(redis_answers(), f"no Redis answering at {REDIS_URL} (CURFEW_TEST_REDIS_URL)")
    return REDIS_URL


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = shutil.which(CHROMIUM) or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    require(found is not None, f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    """One headless Chromium for the session (Debian's, driven by Playwright)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def served_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """The real app in its own ASGI server process, on its own SQLite file.

    Production-like: debug off, collectstatic's hashed and compressed files
    served by whitenoise. Tests reach it only as a client would.
    """
    # A stop waits at most 2 s for what is still open (a page's socket, a
    # capsule's): the session's last stop waited out 10 s and a kill.
    app = ServedApp(tmp_path_factory.mktemp("served"), graceful_seconds=2)
    app.prepare()
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="session")
def artifacts_dir() -> str:
    """Where browser tests save screenshots (kept as CI artifacts)."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "test-artifacts")
    os.makedirs(path, exist_ok=True)
    return path
