"""The "Pretend it is ..." banner: every signed-in page says so while gateways
are being told another moment (the ``debug`` override), with a way to stop.

A context processor (``curfew_site`` settings, ``TEMPLATES``) hands templates
``pretend``, worked out only when a template looks at it, from the user's
cached bundle: what gateways are told is what the banner says, and a warm
cache (the settings page has just read it for its verdict) costs no query.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.timesince import timeuntil

from curfew_core.engine.clock import to_wall
from curfew_core.selectors.bundles import bundle_for, overrides_active
from curfew_core.web.story import local_time


@dataclass(frozen=True, slots=True)
class Pretend:
    #: The moment gateways are told it is, on the user's wall clock.
    moment: str
    #: When pretending ends, on the user's wall clock (a date if not today).
    end: str
    #: The real instant it ends.
    until: dt.datetime
    #: How long until then ("42 minutes"), in the active language.
    countdown: str

    @property
    def until_ms(self) -> int:
        """``until`` in epoch milliseconds: what the page's timer at the
        pretend's end counts to (JavaScript's clock)."""
        return int(self.until.timestamp() * 1000)


def active_pretend(user_id: int, now: dt.datetime) -> Pretend | None:
    """The user's pretend in force at the real ``now``, or ``None``."""
    bundle = bundle_for(user_id)
    active = overrides_active(bundle, now)
    moment, until = active["debug_at"], active["debug_until"]
    if moment is None or until is None:
        return None
    schedule = bundle.schedule
    today = to_wall(now, schedule.timezone).date()
    return Pretend(
        moment=to_wall(moment, schedule.timezone).strftime("%Y-%m-%d %H:%M"),
        end=local_time(until, schedule, today=today),
        until=until,
        countdown=timeuntil(until, now),
    )


def pretend_context(request: HttpRequest) -> dict[str, Any]:
    """``pretend``: the signed-in user's ``Pretend``, or falsy. Lazy: a page
    that never shows the banner (or a visitor not signed in) reads nothing."""

    def find() -> Pretend | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        return active_pretend(user.pk, timezone.now())

    return {"pretend": SimpleLazyObject(find)}
