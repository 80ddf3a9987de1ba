"""Test settings: the real settings with a throwaway key and fast hashing."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
# The test client speaks plain HTTP; production's HTTPS redirect would 301 every request.
os.environ.setdefault("CURFEW_HTTPS", "0")
# No collectstatic runs for the test client; the served-app tests check the manifest.
os.environ.setdefault("CURFEW_MANIFEST_STATIC", "0")

from curfew_site.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Whitenoise warns on every request when the collectstatic folder is missing;
# tests serve through the finders instead.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
WHITENOISE_USE_FINDERS = True
