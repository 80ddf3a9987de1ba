"""The suite's own sharing across workers holds: each module on one worker.

``make test`` runs ``pytest -n auto`` with the options ``pyproject.toml``
gives (``--dist loadfile``), so each module's servers and module-scoped
fixtures are made once (docs/test-suite.md). Nothing fails when such a
grouping stops working: the tests still pass, each module's servers made
again on the other worker. It did stop once (``--dist loadgroup`` under
pytest 9.2). This runs those very options, with two workers, on two small
modules and reads which worker ran each test.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULE = """
import os, pathlib, time, pytest

@pytest.mark.parametrize("n", range(8))
def test_ran(n):
    time.sleep(0.05)  # long enough that an idle worker would take some
    out = pathlib.Path(os.environ["GROUPING_OUT"])
    with out.open("a") as f:
        f.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def _dist_options() -> list[str]:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    addopts = shlex.split(options["ini_options"]["addopts"])
    kept = []
    for i, word in enumerate(addopts):
        if word.startswith("--dist") or word == "--no-loadscope-reorder":
            kept.append(word)
            if word == "--dist":
                kept.append(addopts[i + 1])
    assert any(word.startswith("--dist") for word in kept), addopts
    return kept


def test_each_module_runs_on_one_worker(tmp_path: Path) -> None:
    for name in ("test_first.py", "test_second.py"):
        (tmp_path / name).write_text(MODULE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "ran.txt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:django",
            *_dist_options(),
            "-q",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env={"GROUPING_OUT": str(out), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran: dict[str, set[str]] = {}
    for line in out.read_text().splitlines():
        module, worker = line.split()
        ran.setdefault(module, set()).add(worker)
    assert sorted(ran) == ["test_first", "test_second"], ran
    assert all(len(workers) == 1 for workers in ran.values()), ran
