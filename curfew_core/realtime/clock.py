"""The capsule's clock, one module-level callable so tests can move time.

Consumers and the polling endpoint call ``clock.now()`` through the module (never
``from ... import now``), so patching ``curfew_core.realtime.clock.now`` drives a
boundary in a test without sleeping until it.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    return timezone.now()
