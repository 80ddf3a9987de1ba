"""Reading settings from the environment, with safe defaults and loud errors.

Every read declares what it reads: the helpers take the variable's meaning as
``help`` (one line) and, when the default depends on other settings or on the
machine, ``shown``, the default as a person should read it. Each read records
its declaration in :data:`DECLARED`, from which ``curfew_site.configuration``
writes the configuration reference (``docs/configuration.md``, ``make docs``),
so the reference cannot drift from what the settings read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
Choice = TypeVar("Choice", bound=str)

#: Where a setting is read when no ``read_by`` is given.
SETTINGS = "curfew_site/settings_base.py"


@dataclass(frozen=True)
class Variable:
    """One environment variable as the configuration reference shows it."""

    name: str
    #: What kind of value it takes, in words (``on/off``, ``whole number`` ...).
    kind: str
    #: The default as a person reads it (``unset``, ``on``, ``60``, ...).
    default: str
    #: What it means, one line.
    help: str
    #: What reads it: the settings module, or a script such as ``bin/serve``.
    read_by: str = SETTINGS
    #: The reference's heading it is listed under (see :func:`section`).
    section: str = ""


#: Every variable declared so far, in the order first read.
DECLARED: dict[str, Variable] = {}
_section = ""


def section(title: str) -> None:
    """List the variables read from here on under ``title`` in the reference."""
    global _section
    _section = title


def declare(name: str, *, kind: str, default: str, help: str, read_by: str = SETTINGS) -> Variable:
    """Record a variable (the helpers below call this as they read; a script
    that reads its own, such as ``bin/serve``, is declared by name)."""
    if not help.strip():
        raise ValueError(f"{name} is declared without its meaning (help=...)")
    variable = Variable(name, kind, default, help, read_by, _section if read_by == SETTINGS else "")
    DECLARED[name] = variable
    return variable


def _shown_text(default: str) -> str:
    return f"`{default}`" if default else "unset"


def env_str(name: str, default: str = "", *, help: str, shown: str | None = None) -> str:
    declare(name, kind="text", default=shown or _shown_text(default), help=help)
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False, *, help: str, shown: str | None = None) -> bool:
    declare(name, kind="on/off", default=shown or ("on" if default else "off"), help=help)
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int, *, help: str, shown: str | None = None) -> int:
    declare(name, kind="whole number", default=shown or str(default), help=help)
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number") from None


def env_float(name: str, default: float, *, help: str, shown: str | None = None) -> float:
    declare(name, kind="seconds (> 0)", default=shown or f"{default:g}", help=help)
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


def env_list(name: str, default: list[str], *, help: str, shown: str | None = None) -> list[str]:
    listed = ", ".join(f"`{item}`" for item in default) or "empty"
    declare(name, kind="comma-separated list", default=shown or listed, help=help)
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str, *, help: str, shown: str | None = None) -> list[str]:
    """Comma-separated IP addresses or networks (``10.0.0.0/8``), checked at
    start-up: a typo would otherwise silently trust no one (or the wrong one)."""
    import ipaddress

    declare(name, kind="comma-separated addresses or networks", default=shown or "empty", help=help)
    raw = os.environ.get(name, "")
    networks: list[str] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/8)"
            ) from None
    return networks


def env_rate(name: str, default: str, *, help: str, shown: str | None = None) -> str:
    """A rate limit such as ``10/15minutes`` or ``6000 per minute``; ``off`` (or
    empty) turns that limit off and reads as ``""``. Checked at start-up, so a
    typo fails loudly instead of silently not throttling."""
    from limits import parse  # the library that enforces the rate parses it too

    declare(name, kind="rate, or `off`", default=shown or _shown_text(default), help=help)
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


def env_choice(
    name: str, choices: tuple[Choice, ...], *, help: str, shown: str | None = None
) -> Choice | None:
    """One of ``choices`` (typed as they are), or ``None`` when unset or empty.
    Checked at start-up, so a typo fails loudly instead of silently falling back."""
    kind = "one of " + ", ".join(f"`{choice}`" for choice in choices)
    declare(name, kind=kind, default=shown or "unset", help=help)
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    for choice in choices:
        if raw == choice:
            return choice
    allowed = ", ".join(choices)
    raise ImproperlyConfigured(f"{name}={raw!r} is not one of {allowed} (or unset)")
