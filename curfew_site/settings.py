"""The served settings (``make run``, ``bin/serve``, ``manage.py``): every value
from the environment (``curfew_site/settings_base.py``), and no start without a
secret key outside debug."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from curfew_site.settings_base import *  # noqa: F403
from curfew_site.settings_base import SECRET_KEY

if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when CURFEW_DEBUG is off (`make run` makes a local one)"
    )
