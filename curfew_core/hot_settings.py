"""Settings read on every request, at the cost of a dict lookup.

``django.conf.settings.NAME`` runs Python code on every read
(``LazyObject.__getattribute__``, with a failed ``getattr`` inside it): about
5,000 instructions, and a warm verdict read seven settings that way, more
than its cache reads cost. ``setting(NAME)`` keeps each value it read until a
setting changes: ``override_settings`` and pytest-django's ``settings``
fixture send ``setting_changed``, which forgets them all. Settings are not
changed at run time otherwise; read the rare ones as usual.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

_read: dict[str, Any] = {}


def setting(name: str) -> Any:
    """``getattr(settings, name)``, remembered until a setting changes."""
    try:
        return _read[name]
    except KeyError:
        value = _read[name] = getattr(settings, name)
        return value


def _forget(**_: Any) -> None:
    _read.clear()


setting_changed.connect(_forget, dispatch_uid="curfew_core.hot_settings")
