"""Reading settings from the environment, with safe defaults and loud errors."""

from __future__ import annotations

import os
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
Choice = TypeVar("Choice", bound=str)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise ImproperlyConfigured(f"{name}={raw!r} must be a positive number of seconds")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_rate(name: str, default: str) -> str:
    """A rate limit such as ``10/15minutes`` or ``6000 per minute``; ``off`` (or
    empty) turns that limit off and reads as ``""``. Checked at start-up, so a
    typo fails loudly instead of silently not throttling."""
    from limits import parse  # the library that enforces the rate parses it too

    raw = os.environ.get(name, default).strip()
    if raw.lower() in {"", "off", "0", "none"}:
        return ""
    try:
        if parse(raw).amount < 1:
            raise ValueError(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a rate (use e.g. 10/15minutes, 6000/minute, or off)"
        ) from None
    return raw


def env_choice(name: str, choices: tuple[Choice, ...]) -> Choice | None:
    """One of ``choices`` (typed as they are), or ``None`` when unset or empty.
    Checked at start-up, so a typo fails loudly instead of silently falling back."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    for choice in choices:
        if raw == choice:
            return choice
    allowed = ", ".join(choices)
    raise ImproperlyConfigured(f"{name}={raw!r} is not one of {allowed} (or unset)")
