"""The test settings are a settings module of their own, not an environment trick.

Importing them must leave ``os.environ`` alone (a subprocess started by a test
would otherwise inherit the test key and plain HTTP), and must work where the
served settings refuse to start (no SECRET_KEY, debug off).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import json, os; before = dict(os.environ); "
    "import curfew_site.settings_test as s; "
    "print(json.dumps({'same_env': dict(os.environ) == before, 'key': bool(s.SECRET_KEY), "
    "'redirect': s.SECURE_SSL_REDIRECT, 'debug': s.DEBUG}))"
)


def _clean_env() -> dict[str, str]:
    drop = {"SECRET_KEY", "CURFEW_HTTPS", "CURFEW_MANIFEST_STATIC", "CURFEW_DEBUG"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DJANGO_")}


def test_test_settings_leave_the_environment_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=_clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        '{"same_env": true, "key": true, "redirect": false, "debug": false}'
    )


def test_the_served_settings_still_insist_on_a_key() -> None:
    """Control: the same clean environment is refused by ``curfew_site.settings``."""
    done = subprocess.run(
        [sys.executable, "-c", "import curfew_site.settings"],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "SECRET_KEY must be set" in done.stderr
