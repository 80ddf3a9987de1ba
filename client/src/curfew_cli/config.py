"""Where the server is and the token to ask it with.

``CURFEW_URL`` and ``CURFEW_TOKEN`` win; otherwise what ``curfew login URL``
stored in ``$XDG_CONFIG_HOME/curfew/`` (``url``, and ``token`` with mode 600).
``CURFEW_POLICY`` picks what an outage does (``fail_open``, the default, or
``fail_closed``), as the gateway client's ``policy`` does.
"""

from __future__ import annotations

# Only what ``curfew status`` needs on its cached path, and quick to import
# (no dataclasses, pathlib or typing at run time: a status bar starts this often).
import os

TYPE_CHECKING = False  # no ``typing`` at run time: a status bar starts this often
if TYPE_CHECKING:
    from collections.abc import Mapping
    from hashlib import sha256 as sha256
    from typing import Literal

    HookPolicy = Literal["fail_open", "fail_closed"]
else:
    try:  # CPython's own SHA-256, without loading OpenSSL (``hashlib``: about 3 ms)
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12 and later
        except ImportError:
            from hashlib import sha256

HOOK_POLICIES: tuple[HookPolicy, ...] = ("fail_open", "fail_closed")


class ConfigError(Exception):
    """The command cannot ask: no server or no token, or a policy it does not know."""


class BadURL(ConfigError):
    """The server's address is not an ``http://`` or ``https://`` one."""


def checked_url(url: str) -> str:
    """``url`` when it is an ``http://`` or ``https://`` address with a host;
    ``BadURL`` otherwise (``file://``, ``ftp://``, a bare path, a control
    character): refused before anything is asked or stored."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if (
        not sep
        or scheme.lower() not in ("http", "https")
        or not host.rpartition("@")[2]
        or not text.isprintable()
        or " " in text
    ):
        raise BadURL(f"the Curfew server must be an http:// or https:// address, not {text[:80]!r}")
    return text


class Settings:
    """The server's address, the token, and the outage policy (a value)."""

    __slots__ = ("policy", "token", "url")

    def __init__(self, url: str, token: str, policy: HookPolicy = "fail_open") -> None:
        self.url = url
        self.token = token
        self.policy: HookPolicy = policy

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return (self.url, self.token, self.policy) == (other.url, other.token, other.policy)

    def __hash__(self) -> int:
        return hash((self.url, self.token, self.policy))

    def __repr__(self) -> str:  # the token is never shown
        return f"Settings(url={self.url!r}, policy={self.policy!r})"

    @property
    def api(self) -> str:
        """The API root (``/api/v1``), from the server's root URL (it may already end so)."""
        root = self.url.rstrip("/")
        return root if root.endswith("/api/v1") else root + "/api/v1"

    @property
    def identity(self) -> str:
        """Which server and token a cached answer belongs to (a hash: no secret on disk)."""
        return sha256(f"{self.url}\n{self.token}".encode()).hexdigest()[:24]


def _home(env: Mapping[str, str], variable: str, fallback: str) -> str:
    value = env.get(variable)
    base = value or os.path.join(env.get("HOME") or os.path.expanduser("~"), fallback)
    return os.path.join(base, "curfew")


def config_dir(env: Mapping[str, str]) -> str:
    return _home(env, "XDG_CONFIG_HOME", ".config")


def cache_dir(env: Mapping[str, str]) -> str:
    return _home(env, "XDG_CACHE_HOME", ".cache")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


def load(env: Mapping[str, str]) -> Settings:
    """The settings from ``env`` and the stored login (``ConfigError`` when incomplete)."""
    folder = config_dir(env)
    url = env.get("CURFEW_URL") or _read(os.path.join(folder, "url"))
    token = env.get("CURFEW_TOKEN") or _read(os.path.join(folder, "token"))
    if not url or not token:
        missing = "CURFEW_URL" if not url else "CURFEW_TOKEN"
        raise ConfigError(f"Curfew is not set up ({missing}): run `curfew login URL`")
    url = checked_url(url)
    asked = env.get("CURFEW_POLICY") or "fail_open"
    policy = next((known for known in HOOK_POLICIES if known == asked), None)
    if policy is None:
        raise ConfigError(f"CURFEW_POLICY must be fail_open or fail_closed, not {asked!r}")
    return Settings(url=url, token=token, policy=policy)


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 600, the
    folder 700), also when the file was there before with a wider mode or is
    a symbolic link: a new file (made 600 from its first byte) replaces the
    name, so nothing is written through a link to wherever it points."""
    import tempfile

    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".curfew-")
    try:
        try:
            os.fchmod(descriptor, 0o600)
            os.write(descriptor, text.encode("utf-8"))
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def store_login(env: Mapping[str, str], url: str, token: str) -> str:
    """Store the server's address and the token; returns the token's path.
    ``BadURL`` for an address that is not ``http(s)://``: nothing is stored."""
    url = checked_url(url)
    folder = config_dir(env)
    write_private(os.path.join(folder, "url"), url + "\n")
    token_path = os.path.join(folder, "token")
    write_private(token_path, token + "\n")
    return token_path
