"""The OpenCode plugin (``integrations/opencode/curfew.js``): its own tests
(``curfew.test.mjs``, node's test runner, a fake Curfew server) run in the
client's suite. Skipped without node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "opencode"


def test_the_opencode_plugin_s_own_tests_pass() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        [node, "--test", str(PLUGIN / "curfew.test.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout
