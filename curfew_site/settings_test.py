"""Test settings: the environment-driven base, with explicit overrides.

Nothing here writes to ``os.environ``: a subprocess a test starts gets only
the environment it is given (the served apps set theirs, see curfew_testkit).
``DATABASE_URL`` and ``REDIS_URL`` still choose the engines, as in CI.
"""

from __future__ import annotations

from curfew_site.settings_base import *  # noqa: F403
from curfew_site.settings_base import STATIC_ROOT, STORAGES

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
