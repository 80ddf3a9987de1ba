"""Where the server is and the token to ask it with.

``CURFEW_URL`` and ``CURFEW_TOKEN`` win; otherwise what ``curfew login URL``
stored in ``$XDG_CONFIG_HOME/curfew/`` (``url``, and ``token`` with mode 600).
``CURFEW_POLICY`` picks what an outage does (``fail_open``, the default, or
``fail_closed``), as the gateway client's ``policy`` does.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

HookPolicy = Literal["fail_open", "fail_closed"]
HOOK_POLICIES: tuple[HookPolicy, ...] = ("fail_open", "fail_closed")


class ConfigError(Exception):
    """The command cannot ask: no server or no token, or a policy it does not know."""


@dataclass(frozen=True, slots=True)
class Settings:
    url: str
    token: str
    policy: HookPolicy = "fail_open"

    @property
    def api(self) -> str:
        """The API root (``/api/v1``), from the server's root URL (it may already end so)."""
        root = self.url.rstrip("/")
        return root if root.endswith("/api/v1") else root + "/api/v1"

    @property
    def identity(self) -> str:
        """Which server and token a cached answer belongs to (a hash: no secret on disk)."""
        return hashlib.sha256(f"{self.url}\n{self.token}".encode()).hexdigest()[:24]


def _home(env: Mapping[str, str], variable: str, fallback: str) -> Path:
    value = env.get(variable)
    base = Path(value) if value else Path(env.get("HOME") or Path.home()) / fallback
    return base / "curfew"


def config_dir(env: Mapping[str, str]) -> Path:
    return _home(env, "XDG_CONFIG_HOME", ".config")


def cache_dir(env: Mapping[str, str]) -> Path:
    return _home(env, "XDG_CACHE_HOME", ".cache")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def load(env: Mapping[str, str]) -> Settings:
    """The settings from ``env`` and the stored login (``ConfigError`` when incomplete)."""
    folder = config_dir(env)
    url = env.get("CURFEW_URL") or _read(folder / "url")
    token = env.get("CURFEW_TOKEN") or _read(folder / "token")
    if not url or not token:
        missing = "CURFEW_URL" if not url else "CURFEW_TOKEN"
        raise ConfigError(f"Curfew is not set up ({missing}): run `curfew login URL`")
    asked = env.get("CURFEW_POLICY") or "fail_open"
    policy = next((known for known in HOOK_POLICIES if known == asked), None)
    if policy is None:
        raise ConfigError(f"CURFEW_POLICY must be fail_open or fail_closed, not {asked!r}")
    return Settings(url=url, token=token, policy=policy)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 600, the
    folder 700), also when the file was there before with a wider mode."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, text.encode("utf-8"))
    finally:
        os.close(descriptor)


def store_login(env: Mapping[str, str], url: str, token: str) -> Path:
    """Store the server's address and the token; returns the token's path."""
    folder = config_dir(env)
    write_private(folder / "url", url + "\n")
    token_path = folder / "token"
    write_private(token_path, token + "\n")
    return token_path
