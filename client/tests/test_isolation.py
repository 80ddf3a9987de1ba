"""The client is its own distribution: importable and working with neither
Django nor the server's package anywhere in the process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_the_client_imports_and_works_without_django_or_the_server(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import curfew_client\n"
        "from curfew_client import CurfewClient\n"
        "import curfew_client.openai_shapes, curfew_client.wire\n"
        f"client = CurfewClient('http://127.0.0.1:{_closed_port()}', 't', timeout=0.2)\n"
        "verdict = client.verdict(session_id='s')\n"
        "assert verdict.origin == 'fail_open', verdict\n"
        "loaded = sorted(\n"
        "    m for m in sys.modules\n"
        "    if m.split('.')[0] in ('django', 'curfew_core', 'curfew_site')\n"
        ")\n"
        "assert not loaded, loaded\n"
        "print('ok')\n"
    )
    # Run from an empty directory: nothing of the checkout is importable by accident.
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_no_module_of_the_package_imports_the_server() -> None:
    package = Path(__file__).resolve().parents[1] / "src" / "curfew_client"
    for module in package.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        imports = re.findall(r"^\s*(?:from|import)\s+(\w+)", text, flags=re.MULTILINE)
        assert imports, module.name  # the control: the pattern does find imports
        assert not {"django", "curfew_core", "curfew_site"} & set(imports), module.name
