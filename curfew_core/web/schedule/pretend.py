"""The "Pretend it is ..." banner: every signed-in page says so while gateways
are being told another moment (the ``debug`` override), with a way to stop.

A context processor (``curfew_site`` settings, ``TEMPLATES``) hands templates
``pretend``, worked out only when a template looks at it, from the user's
cached bundle: what gateways are told is what the banner says, and a warm
cache (the settings page has just read it for its verdict) costs no query.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import TIME_STRINGS
from django.utils.translation import gettext, ngettext

from curfew_core.engine.clock import to_wall
from curfew_core.selectors.bundles import bundle_for, overrides_active
from curfew_core.web.schedule.story import local_time


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
    #: The real instant the page was drawn at (the countdown's ``now``).
    now: dt.datetime | None = None

    @property
    def until_ms(self) -> int:
        """``until`` in epoch milliseconds: what the page's timer at the
        pretend's end counts to (JavaScript's clock)."""
        return int(self.until.timestamp() * 1000)

    @property
    def countdown_html(self) -> SafeString:
        """The countdown in its own element, which ``page.js`` ticks each
        minute: the server's ``now`` and the end in epoch ms (so a page whose
        clock is off by some minutes still counts the server's time) and the
        words to say it in, in the page's language."""
        now = self.now or self.until
        return format_html(
            '<span id="pretend-countdown" aria-live="off" data-until-ms="{}" '
            'data-now-ms="{}" data-words="{}">{}</span>',
            self.until_ms,
            int(now.timestamp() * 1000),
            json.dumps(countdown_words(), ensure_ascii=False),
            self.countdown,
        )


def _left_minutes(until: dt.datetime, now: dt.datetime) -> int:
    """Whole minutes left, rounded up: a 15-minute pretend just begun has
    15 left (not 14), and its last seconds are "1 minute", never "0"."""
    return max(1, math.ceil((until - now).total_seconds() / 60))


def countdown_text(until: dt.datetime, now: dt.datetime) -> str:
    """``3 hours, 42 minutes``: the time left to the minute (Django's own
    words for hours and minutes, in the active language; ``page.js`` says
    the same with ``countdown_words``)."""
    hours, minutes = divmod(_left_minutes(until, now), 60)
    parts = []
    if hours:
        parts.append(TIME_STRINGS["hour"] % {"num": hours})
    if minutes or not hours:
        parts.append(TIME_STRINGS["minute"] % {"num": minutes})
    return gettext(", ").join(parts)


def countdown_words() -> dict[str, Any]:
    """``countdown_text``'s words for the page's script: each unit's singular
    and plural (``%(num)d`` for the number) and the separator."""
    return {
        "hour": [ngettext("%(num)d hour", "%(num)d hours", n) for n in (1, 2)],
        "minute": [ngettext("%(num)d minute", "%(num)d minutes", n) for n in (1, 2)],
        "sep": gettext(", "),
    }


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
        countdown=countdown_text(until, now),
        now=now,
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
