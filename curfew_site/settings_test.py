"""Test settings: the environment-driven base, with explicit overrides.

Nothing here writes to ``os.environ``: a subprocess a test starts gets only
the environment it is given (the served apps set theirs, see curfew_testkit).
``DATABASE_URL`` and ``REDIS_URL`` still choose the engines, as in CI.
"""

from __future__ import annotations

import os

from curfew_site.settings_base import *  # noqa: F403
from curfew_site.settings_base import (
    CACHES,
    CHANNEL_LAYERS,
    REDIS_PREFIX,
    REDIS_URL,
    STATIC_ROOT,
    STORAGES,
)

SECRET_KEY = "test-only-secret-key-not-for-production-use-0123456789"  # noqa: S105 - tests only

# The test client speaks plain HTTP; production's HTTPS redirect would 301 every request.
HTTPS = False
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = False
SECURE_HSTS_PRELOAD = False

# No collectstatic runs for the test client (the served-app tests check the manifest);
# whitenoise would warn on every request without its folder, so it serves through the finders.
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The tests flush the ledger themselves, inside their own transaction (a
# flusher thread could not see a test's rows on PostgreSQL).
CURFEW_LEDGER_FLUSH_SECONDS = 0.0

# A test connection waits at most two minutes for a lock on PostgreSQL: a
# connection a test left inside a transaction (a thread's, say) then fails the
# next test's teardown with a lock timeout, instead of holding its TRUNCATE, and
# the whole run, until CI's budget runs out. pytest-timeout (pyproject.toml)
# does the same for a test that hangs anywhere else.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c lock_timeout=120000"  # noqa: F405

# pytest-xdist runs the suite in several processes, each with its own test
# database (pytest-django's suffix) and, here, its own Redis namespace: one
# worker's cache clearing, groups and user ids never reach another's.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if REDIS_URL and _WORKER:
    REDIS_PREFIX = f"{REDIS_PREFIX}-{_WORKER}"
    CACHES["default"]["KEY_PREFIX"] = REDIS_PREFIX
    CHANNEL_LAYERS["default"]["CONFIG"] = {
        **CHANNEL_LAYERS["default"]["CONFIG"],  # type: ignore[dict-item]
        "prefix": f"{REDIS_PREFIX}:asgi",
    }
